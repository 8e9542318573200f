// flock-based file locks; see file_lock.hpp. Each lock is its own open of the file, so two locks
// taken by one process on the same path exclude each other as two processes' locks would.
#include "util/file_lock.hpp"

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "util/error.hpp"

namespace kforge {

FileLock FileLock::acquire(const std::filesystem::path& path, LockWait wait)
{
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        fail_runtime("{}: cannot open the lock file: {}", path.string(), std::strerror(errno));
    int flags = LOCK_EX | (wait == LockWait::try_once ? LOCK_NB : 0);
    int rc;
    do {
        rc = ::flock(fd, flags);
    } while (rc != 0 && errno == EINTR && wait == LockWait::block);
    FileLock lock;
    if (rc != 0) {
        int saved = errno;
        ::close(fd);
        if (saved == EWOULDBLOCK)
            return lock;
        fail_runtime("{}: cannot lock: {}", path.string(), std::strerror(saved));
    }
    lock.m_fd = fd;
    return lock;
}

FileLock::~FileLock()
{
    release();
}

FileLock::FileLock(FileLock&& other) noexcept : m_fd(std::exchange(other.m_fd, -1)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept
{
    if (this != &other) {
        release();
        m_fd = std::exchange(other.m_fd, -1);
    }
    return *this;
}

void FileLock::release()
{
    if (m_fd >= 0)
        ::close(m_fd); // closing the last descriptor of the open file drops its flock
    m_fd = -1;
}

bool file_lock_is_held(const std::filesystem::path& path)
{
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        return false;
    return !FileLock::acquire(path, LockWait::try_once).held();
}

} // namespace kforge
