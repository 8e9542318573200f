// flock-based file locks; see file_lock.hpp. Each lock is its own open of the file, so two locks
// taken by one process on the same path exclude each other as two processes' locks would.
#include "util/file_lock.hpp"

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.hpp"

namespace kforge {

bool is_file_at(int fd, const std::filesystem::path& path)
{
    struct stat opened {};
    struct stat named {};
    return ::fstat(fd, &opened) == 0 && ::stat(path.c_str(), &named) == 0 && opened.st_dev == named.st_dev &&
           opened.st_ino == named.st_ino;
}

FileLock FileLock::acquire(const std::filesystem::path& path, LockWait wait)
{
    // Until the lock is on the file `path` names when it is taken: a holder may remove the file
    // (remove_and_release) while this process waits on it, and a lock on a removed file is a lock
    // nobody else can find. A removal is followed by at most one more round here.
    for (;;) {
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
        if (!is_file_at(fd, path)) {
            ::close(fd);
            continue;
        }
        lock.m_fd = fd;
        lock.m_path = path;
        return lock;
    }
}

FileLock::~FileLock()
{
    release();
}

FileLock::FileLock(FileLock&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)), m_path(std::move(other.m_path))
{
}

FileLock& FileLock::operator=(FileLock&& other) noexcept
{
    if (this != &other) {
        release();
        m_fd = std::exchange(other.m_fd, -1);
        m_path = std::move(other.m_path);
    }
    return *this;
}

void FileLock::release()
{
    if (m_fd >= 0)
        ::close(m_fd); // closing the last descriptor of the open file drops its flock
    m_fd = -1;
}

void FileLock::remove_and_release()
{
    if (m_fd < 0)
        return;
    // Removed while still locked: whoever opened the file before this and locks it after the
    // release finds in acquire() that it is no longer at the path, and goes to the new one.
    ::unlink(m_path.c_str());
    release();
}

bool file_lock_is_held(const std::filesystem::path& path)
{
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        return false;
    return !FileLock::acquire(path, LockWait::try_once).held();
}

} // namespace kforge
