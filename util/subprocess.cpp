// posix_spawn-based children with a framed pipe protocol. posix_spawn (not fork) because a parent
// that has ever touched CUDA must not fork without exec; kforge's controller never touches CUDA, but
// the rule keeps the helpers safe wherever they are used.
#include "util/subprocess.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "util/contain.hpp"
#include "util/error.hpp"

extern char** environ;

namespace kforge {

namespace {

constexpr int k_child_in_fd = 3;
constexpr int k_child_out_fd = 4;

// Writes all of `data`, waiting no later than `deadline` (if any) for room in the pipe. With a
// deadline the descriptor is non-blocking meanwhile: a blocking write of a large frame would wait
// for the whole of it, past any deadline, once poll() said there was room for some.
bool write_all(int fd, const char* data, size_t size, std::optional<std::chrono::steady_clock::time_point> deadline)
{
    int flags = deadline ? ::fcntl(fd, F_GETFL) : -1;
    if (flags >= 0 && !(flags & O_NONBLOCK))
        ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    bool ok = true;
    while (size > 0) {
        ssize_t n = ::write(fd, data, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && deadline) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now());
            pollfd p{fd, POLLOUT, 0};
            if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30))) == 0) {
                ok = false;
                break;
            }
            continue;
        }
        if (n <= 0) {
            ok = false;
            break;
        }
        data += n;
        size -= static_cast<size_t>(n);
    }
    if (flags >= 0 && !(flags & O_NONBLOCK))
        ::fcntl(fd, F_SETFL, flags);
    return ok;
}

// Reads exactly `size` bytes, waiting no later than `deadline` (if any).
ReceiveStatus read_exact(int fd, char* data, size_t size,
                         std::optional<std::chrono::steady_clock::time_point> deadline)
{
    while (size > 0) {
        if (deadline) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                *deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0)
                return ReceiveStatus::timeout;
            pollfd p{fd, POLLIN, 0};
            int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
            if (r < 0 && errno == EINTR)
                continue;
            if (r == 0)
                return ReceiveStatus::timeout;
            if (r < 0)
                return ReceiveStatus::closed;
        }
        ssize_t n = ::read(fd, data, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return ReceiveStatus::closed;
        data += n;
        size -= static_cast<size_t>(n);
    }
    return ReceiveStatus::ok;
}

// `contained`: the status is a keeper's, which passes on a signal N that ended the program as 128 + N.
std::string describe_status(int status, bool contained = false)
{
    if (contained && WIFEXITED(status) && WEXITSTATUS(status) > 128 && WEXITSTATUS(status) < 128 + 65)
        return fmt::format("killed by signal {} ({})", WEXITSTATUS(status) - 128, strsignal(WEXITSTATUS(status) - 128));
    if (WIFEXITED(status))
        return fmt::format("exited with status {}", WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    return fmt::format("ended with wait status {}", status);
}

} // namespace

bool write_frame(int fd, std::string_view frame, std::optional<std::chrono::steady_clock::time_point> deadline)
{
    if (frame.size() > k_max_frame_bytes)
        return false;
    uint32_t size = static_cast<uint32_t>(frame.size());
    unsigned char header[4] = {static_cast<unsigned char>(size), static_cast<unsigned char>(size >> 8),
                               static_cast<unsigned char>(size >> 16),
                               static_cast<unsigned char>(size >> 24)};
    return write_all(fd, reinterpret_cast<const char*>(header), 4, deadline) &&
           write_all(fd, frame.data(), frame.size(), deadline);
}

ReceiveStatus read_frame(int fd, std::string& frame,
                         std::optional<std::chrono::steady_clock::time_point> deadline)
{
    unsigned char header[4];
    ReceiveStatus status = read_exact(fd, reinterpret_cast<char*>(header), 4, deadline);
    if (status != ReceiveStatus::ok)
        return status;
    size_t size = header[0] | (header[1] << 8) | (header[2] << 16) | (size_t{header[3]} << 24);
    if (size > k_max_frame_bytes)
        return ReceiveStatus::corrupt;
    frame.resize(size);
    status = read_exact(fd, frame.data(), size, deadline);
    // A frame whose header arrived but whose body did not in time is a broken stream, not a
    // timeout the caller could retry.
    return status == ReceiveStatus::timeout ? ReceiveStatus::corrupt : status;
}

std::string self_executable()
{
    char buffer[4096];
    ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
    if (n <= 0)
        fail_runtime("cannot find the kforge executable (/proc/self/exe): {}", std::strerror(errno));
    return std::string(buffer, static_cast<size_t>(n));
}

std::string host_name()
{
    char buffer[256] = {};
    if (::gethostname(buffer, sizeof buffer - 1) != 0 || buffer[0] == '\0')
        return "localhost";
    return buffer;
}

