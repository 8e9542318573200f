// Lock files removed by their holder (util/file_lock.hpp): the lock still excludes, since a lock
// taken on a file no longer at its path is dropped and the path opened again.
#include "kf_catch.hpp"

#include <atomic>
#include <chrono>
#include <thread>

#include "test_support.hpp"
#include "util/file_lock.hpp"

using namespace kforge;
using namespace kforge::test;

TEST_CASE("a lock file its holder removes still excludes: a waiter on the old file moves to the new one",
          "[util][lock]")
{
    TempDir dir;
    std::filesystem::path path = dir / "problem.claim";
    FileLock holder = FileLock::acquire(path, LockWait::try_once);
    REQUIRE(holder.held());
    // Another process waiting for the lock: a thread with its own open file of the path stands in
    // for it (two opens exclude each other as two processes do). It opens the file and blocks.
    std::atomic<bool> taken{false};
    FileLock waiter;
    std::thread thread([&] {
        waiter = FileLock::acquire(path, LockWait::block);
        taken = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK_FALSE(taken);
    holder.remove_and_release();
    thread.join();
    REQUIRE(waiter.held());
    // The waiter's lock is the lock of the file the path names now: a third comer is refused, as
    // it would not be if the waiter held the removed file.
    CHECK(std::filesystem::exists(path));
    CHECK_FALSE(FileLock::acquire(path, LockWait::try_once).held());
    CHECK(file_lock_is_held(path));
    waiter.remove_and_release();
    CHECK_FALSE(std::filesystem::exists(path));
    CHECK_FALSE(file_lock_is_held(path));
}
