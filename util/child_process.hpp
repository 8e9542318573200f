// Long-running child programs that a command supervises without talking to them: each writes its
// output to files, and the parent only watches for its end, forwards a stop request, or kills it.
//
// `kforge suite run` works through many problems by running one `kforge optimize`/`resume` (or
// `task import`) per problem. Such a child must never outlive the parent that supervises it, or a
// killed suite would leave runs writing archives nobody watches; so the child is tied to the parent
// with PR_SET_PDEATHSIG(SIGKILL) before it executes a line of its own program (fork, then prctl,
// then exec: posix_spawn cannot do it). Linux ties that signal to the *thread* that forked, so
// start children from the thread that outlives them (the main thread). Each child leads a process
// group of its own: a terminal's Ctrl-C reaches only the parent, which decides what to forward,
// and kill() ends the child together with every helper it started in its group.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace kforge {

struct ChildSpec {
    std::string executable;                 // absolute path
    std::vector<std::string> args;          // argv[1..]
    std::vector<std::pair<std::string, std::string>> env; // set (or override) in the child
    std::filesystem::path stdout_path;      // truncated at start; empty: /dev/null
    std::filesystem::path stderr_path;      // appended to; empty: /dev/null; may equal stdout_path
};

class ChildProcess
{
public:
    // Starts the child (stdin from /dev/null). Throws Error(runtime) when it cannot be started,
    // its output files cannot be opened, or the program cannot be executed.
    static ChildProcess start(const ChildSpec& spec);

    ChildProcess() = default;
    ChildProcess(ChildProcess&& other) noexcept;
    ChildProcess& operator=(ChildProcess&& other) noexcept;
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;
    // Kills (SIGKILL, the whole group) and reaps a child still running.
    ~ChildProcess();

    pid_t pid() const { return m_pid; }
    bool running() const { return m_pid > 0 && !m_ended; }
    // Checks without blocking whether the child has ended (reaping it); true once it has.
    bool poll();
    // How it ended, valid once poll() returned true: the exit status, or 128 + N when killed by
    // signal N.
    int exit_code() const { return m_exit_code; }
    // "exited with status 3", "killed by signal 9 (Killed)".
    const std::string& exit_description() const { return m_exit_description; }
    // Sends `signal` to the child alone (not its group); false when it has ended.
    bool signal(int signal);
    // SIGKILL to the child's whole process group, then reaps it.
    void kill();

private:
    pid_t m_pid = -1;
    bool m_ended = false;
    int m_exit_code = -1;
    std::string m_exit_description;
};

} // namespace kforge
