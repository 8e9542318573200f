// The keeper: a child subreaper that runs one program and ends its whole tree; see contain.hpp.
//
// The keeper is single-threaded (a fresh exec of this binary that runs nothing else), so it may fork
// the program itself: that is how dispositions of ignored signals reach the program while the keeper
// takes SIGTERM itself (posix_spawn can reset a signal to its default, never set it to ignored).
#include "util/contain.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>


namespace kforge {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int k_stop_signals[] = {SIGTERM, SIGINT, SIGHUP};
// How long the keeper tries to end a tree before it gives up on what will not die (a process stuck
// in the kernel, in uninterruptible sleep, takes its SIGKILL only when it leaves it).
constexpr auto k_end_tree_limit = std::chrono::seconds(5);

// The keeper's children. /proc/self/task/TID/children lists them directly; on a kernel built
// without it, every process's parent is read from /proc/PID/stat.
std::set<pid_t> children_of_self()
{
    std::set<pid_t> out;
    pid_t self = ::getpid();
    std::ifstream listed("/proc/self/task/" + std::to_string(self) + "/children");
    if (listed) {
        pid_t pid = 0;
        while (listed >> pid)
            out.insert(pid);
        return out;
    }
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
        std::string name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos)
            continue;
        std::ifstream stat(entry.path() / "stat");
        std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
        size_t close = text.rfind(')'); // the command name may hold spaces and parentheses
        if (close == std::string::npos)
            continue;
        char state = 0;
        pid_t parent = 0;
        if (std::sscanf(text.c_str() + close + 1, " %c %d", &state, &parent) == 2 && parent == self)
            out.insert(static_cast<pid_t>(std::stoi(name)));
    }
    return out;
}

void reap_finished(pid_t program, int& program_status, bool& program_done)
{
    int status = 0;
    pid_t pid = 0;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0)
        if (pid == program) {
            program_status = status;
            program_done = true;
        }
}

// Kills the keeper's children until none is left: each kill orphans the killed process's own
// children, which the subreaper flag hands to the keeper for the next round.
void end_tree(pid_t program, int& program_status, bool& program_done)
{
    auto give_up = Clock::now() + k_end_tree_limit;
    for (;;) {
        std::set<pid_t> children = children_of_self();
        reap_finished(program, program_status, program_done);
        if (children.empty()) {
            // Nothing listed: make sure with waitpid, which knows every child, zombies included.
            int status = 0;
            pid_t pid = ::waitpid(-1, &status, WNOHANG);
            if (pid < 0 && errno == ECHILD)
                return;
            if (pid == program) {
                program_status = status;
                program_done = true;
            }
        }
        for (pid_t child : children)
            ::kill(child, SIGKILL);
        if (Clock::now() >= give_up) {
            std::fprintf(stderr, "kforge keeper: %zu process(es) of the program's tree would not end within %lld s\n",
                         children.size(), static_cast<long long>(k_end_tree_limit.count()));
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

void close_inherited_descriptors()
{
    std::vector<int> fds;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        int fd = std::atoi(entry.path().filename().c_str());
        if (fd > 2)
            fds.push_back(fd);
    }
    for (int fd : fds)
        ::close(fd);
}

int exit_status_of(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

int run_keeper(int argc, char** argv)
{
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s %s PROGRAM [ARGS...]\n", argv[0], k_keeper_arg);
        return 2;
    }
    // What the parent ignores, the program ignores too; the keeper itself takes the stops, blocked
    // and waited for below.
    bool ignored[std::size(k_stop_signals)] = {};
    sigset_t waited;
    sigemptyset(&waited);
    sigaddset(&waited, SIGCHLD);
    for (size_t i = 0; i < std::size(k_stop_signals); ++i) {
        struct sigaction current {};
        ::sigaction(k_stop_signals[i], nullptr, &current);
        ignored[i] = current.sa_handler == SIG_IGN;
        sigaddset(&waited, k_stop_signals[i]);
    }
    sigset_t before;
    ::sigprocmask(SIG_BLOCK, &waited, &before);
    for (int signal : k_stop_signals)
        ::signal(signal, SIG_DFL); // an ignored signal is dropped even while blocked
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() == 1) // the parent died before the prctl: nobody is left to stop us
        return 1;

    pid_t program = ::fork();
    if (program < 0) {
        std::fprintf(stderr, "kforge keeper: cannot start %s: %s\n", argv[2], std::strerror(errno));
        return 127;
    }
    if (program == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL); // the keeper gone without its clean-up: go too
        for (size_t i = 0; i < std::size(k_stop_signals); ++i)
            if (ignored[i])
                ::signal(k_stop_signals[i], SIG_IGN);
        ::sigprocmask(SIG_SETMASK, &before, nullptr);
        ::execvp(argv[2], argv + 2);
        std::fprintf(stderr, "kforge keeper: cannot run %s: %s\n", argv[2], std::strerror(errno));
        ::_exit(127);
    }
    // The program holds the inherited pipes now; the keeper's copies would only delay the EOF its
    // parent sees when the program dies. stderr stays for the keeper's own messages.
    close_inherited_descriptors();

    int program_status = 0;
    bool program_done = false;
    bool stopped = false;
    while (!program_done && !stopped) {
        timespec tick{0, 200 * 1000 * 1000};
        siginfo_t info{};
        int signal = ::sigtimedwait(&waited, &info, &tick);
        stopped = signal > 0 && signal != SIGCHLD;
        reap_finished(program, program_status, program_done);
    }
    end_tree(program, program_status, program_done);
    return program_done && !stopped ? exit_status_of(program_status) : 128 + SIGTERM;
}

} // namespace

std::vector<std::string> keeper_args(const std::string& executable, const std::vector<std::string>& args)
{
    std::vector<std::string> out{k_keeper_arg, executable};
    out.insert(out.end(), args.begin(), args.end());
    return out;
}

std::optional<int> run_keeper_if_asked(int argc, char** argv)
{
    if (argc < 2 || std::strcmp(argv[1], k_keeper_arg) != 0)
        return std::nullopt;
    return run_keeper(argc, argv);
}

int stop_keeper(pid_t pid, std::chrono::milliseconds grace)
{
    ::kill(pid, SIGTERM);
    auto give_up = Clock::now() + grace;
    int status = 0;
    for (;;) {
        pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid)
            return status;
        if (done < 0 && errno != EINTR)
            return -1;
        if (Clock::now() >= give_up)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return status;
}

} // namespace kforge
