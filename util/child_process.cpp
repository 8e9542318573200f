// Supervised children: fork, tie to the parent, redirect, exec; see child_process.hpp.
//
// Between fork and exec the child calls only async-signal-safe functions (setpgid, prctl, open,
// dup2, execve, write, _exit): the parent may have other threads, whose locks the child inherits
// in whatever state they were. Everything the child needs (argv, envp, paths) is prepared before
// the fork. A close-on-exec pipe tells the parent whether the exec itself worked: it closes
// silently on success and carries the child's errno on failure.
#include "util/child_process.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "util/error.hpp"

extern char** environ;

namespace kforge {
namespace {

std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& env)
{
    std::vector<std::string> out;
    for (char** e = environ; *e; ++e) {
        std::string_view entry(*e);
        bool overridden = false;
        for (const auto& [key, value] : env)
            overridden = overridden || (entry.size() > key.size() && entry.substr(0, key.size()) == key &&
                                        entry[key.size()] == '=');
        if (!overridden)
            out.emplace_back(entry);
    }
    for (const auto& [key, value] : env)
        out.push_back(key + "=" + value);
    return out;
}

std::vector<char*> c_strings(std::vector<std::string>& storage)
{
    std::vector<char*> out;
    for (auto& s : storage)
        out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

std::string child_status_text(int status)
{
    if (WIFEXITED(status))
        return fmt::format("exited with status {}", WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    return fmt::format("ended with wait status {}", status);
}

// In the forked child: open `path` for the given flags onto `target`, or report and leave.
void redirect_or_die(const char* path, int flags, int target, int report_fd)
{
    int fd = ::open(path, flags | O_CLOEXEC, 0644);
    if (fd < 0 || ::dup2(fd, target) < 0) {
        int err = errno;
        (void)!::write(report_fd, &err, sizeof err);
        ::_exit(127);
    }
    if (fd != target)
        ::close(fd);
}

} // namespace

ChildProcess ChildProcess::start(const ChildSpec& spec)
{
    std::vector<std::string> argv_storage{spec.executable};
    argv_storage.insert(argv_storage.end(), spec.args.begin(), spec.args.end());
    std::vector<char*> argv = c_strings(argv_storage);
    std::vector<std::string> env_storage = child_environment(spec.env);
    std::vector<char*> envp = c_strings(env_storage);
    std::string out_path = spec.stdout_path.empty() ? "/dev/null" : spec.stdout_path.string();
    std::string err_path = spec.stderr_path.empty() ? "/dev/null" : spec.stderr_path.string();
    bool same_file = !spec.stdout_path.empty() && spec.stdout_path == spec.stderr_path;

    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0)
        fail_runtime("cannot start {}: cannot create a pipe: {}", spec.executable, std::strerror(errno));
    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) {
        int saved = errno;
        ::close(report[0]);
        ::close(report[1]);
        fail_runtime("cannot start {}: fork failed: {}", spec.executable, std::strerror(saved));
    }
    if (pid == 0) {
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) // the parent died before the prctl: nobody would stop us
            ::_exit(127);
        // Signals the parent ignores or handles must start at their defaults in the program.
        ::signal(SIGINT, SIG_DFL);
        ::signal(SIGTERM, SIG_DFL);
        ::signal(SIGPIPE, SIG_DFL);
        redirect_or_die("/dev/null", O_RDONLY, 0, report[1]);
        redirect_or_die(out_path.c_str(), O_WRONLY | O_CREAT | (same_file ? O_APPEND : O_TRUNC), 1, report[1]);
        if (same_file) {
            if (::dup2(1, 2) < 0)
                ::_exit(127);
        } else {
            redirect_or_die(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 2, report[1]);
        }
        ::execve(argv[0], argv.data(), envp.data());
        int err = errno;
        (void)!::write(report[1], &err, sizeof err);
        ::_exit(127);
    }
    ::close(report[1]);
    ::setpgid(pid, pid); // also here, so the group exists before start() returns whoever runs first
    int err = 0;
    ssize_t n;
    do {
        n = ::read(report[0], &err, sizeof err);
    } while (n < 0 && errno == EINTR);
    ::close(report[0]);
    ChildProcess child;
    child.m_pid = pid;
    if (n == static_cast<ssize_t>(sizeof err)) {
        child.kill();
        fail_runtime("cannot start {}: {}", spec.executable, std::strerror(err));
    }
    return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : m_pid(std::exchange(other.m_pid, -1)), m_ended(other.m_ended), m_exit_code(other.m_exit_code),
      m_exit_description(std::move(other.m_exit_description))
{
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept
{
    if (this != &other) {
        kill();
        m_pid = std::exchange(other.m_pid, -1);
        m_ended = other.m_ended;
        m_exit_code = other.m_exit_code;
        m_exit_description = std::move(other.m_exit_description);
    }
    return *this;
}

ChildProcess::~ChildProcess()
{
    kill();
}

bool ChildProcess::poll()
{
    if (m_pid <= 0 || m_ended)
        return m_ended;
    int status = 0;
    pid_t r;
    do {
        r = ::waitpid(m_pid, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == m_pid || (r < 0 && errno == ECHILD)) {
        m_ended = true;
        m_exit_code = r == m_pid ? (WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) : 128;
        m_exit_description = r == m_pid ? child_status_text(status) : "ended (its status was lost)";
    }
    return m_ended;
}

bool ChildProcess::signal(int signal)
{
    if (!running())
        return false;
    return ::kill(m_pid, signal) == 0;
}

void ChildProcess::kill()
{
    if (m_pid <= 0 || m_ended)
        return;
    ::kill(-m_pid, SIGKILL);
    ::kill(m_pid, SIGKILL);
    int status = 0;
    pid_t r;
    do {
        r = ::waitpid(m_pid, &status, 0);
    } while (r < 0 && errno == EINTR);
    m_ended = true;
    m_exit_code = r == m_pid ? (WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) : 128 + SIGKILL;
    m_exit_description = r == m_pid ? child_status_text(status) : "killed";
}

} // namespace kforge
