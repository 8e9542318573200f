// The writer lock: flock on `<archive>.lock`, holder details inside it as one line of JSON; the
// file is removed by its holder on release.
#include "archive/writer_lock.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "util/error.hpp"
#include "util/file_lock.hpp"
#include "util/json_reader.hpp"

#ifndef KFORGE_VERSION
#define KFORGE_VERSION "0.0.0"
#endif

namespace kforge {
namespace {

std::string host_name()
{
    char buffer[256] = {};
    if (::gethostname(buffer, sizeof buffer - 1) != 0)
        return "unknown host";
    return buffer;
}

std::string read_holder(int fd)
{
    std::string text;
    char buffer[512];
    ssize_t n;
    off_t offset = 0;
    while ((n = ::pread(fd, buffer, sizeof buffer, offset)) > 0) {
        text.append(buffer, static_cast<size_t>(n));
        offset += n;
    }
    return text;
}

// "pid 123 on host-a, since 2026-01-02 10:11:12, kforge 0.1.0", from the holder's note.
std::string describe_holder(const std::string& note)
{
    Json holder = Json::parse(note, nullptr, false);
    if (!holder.is_object() || !holder.contains("pid") || !holder["pid"].is_number_integer())
        return "";
    // Another process wrote the note: a field it lacks or holds of another type reads as unknown.
    auto text = [&](const char* key) {
        return holder.contains(key) && holder[key].is_string() ? holder[key].get<std::string>() : std::string("?");
    };
    double seconds = holder.contains("since") && holder["since"].is_number() ? holder["since"].get<double>() : 0.0;
    auto since = static_cast<std::time_t>(std::clamp(seconds, 0.0, 4e9));
    return fmt::format("pid {} on {}, since {:%Y-%m-%d %H:%M:%S}, kforge {}", holder["pid"].get<int64_t>(), text("host"),
                       fmt::localtime(since), text("kforge_version"));
}

// The lock file's descriptor, locked; throws naming the holder when another process has it.
int open_locked(const std::filesystem::path& archive, const std::filesystem::path& path)
{
    for (;;) {
        int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
            fail_runtime("{}: cannot open the writer lock {}: {}", archive.string(), path.string(),
                         std::strerror(errno));
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
            if (is_file_at(fd, path))
                return fd;
            ::close(fd); // its holder removed it meanwhile: the lock is the new file's
            continue;
        }
        int saved = errno;
        if (saved != EWOULDBLOCK) {
            ::close(fd);
            fail_runtime("{}: cannot lock {}: {}", archive.string(), path.string(), std::strerror(saved));
        }
        // The holder writes its note right after locking; give a fresh holder a moment to do so.
        std::string holder;
        for (int attempt = 0; attempt < 20 && holder.empty(); ++attempt) {
            holder = describe_holder(read_holder(fd));
            if (holder.empty())
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        ::close(fd);
        fail_runtime(
            "{}: another kforge is writing this archive ({}); only one writer at a time. Wait "
            "for it to finish or stop it; `kforge inspect` can read the archive meanwhile "
            "(lock file {})",
            archive.string(), holder.empty() ? "holder unknown" : holder, path.string());
    }
}

} // namespace

std::filesystem::path lock_path_of(const std::filesystem::path& archive)
{
    std::filesystem::path lock = archive;
    lock += ".lock";
    return lock;
}

WriterLock::WriterLock(const std::filesystem::path& archive)
{
    auto path = lock_path_of(archive);
    int fd = open_locked(archive, path);
    Json note = {{"pid", ::getpid()},
                 {"host", host_name()},
                 {"since", static_cast<double>(std::time(nullptr))},
                 {"kforge_version", KFORGE_VERSION}};
    std::string text = note.dump() + "\n";
    if (::ftruncate(fd, 0) != 0 ||
        ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
        int saved = errno;
        ::unlink(path.c_str()); // ours while locked; a process waiting on it opens the path again
        ::close(fd);
        fail_runtime("{}: cannot write the writer lock {}: {}", archive.string(), path.string(),
                     std::strerror(saved));
    }
    m_fd = fd;
    m_path = path;
}

WriterLock::~WriterLock()
{
    if (m_fd < 0)
        return;
    // Removed while still locked, so nothing is left beside a closed archive; a writer that opened
    // the file before and locks it after the close sees it is gone (open_locked) and takes the next.
    ::unlink(m_path.c_str());
    ::close(m_fd);
}

WriterLock::WriterLock(WriterLock&& other) noexcept : m_fd(other.m_fd), m_path(std::move(other.m_path))
{
    other.m_fd = -1;
}

WriterLock& WriterLock::operator=(WriterLock&& other) noexcept
{
    if (this != &other) {
        if (m_fd >= 0) {
            ::unlink(m_path.c_str());
            ::close(m_fd);
        }
        m_fd = other.m_fd;
        m_path = std::move(other.m_path);
        other.m_fd = -1;
    }
    return *this;
}

} // namespace kforge