Subprocess Subprocess::spawn(const SpawnSpec& spec)
{
    int request[2];
    int reply[2];
    if (::pipe2(request, O_CLOEXEC) != 0)
        fail_runtime("cannot create a pipe: {}", std::strerror(errno));
    if (::pipe2(reply, O_CLOEXEC) != 0) {
        ::close(request[0]);
        ::close(request[1]);
        fail_runtime("cannot create a pipe: {}", std::strerror(errno));
    }

    std::string exe = spec.executable.empty() ? self_executable() : spec.executable;
    std::vector<std::string> argv_storage{exe};
    argv_storage.insert(argv_storage.end(), spec.args.begin(), spec.args.end());
    if (spec.contained) {
        std::vector<std::string> kept = keeper_args(exe, spec.args);
        exe = self_executable();
        argv_storage = {exe};
        argv_storage.insert(argv_storage.end(), kept.begin(), kept.end());
    }
    std::vector<char*> argv;
    for (auto& a : argv_storage)
        argv.push_back(a.data());
    argv.push_back(nullptr);

    std::vector<std::string> env_storage;
    for (char** e = environ; *e; ++e) {
        std::string_view entry(*e);
        bool overridden = false;
        for (const auto& [key, value] : spec.env)
            overridden = overridden || (entry.substr(0, key.size() + 1) == key + "=");
        if (!overridden)
            env_storage.emplace_back(entry);
    }
    for (const auto& [key, value] : spec.env)
        env_storage.push_back(key + "=" + value);
    std::vector<char*> envp;
    for (auto& e : env_storage)
        envp.push_back(e.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // dup2 clears FD_CLOEXEC on the new descriptor, so 3 and 4 survive exec while the originals
    // (CLOEXEC) do not.
    posix_spawn_file_actions_adddup2(&actions, request[0], k_child_in_fd);
    posix_spawn_file_actions_adddup2(&actions, reply[1], k_child_out_fd);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    if (spec.stderr_to_null)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);

    pid_t pid = -1;
    int rc = ::posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(request[0]);
    ::close(reply[1]);
    if (rc != 0) {
        ::close(request[1]);
        ::close(reply[0]);
        fail_runtime("cannot start {}: {}", exe, std::strerror(rc));
    }
    Subprocess child;
    child.m_pid = pid;
    child.m_contained = spec.contained;
    child.m_to_child = request[1];
    child.m_from_child = reply[0];
    return child;
}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : m_pid(std::exchange(other.m_pid, -1)), m_contained(other.m_contained),
      m_to_child(std::exchange(other.m_to_child, -1)),
      m_from_child(std::exchange(other.m_from_child, -1)),
      m_exit_description(std::move(other.m_exit_description))
{
}

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept
{
    if (this != &other) {
        kill();
        m_pid = std::exchange(other.m_pid, -1);
        m_contained = other.m_contained;
        m_to_child = std::exchange(other.m_to_child, -1);
        m_from_child = std::exchange(other.m_from_child, -1);
        m_exit_description = std::move(other.m_exit_description);
    }
    return *this;
}

Subprocess::~Subprocess() { kill(); }

bool Subprocess::send(std::string_view frame, std::optional<std::chrono::milliseconds> timeout)
{
    if (m_to_child < 0)
        return false;
    // A child that died leaves a pipe without a reader; the write must fail, not raise SIGPIPE.
    static const bool ignore_sigpipe = [] {
        std::signal(SIGPIPE, SIG_IGN);
        return true;
    }();
    (void)ignore_sigpipe;
    std::optional<std::chrono::steady_clock::time_point> deadline;
    if (timeout)
        deadline = std::chrono::steady_clock::now() + *timeout;
    return write_frame(m_to_child, frame, deadline);
}

ReceiveStatus Subprocess::receive(std::string& frame, std::chrono::milliseconds timeout)
{
    if (m_from_child < 0)
        return ReceiveStatus::closed;
    ReceiveStatus status =
        read_frame(m_from_child, frame, std::chrono::steady_clock::now() + timeout);
    if (status == ReceiveStatus::closed)
        reap(true);
    return status;
}

bool Subprocess::wait_readable(std::chrono::milliseconds timeout) const
{
    if (m_from_child < 0)
        return true;
    pollfd fd{m_from_child, POLLIN, 0};
    int r;
    do {
        r = ::poll(&fd, 1, static_cast<int>(timeout.count()));
    } while (r < 0 && errno == EINTR);
    return r != 0; // ready, or an error receive() will report
}

void Subprocess::reap(bool block)
{
    if (m_pid <= 0)
        return;
    int status = 0;
    pid_t r;
    do {
        r = ::waitpid(m_pid, &status, block ? 0 : WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == m_pid) {
        m_exit_description = describe_status(status, m_contained);
        m_pid = -1;
        close_fds();
    }
}

void Subprocess::close_fds()
{
    if (m_to_child >= 0)
        ::close(m_to_child);
    if (m_from_child >= 0)
        ::close(m_from_child);
    m_to_child = m_from_child = -1;
}

void Subprocess::kill()
{
    if (m_pid > 0 && m_contained) {
        int status = stop_keeper(m_pid, std::chrono::seconds(2));
        m_exit_description = status < 0 ? "gone" : "killed, with every process it had started";
        m_pid = -1;
    }
    if (m_pid > 0) {
        ::kill(m_pid, SIGKILL);
        reap(true);
    }
    close_fds();
}

void Subprocess::finish(std::chrono::milliseconds grace)
{
    if (m_to_child >= 0) {
        ::close(m_to_child);
        m_to_child = -1;
    }
    auto deadline = std::chrono::steady_clock::now() + grace;
    while (m_pid > 0 && std::chrono::steady_clock::now() < deadline) {
        reap(false);
        if (m_pid > 0)
            ::usleep(2000);
    }
    kill();
}

ParentChannel ParentChannel::adopt()
{
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // The parent may have died between our spawn and the prctl; then nobody would kill us.
    if (::getppid() == 1)
        ::_exit(1);
    ParentChannel channel;
    channel.m_in = k_child_in_fd;
    channel.m_out = k_child_out_fd;
    ::fcntl(k_child_in_fd, F_SETFD, FD_CLOEXEC);
    ::fcntl(k_child_out_fd, F_SETFD, FD_CLOEXEC);
    std::signal(SIGPIPE, SIG_IGN);
    return channel;
}

std::optional<std::string> ParentChannel::receive()
{
    std::string frame;
    if (read_frame(m_in, frame, std::nullopt) != ReceiveStatus::ok)
        return std::nullopt;
    return frame;
}

bool ParentChannel::send(std::string_view frame) { return write_frame(m_out, frame); }

} // namespace kforge
