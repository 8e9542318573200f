// Child processes spoken to over pipes with length-prefixed frames.
//
// kforge's workers (NVRTC compiles, the GPU worker) are child processes so that a compiler that
// never returns or a kernel that faults or spins costs a SIGKILL and a respawn, never the run. The
// parent talks to a child over two dedicated pipes mapped to the child's file descriptors 3 (child
// reads) and 4 (child writes); the child's stdout goes to /dev/null, because device-side printf
// writes there and must not corrupt the message stream. A frame is a 4-byte little-endian length
// followed by that many bytes.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/limits.hpp" // k_max_frame_bytes

#include <sys/types.h>

namespace kforge {

// The largest frame either side accepts is k_max_frame_bytes (util/limits.hpp); a longer length
// prefix means a corrupt stream.

struct SpawnSpec {
    std::string executable;                 // absolute path; empty means this very binary
    std::vector<std::string> args;          // argv[1..]
    std::vector<std::pair<std::string, std::string>> env; // set (or override) in the child
    bool stderr_to_null = false;            // otherwise the child shares our stderr
    // Runs it under a keeper (util/contain.hpp), for programs that run code someone handed us:
    // whatever it starts, daemons included, ends when it ends or is killed.
    bool contained = false;
};

enum class ReceiveStatus { ok, timeout, closed, corrupt };

class Subprocess
{
public:
    // Starts the child; throws Error(runtime) when it cannot be started.
    static Subprocess spawn(const SpawnSpec& spec);

    Subprocess() = default;
    Subprocess(Subprocess&& other) noexcept;
    Subprocess& operator=(Subprocess&& other) noexcept;
    Subprocess(const Subprocess&) = delete;
    Subprocess& operator=(const Subprocess&) = delete;
    // Kills (SIGKILL) and reaps a child that is still running.
    ~Subprocess();

    bool running() const { return m_pid > 0; }
    pid_t pid() const { return m_pid; }

    // Sends one frame; false when the child has gone (broken pipe) or, given a `timeout`, when it
    // has not taken the whole frame by then (a child that stopped reading: kill it, since the
    // stream is now broken). Without one it waits as long as the child does not read.
    bool send(std::string_view frame, std::optional<std::chrono::milliseconds> timeout = std::nullopt);
    // Waits up to `timeout` for one whole frame.
    ReceiveStatus receive(std::string& frame, std::chrono::milliseconds timeout);
    // Waits up to `timeout` until the child has written something (or closed its end); reads
    // nothing. True when receive() would not wait for the first byte.
    bool wait_readable(std::chrono::milliseconds timeout) const;

    // SIGKILL, then reap (a contained child's keeper gets SIGTERM first and up to 2 s to end the
    // program's tree). Safe to call on a finished child.
    void kill();
    // Closes our end of the request pipe (the child sees EOF) and waits up to `grace` for it to
    // exit before killing it.
    void finish(std::chrono::milliseconds grace);
    // How the child ended, e.g. "exited with status 3", "killed by signal 11 (Segmentation
    // fault)"; empty while it runs.
    const std::string& exit_description() const { return m_exit_description; }

private:
    void reap(bool block);
    void close_fds();

    pid_t m_pid = -1;
    bool m_contained = false;
    int m_to_child = -1;
    int m_from_child = -1;
    std::string m_exit_description;
};

// The child's side of the channel (fds 3 and 4).
class ParentChannel
{
public:
    // Adopts fds 3 and 4; sets the child to die with its parent (PR_SET_PDEATHSIG).
    static ParentChannel adopt();
    // Blocks for the next frame; nullopt when the parent closed the pipe or the stream is corrupt.
    std::optional<std::string> receive();
    bool send(std::string_view frame);

private:
    int m_in = -1;
    int m_out = -1;
};

// Low-level frame I/O on file descriptors, shared by both sides and by tests.
bool write_frame(int fd, std::string_view frame,
                 std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);
ReceiveStatus read_frame(int fd, std::string& frame, std::optional<std::chrono::steady_clock::time_point> deadline);

// The absolute path of the running executable (/proc/self/exe).
std::string self_executable();

// This machine's host name ("localhost" when it cannot be read).
std::string host_name();

} // namespace kforge
