// run_captured(): posix_spawn into a new process group, poll both pipes, kill the group on time.
#include "util/capture.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/interrupt.hpp"

extern char** environ;

namespace kforge {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> merged_environment(const std::vector<std::pair<std::string, std::string>>& env)
{
    std::vector<std::string> out;
    for (char** e = environ; *e; ++e) {
        std::string_view entry(*e);
        bool overridden = false;
        for (const auto& [key, value] : env)
            overridden = overridden || entry.substr(0, key.size() + 1) == key + "=";
        if (!overridden)
            out.emplace_back(entry);
    }
    for (const auto& [key, value] : env)
        out.push_back(key + "=" + value);
    return out;
}

void close_fd(int& fd)
{
    if (fd >= 0)
        ::close(fd);
    fd = -1;
}

} // namespace

std::string find_on_path(const std::string& name)
{
    if (name.find('/') != std::string::npos)
        return ::access(name.c_str(), X_OK) == 0 ? name : "";
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/bin:/bin";
    size_t start = 0;
    while (start <= dirs.size()) {
        size_t end = dirs.find(':', start);
        if (end == std::string::npos)
            end = dirs.size();
        std::string dir = dirs.substr(start, end - start);
        std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
        struct stat info {};
        if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
            return candidate;
        start = end + 1;
    }
    return "";
}

std::string CaptureResult::describe(std::chrono::milliseconds limit) const
{
    if (timed_out)
        return fmt::format("killed after its {:.0f} s limit", limit.count() / 1000.0);
    if (interrupted)
        return "stopped at your request";
    if (exit_code >= 128)
        return fmt::format("killed by signal {} ({})", exit_code - 128, strsignal(exit_code - 128));
    return fmt::format("exited with status {}", exit_code);
}

CaptureResult run_captured(const std::string& executable, const std::vector<std::string>& args,
                           const std::vector<std::pair<std::string, std::string>>& env,
                           std::chrono::milliseconds limit, size_t max_bytes)
{
    std::string exe = find_on_path(executable);
    if (exe.empty())
        fail_runtime("cannot run {}: not found{}", executable,
                     executable.find('/') == std::string::npos ? " on PATH" : " or not executable");
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0)
        fail_runtime("cannot create a pipe: {}", std::strerror(errno));
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
        ::close(out_pipe[0]);
        ::close(out_pipe[1]);
        fail_runtime("cannot create a pipe: {}", std::strerror(errno));
    }
    std::vector<std::string> argv_storage{exe};
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_storage)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_storage = merged_environment(env);
    std::vector<char*> envp;
    for (auto& e : env_storage)
        envp.push_back(e.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    // Its own process group: the time limit kills what it started too, and the terminal's Ctrl-C
    // reaches kforge, which decides.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
    pid_t pid = -1;
    int rc = ::posix_spawn(&pid, exe.c_str(), &actions, &attributes, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    if (rc != 0) {
        ::close(out_pipe[0]);
        ::close(err_pipe[0]);
        fail_runtime("cannot run {}: {}", exe, std::strerror(rc));
    }

    CaptureResult result;
    int fds[2] = {out_pipe[0], err_pipe[0]};
    std::string* sinks[2] = {&result.out, &result.err};
    Clock::time_point deadline = Clock::now() + limit;
    bool killed = false;
    auto kill_group = [&] {
        if (!killed)
            ::kill(-pid, SIGKILL);
        killed = true;
    };
    while (fds[0] >= 0 || fds[1] >= 0) {
        if (!killed && Clock::now() >= deadline) {
            result.timed_out = true;
            kill_group();
        }
        if (!killed && interrupt_requested()) {
            result.interrupted = true;
            kill_group();
        }
        pollfd polls[2];
        nfds_t count = 0;
        int which[2];
        for (int i = 0; i < 2; ++i)
            if (fds[i] >= 0) {
                polls[count] = pollfd{fds[i], POLLIN, 0};
                which[count++] = i;
            }
        int ready = ::poll(polls, count, 100);
        if (ready < 0 && errno != EINTR)
            break;
        for (nfds_t k = 0; ready > 0 && k < count; ++k) {
            if (!(polls[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int i = which[k];
            char buffer[65536];
            ssize_t n = ::read(fds[i], buffer, sizeof buffer);
            if (n <= 0) {
                close_fd(fds[i]);
                continue;
            }
            size_t room = max_bytes > sinks[i]->size() ? max_bytes - sinks[i]->size() : 0;
            sinks[i]->append(buffer, std::min(room, static_cast<size_t>(n)));
        }
    }
    // Pipes closed: the program (or whatever held them) is done. Reap, killing a straggler that
    // closed its outputs but keeps running past the limit.
    int status = 0;
    for (;;) {
        pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid || (done < 0 && errno != EINTR))
            break;
        if (Clock::now() >= deadline && !killed) {
            result.timed_out = true;
            kill_group();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (killed)
        ::kill(-pid, SIGKILL); // children it left in its group
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return result;
}

} // namespace kforge
