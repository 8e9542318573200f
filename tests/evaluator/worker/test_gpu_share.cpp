// A shared GPU's measuring lock (evaluator/worker/share.hpp): holds exclude each other, a hold
// that had to wait says so, every hold is logged when it ends, and the log's lines read back.
#include "kf_catch.hpp"

#include <atomic>
#include <thread>

#include "evaluator/worker/share.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

std::vector<MeasuringHold> read_log(const std::filesystem::path& dir, const std::string& uuid)
{
    std::vector<MeasuringHold> holds;
    for (const auto& line : split(slurp_file(gpu_share_path(dir, uuid, GpuShareFile::measuring_log)), '\n'))
        if (auto hold = parse_measuring_hold(line))
            holds.push_back(*hold);
    return holds;
}

} // namespace

TEST_CASE("two holders of a GPU's measuring lock take turns; the second waits, says so, and both are logged in order",
          "[evaluator][worker][gpu_share]")
{
    TempDir dir;
    // Each MeasuringLock opens the lock file itself, so two in one process exclude each other as
    // two workers' would.
    MeasuringLock first, second;
    first.configure(dir.path(), "GPU-test", {});
    std::vector<std::string> notices;
    std::atomic<bool> second_waits{false};
    second.configure(dir.path(), "GPU-test", [&](std::string_view event) {
        notices.emplace_back(event);
        second_waits = second_waits || event == "waiting";
    });
    std::atomic<bool> holding{false};
    // The first holds until the second says it waits, and 300 ms more: however late the second
    // comes on a loaded machine, it waits that long.
    std::thread holder([&] {
        MeasuringLock::Hold hold = first.hold("variant");
        holding = true;
        for (int i = 0; i < 60000 && !second_waits; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
    });
    while (!holding)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    {
        MeasuringLock::Hold hold = second.hold("baselines");
    }
    holder.join();
    CHECK(notices == std::vector<std::string>{"waiting", "holding"});
    CHECK(second.take_waited_s() > 0.1);
    CHECK(second.take_waited_s() == 0); // taken once
    CHECK(first.take_waited_s() < 0.1);

    std::vector<MeasuringHold> holds = read_log(dir.path(), "GPU-test");
    REQUIRE(holds.size() == 2);
    CHECK(holds[0].what == "variant");
    CHECK(holds[1].what == "baselines");
    CHECK(holds[1].begin_s >= holds[0].end_s);
    CHECK(holds[0].end_s - holds[0].begin_s > 0.25);
    CHECK(holds[1].waited_s > 0.1);
    CHECK(holds[0].pid == holds[1].pid);
}

TEST_CASE("a nested hold of the measuring lock is free, and a lock that shares nothing holds and logs nothing",
          "[evaluator][worker][gpu_share]")
{
    TempDir dir;
    MeasuringLock alone;
    CHECK_FALSE(alone.configured());
    {
        MeasuringLock::Hold hold = alone.hold("variant");
    }
    CHECK(alone.take_waited_s() == 0);

    MeasuringLock shared;
    shared.configure(dir / "gpus", "GPU-nest", {}); // the folder is made
    {
        MeasuringLock::Hold outer = shared.hold("baselines");
        MeasuringLock::Hold inner = shared.hold("setup"); // would deadlock if it took the lock again
    }
    {
        MeasuringLock::Hold again = shared.hold("variant"); // the nesting ended with the outer hold
    }
    std::vector<MeasuringHold> holds = read_log(dir / "gpus", "GPU-nest");
    REQUIRE(holds.size() == 2);
    CHECK(holds[0].what == "baselines");
    CHECK(holds[1].what == "variant");
}

TEST_CASE("a measuring log line round-trips; a torn or malformed line is refused", "[evaluator][worker][gpu_share]")
{
    MeasuringHold hold{4242, 1700000000.25, 1700000001.5, 0.125, "check_program"};
    std::string line = format_measuring_hold(hold);
    CHECK(line.back() == '\n');
    auto back = parse_measuring_hold(line);
    REQUIRE(back);
    CHECK(back->pid == 4242);
    CHECK(back->begin_s == Approx(1700000000.25));
    CHECK(back->end_s == Approx(1700000001.5));
    CHECK(back->waited_s == Approx(0.125));
    CHECK(back->what == "check_program");
    CHECK_FALSE(parse_measuring_hold(line.substr(0, line.size() / 2))); // a process killed mid-write
    CHECK_FALSE(parse_measuring_hold("4242 2.0 1.0 0 variant"));        // ends before it begins
    CHECK_FALSE(parse_measuring_hold("x 1.0 2.0 0 variant"));
    CHECK_FALSE(parse_measuring_hold(""));
}
