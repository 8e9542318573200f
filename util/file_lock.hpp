// Advisory locks on files (flock), for state that several kforge processes share on one file
// system: a suite's manifest, which one process at a time rewrites, and the claim a process holds
// on a problem while it works on it.
//
// flock(2) locks belong to an open file description, and the kernel drops them when the holder
// exits for any reason, kill -9 included, so a lock never outlives its process and nobody has to
// guess whether a recorded pid is still alive. On NFS, Linux maps flock to POSIX byte-range locks,
// which the server arbitrates, so the rules hold across hosts too.
//
// Removing a lock file is the classic race: B opens the file, A (the holder) unlinks it and
// releases, B's flock then succeeds on a file nobody else can find, and C creates a new file of
// the same name and locks that too: two holders. So a lock counts as taken only when the file it
// locked is still the one the path names (same device and inode, checked after the flock); if not,
// acquire() opens the path again. With that rule a holder may remove its file
// (remove_and_release) and the lock still excludes. A kforge older than this rule does not check,
// so files other processes may still be competing for are better kept: the suite removes a
// problem's claim only once the problem is finished, when nobody will run it again anyway.
#pragma once

#include <filesystem>

namespace kforge {

enum class LockWait
{
    block,  // wait until the lock is free
    try_once // give up at once when another process holds it
};

class FileLock
{
public:
    FileLock() = default;
    // Opens (creating it when missing) `path` and takes an exclusive lock on it. With
    // LockWait::try_once the result is not held() when another process holds the lock. Throws
    // Error(runtime) naming the file when it cannot be opened or locked for another reason.
    static FileLock acquire(const std::filesystem::path& path, LockWait wait);

    ~FileLock();
    FileLock(FileLock&& other) noexcept;
    FileLock& operator=(FileLock&& other) noexcept;
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;

    bool held() const { return m_fd >= 0; }
    // Releases the lock now (the destructor does it otherwise).
    void release();
    // Removes the lock file while still holding the lock, then releases it: for a lock whose
    // purpose is over, so that no empty file is left behind. Safe against a process waiting on the
    // old file (see above).
    void remove_and_release();

private:
    int m_fd = -1;
    std::filesystem::path m_path;
};

// True when `fd` is the open file that `path` names now (same device and inode): a lock taken on
// `fd` is the lock of `path` only then.
bool is_file_at(int fd, const std::filesystem::path& path);

// True when some process holds an exclusive lock on `path` right now (a missing file is free).
// Takes and drops the lock itself to find out, so the answer may be stale by the time it returns.
bool file_lock_is_held(const std::filesystem::path& path);

} // namespace kforge
