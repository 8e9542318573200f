// A suite GPU's busy, waiting and held time (suite/gpu_use.hpp): the union of the measuring
// holds its runs' workers logged, read as the log grows; the waits apart; the union of the runs.
#include "kf_catch.hpp"

#include <fstream>

#include "evaluator/worker/share.hpp"
#include "suite/gpu_use.hpp"
#include "test_support.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

void append(const std::filesystem::path& path, const std::string& text)
{
    std::ofstream out(path, std::ios::app | std::ios::binary);
    out << text;
}

} // namespace

TEST_CASE("covered seconds count overlapping intervals once and only inside the window", "[cli][suite]")
{
    CHECK(covered_seconds({}, 0, 10) == 0);
    CHECK(covered_seconds({{5, 7}, {1, 3}, {2, 4}}, 0, 10) == Approx(5)); // [1,4] and [5,7]
    CHECK(covered_seconds({{1, 3}, {2, 4}, {5, 7}}, 3.5, 6) == Approx(1.5));
    CHECK(covered_seconds({{1, 9}, {2, 3}}, 0, 10) == Approx(8));
}

TEST_CASE("a suite GPU's busy time is the union of its runs' logged holds, read as the log grows; waits are apart",
          "[cli][suite]")
{
    TempDir dir;
    std::filesystem::path log = dir / "GPU-x.measuring";
    SuiteGpuUse use(log);
    use.refresh(); // no log yet: nothing measured
    CHECK(use.busy_s(0, 100) == 0);

    append(log, format_measuring_hold({11, 10, 12, 0, "baselines"}));
    append(log, format_measuring_hold({12, 12.5, 14, 1.5, "variant"}));
    std::string torn = format_measuring_hold({11, 15, 16, 0.25, "variant"});
    append(log, torn.substr(0, 9)); // mid-write
    use.refresh();
    CHECK(use.holds() == 2);
    CHECK(use.busy_s(0, 100) == Approx(3.5));
    CHECK(use.busy_s(11, 13) == Approx(1.5)); // clipped to the window
    CHECK(use.lock_wait_s(0, 100) == Approx(1.5));

    append(log, torn.substr(9));               // the rest of that line arrives
    append(log, "garbage line\n");
    append(log, format_measuring_hold({13, 11, 13, 0, "variant"})); // out of order: another shard's worker
    use.refresh();
    CHECK(use.holds() == 4);
    CHECK(use.busy_s(0, 100) == Approx(5)); // [10,14] and [15,16]
    CHECK(use.lock_wait_s(0, 100) == Approx(1.75));
    CHECK(use.lock_wait_s(13, 100) == Approx(0.25)); // waits before holds that began in the window
}

TEST_CASE("a suite GPU is held while at least one of its runs has it", "[cli][suite]")
{
    TempDir dir;
    SuiteGpuUse use(dir / "GPU-y.measuring");
    use.run_started("a", 0);
    use.run_started("b", 2);
    use.run_ended("a", 5);
    CHECK(use.held_s(0, 10) == Approx(10)); // b still runs: counted until the end of the window
    use.run_ended("b", 6);
    use.run_started("c", 8);
    use.run_ended("c", 9);
    CHECK(use.held_s(0, 10) == Approx(7));
    CHECK(use.held_s(5.5, 8.5) == Approx(1));
    use.run_ended("unknown", 3); // never started here: ignored
    CHECK(use.held_s(0, 10) == Approx(7));
}
