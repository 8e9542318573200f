// The one-writer rule: an exclusive lock on a sidecar file `<archive>.lock`.
//
// flock(2) locks belong to an open file and the kernel drops them when the holder exits for any
// reason, kill -9 included, so a crashed run never leaves a stale lock behind and nothing has to
// guess whether a recorded pid is still alive. The holder writes who it is (pid, host, start time,
// kforge version) into the file so a refused writer can name it. The holder removes the file when
// it releases the lock (a closed archive leaves no .lock beside it); a writer counts the lock as
// taken only when the file it locked is still the one at the path (util/file_lock.hpp says why
// that makes the removal safe), and otherwise opens the path again.
#pragma once

#include <filesystem>
#include <string>

namespace kforge {

class WriterLock
{
public:
    WriterLock() = default;
    // Takes the lock for `archive` or throws Error(runtime) naming the archive and the holder.
    explicit WriterLock(const std::filesystem::path& archive);
    ~WriterLock();
    WriterLock(WriterLock&& other) noexcept;
    WriterLock& operator=(WriterLock&& other) noexcept;
    WriterLock(const WriterLock&) = delete;
    WriterLock& operator=(const WriterLock&) = delete;

    bool held() const { return m_fd >= 0; }

private:
    int m_fd = -1;
    std::filesystem::path m_path; // the lock file
};

// The sidecar lock file of an archive.
std::filesystem::path lock_path_of(const std::filesystem::path& archive);

} // namespace kforge
