// Advisory locks on files (flock), for state that several kforge processes share on one file
// system: a suite's manifest, which one process at a time rewrites, and the claim a process holds
// on a problem while it works on it.
//
// flock(2) locks belong to an open file description, and the kernel drops them when the holder
// exits for any reason, kill -9 included, so a lock never outlives its process and nobody has to
// guess whether a recorded pid is still alive. The lock file itself is never removed (removing it
// would let two processes lock two different files of the same name). On NFS, Linux maps flock to
// POSIX byte-range locks, which the server arbitrates, so the rules hold across hosts too.
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

private:
    int m_fd = -1;
};

// True when some process holds an exclusive lock on `path` right now (a missing file is free).
// Takes and drops the lock itself to find out, so the answer may be stale by the time it returns.
bool file_lock_is_held(const std::filesystem::path& path);

} // namespace kforge
