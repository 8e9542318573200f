// Supervised children (util/child_process) and file locks (util/file_lock): output to files, exit
// statuses, a kill that takes the child's whole process group, and locks that exclude each other.
#include "kf_catch.hpp"

#include <chrono>
#include <csignal>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "test_support.hpp"
#include "util/child_process.hpp"
#include "util/error.hpp"
#include "util/file_lock.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

ChildProcess start_child_shell(const std::string& script, const std::filesystem::path& out, const std::filesystem::path& err)
{
    return ChildProcess::start(ChildSpec{"/bin/sh", {"-c", script}, {{"KF_CHILD_TEST", "yes"}}, out, err});
}

bool wait_for_child_end(ChildProcess& child, std::chrono::seconds limit)
{
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (child.poll())
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

} // namespace

TEST_CASE("a supervised child writes to its files, sees its environment, and reports its exit status",
          "[util][child]")
{
    TempDir dir;
    ChildProcess child = start_child_shell("echo out $KF_CHILD_TEST; echo err >&2; exit 3", dir / "out.txt", dir / "err.txt");
    REQUIRE(wait_for_child_end(child, std::chrono::seconds(60)));
    CHECK(child.exit_code() == 3);
    CHECK(child.exit_description() == "exited with status 3");
    CHECK(slurp_file(dir / "out.txt") == "out yes\n");
    CHECK(slurp_file(dir / "err.txt") == "err\n");
    CHECK_FALSE(child.running());

    // One file for both streams is appended to, in order.
    write_text(dir / "log.txt", "before\n");
    ChildProcess both = start_child_shell("echo one; echo two >&2", dir / "log.txt", dir / "log.txt");
    REQUIRE(wait_for_child_end(both, std::chrono::seconds(60)));
    CHECK(slurp_file(dir / "log.txt") == "before\none\ntwo\n");
}

TEST_CASE("killing a supervised child ends every process of its group, and signal() reaches the child alone",
          "[util][child]")
{
    TempDir dir;
    // The shell leaves a grandchild behind in its group and waits for it.
    ChildProcess child = start_child_shell("sleep 60 & echo $! > " + (dir / "grandchild").string() + "; wait", "", "");
    std::string pid_text;
    for (int i = 0; i < 3000 && trim(pid_text).empty(); ++i) { // up to a minute on a loaded machine
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        pid_text = slurp_file(dir / "grandchild");
    }
    REQUIRE_FALSE(trim(pid_text).empty());
    int grandchild = std::stoi(trim(pid_text));
    CHECK(process_alive(grandchild));
    CHECK(child.running());
    child.kill();
    CHECK_FALSE(child.running());
    CHECK(child.exit_code() == 128 + SIGKILL);
    bool gone = false;
    for (int i = 0; i < 1500 && !gone; ++i) {
        gone = !process_alive(grandchild);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(gone);

    // The check above counts a zombie as gone: one that nobody reaps yet is not alive.
    pid_t zombie = ::fork();
    REQUIRE(zombie >= 0);
    if (zombie == 0)
        ::_exit(0);
    siginfo_t ended{};
    REQUIRE(::waitid(P_PID, static_cast<id_t>(zombie), &ended, WEXITED | WNOWAIT) == 0); // ended, not reaped
    CHECK(::kill(zombie, 0) == 0);
    CHECK_FALSE(process_alive(zombie));
    ::waitpid(zombie, nullptr, 0);

    ChildProcess trapping = start_child_shell("trap 'echo stopping; exit 7' INT; : > " + (dir / "trap-set").string() +
                                                  "; while :; do sleep 0.05; done",
                                              dir / "trap.txt", "");
    for (int i = 0; i < 3000 && !std::filesystem::exists(dir / "trap-set"); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    REQUIRE(std::filesystem::exists(dir / "trap-set"));
    REQUIRE(trapping.signal(SIGINT));
    REQUIRE(wait_for_child_end(trapping, std::chrono::seconds(60)));
    CHECK(trapping.exit_code() == 7);
    CHECK(slurp_file(dir / "trap.txt") == "stopping\n");
    CHECK_FALSE(trapping.signal(SIGINT)); // it has ended
}

TEST_CASE("a program that cannot run is an error naming it", "[util][child]")
{
    TempDir dir;
    CHECK_THROWS_WITH(ChildProcess::start(ChildSpec{(dir / "missing-program").string(), {}, {}, "", ""}),
                      Catch::Contains("missing-program") && Catch::Contains("No such file"));
    CHECK_THROWS_WITH(ChildProcess::start(ChildSpec{"/bin/true", {}, {}, dir / "no" / "such" / "folder.txt", ""}),
                      Catch::Contains("cannot start /bin/true"));
}

TEST_CASE("file locks exclude each other until released, across open files of one process", "[util][lock]")
{
    TempDir dir;
    std::filesystem::path path = dir / "state.lock";
    CHECK_FALSE(file_lock_is_held(path)); // missing: free
    FileLock first = FileLock::acquire(path, LockWait::try_once);
    REQUIRE(first.held());
    CHECK(file_lock_is_held(path));
    FileLock second = FileLock::acquire(path, LockWait::try_once);
    CHECK_FALSE(second.held());
    first.release();
    CHECK_FALSE(file_lock_is_held(path));
    FileLock third = FileLock::acquire(path, LockWait::block);
    CHECK(third.held());
    FileLock moved = std::move(third);
    CHECK(moved.held());
    CHECK_FALSE(third.held()); // NOLINT(bugprone-use-after-move): a moved-from lock holds nothing
    CHECK(file_lock_is_held(path));
}
