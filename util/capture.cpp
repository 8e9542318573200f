// run_captured(): posix_spawn into a new process group, poll both pipes, kill the group on time.
#include "util/capture.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "util/contain.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/subprocess.hpp"

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
    // Under a keeper (util/contain.hpp): whatever the program starts, daemons included, ends with it.
    std::string keeper = self_executable();
    std::vector<std::string> argv_storage{keeper};
    for (auto& arg : keeper_args(exe, args))
        argv_storage.push_back(std::move(arg));
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
    // Its own process group: the terminal's Ctrl-C reaches kforge, which decides.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
    pid_t pid = -1;
    int rc = ::posix_spawn(&pid, keeper.c_str(), &actions, &attributes, argv.data(), envp.data());
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
    std::optional<Clock::time_point> stopped_at; // when the keeper was asked to end the tree
    std::optional<Clock::time_point> reaped_at;  // when the keeper had exited
    int status = 0;
    auto stop = [&] {
        if (!stopped_at && !reaped_at)
            ::kill(pid, SIGTERM);
        stopped_at = stopped_at.value_or(Clock::now());
    };
    // Reads until both pipes close: the program's whole tree has ended (the keeper ends what the
    // program leaves behind). The wait is bounded whatever the tree does: a keeper that has not
    // ended it 3 s after being asked is killed with its group, and pipes still open 1 s after the
    // keeper exited (held by something it could not kill) are given up on.
    while (fds[0] >= 0 || fds[1] >= 0) {
        if (!stopped_at && Clock::now() >= deadline) {
            result.timed_out = true;
            stop();
        }
        if (!stopped_at && interrupt_requested()) {
            result.interrupted = true;
            stop();
        }
        if (!reaped_at && ::waitpid(pid, &status, WNOHANG) == pid)
            reaped_at = Clock::now();
        if (stopped_at && !reaped_at && Clock::now() >= *stopped_at + std::chrono::seconds(3)) {
            ::kill(-pid, SIGKILL);
            while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            reaped_at = Clock::now();
        }
        if (reaped_at && Clock::now() >= *reaped_at + std::chrono::seconds(1))
            break;
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
    close_fd(fds[0]);
    close_fd(fds[1]);
    // The pipes closed with the tree; the keeper exits right after ending it.
    while (!reaped_at) {
        pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid || (done < 0 && errno != EINTR))
            break;
        if (!stopped_at && Clock::now() >= deadline) {
            result.timed_out = true;
            stop();
        }
        if (stopped_at && Clock::now() >= *stopped_at + std::chrono::seconds(3))
            ::kill(-pid, SIGKILL);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return result;
}

} // namespace kforge
