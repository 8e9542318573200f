// The live progress line: what it says about the run and, with several GPUs, about each GPU.
#include "kf_catch.hpp"

#include "search/progress.hpp"

using namespace kforge;

namespace {

GpuShare share(int rank, int index, double busy_s, double wall_s, int64_t candidates, bool lost = false)
{
    GpuShare s;
    s.usage.gpu = GpuIdentity{"node", rank, index, "GPU-x", "H100"};
    s.usage.busy_s = busy_s;
    s.usage.wall_s = wall_s;
    s.usage.lost = lost;
    s.candidates = candidates;
    return s;
}

} // namespace

TEST_CASE("the progress line shows the GPU's busy share, and each GPU's share and candidates when there are several",
          "[search]")
{
    ProgressSnapshot s;
    s.done = 12;
    s.budget = 40;
    s.in_flight = 3;
    s.verdicts = {{VerdictKind::correct, 9}, {VerdictKind::incorrect, 3}};
    s.best = 1.5;
    s.gpu_busy = 0.8;
    std::string one = render_progress_line(s);
    CHECK_THAT(one, Catch::Contains("12/40 done, 3 in flight") && Catch::Contains("9 correct, 3 failed") &&
                        Catch::Contains("best 1.500x") && Catch::EndsWith("GPU 80%"));

    s.gpus = {share(0, 0, 9, 10, 5), share(0, 1, 7, 10, 4), share(2, 0, 2, 4, 3, true)};
    std::string three = render_progress_line(s);
    CHECK_THAT(three, Catch::EndsWith("3 GPUs 80% [gpu0 90%/5 gpu1 70%/4 r2/gpu0 lost 50%/3]"));
}

TEST_CASE("the progress line counts correct candidates flagged below the roofline floor", "[search]")
{
    ProgressSnapshot s;
    s.done = 5;
    s.budget = 10;
    s.verdicts = {{VerdictKind::correct, 4}, {VerdictKind::incorrect, 1}};
    CHECK_THAT(render_progress_line(s), Catch::Contains("4 correct, 1 failed |"));
    s.flagged = 2;
    CHECK_THAT(render_progress_line(s), Catch::Contains("4 correct, 1 failed, 2 flagged |"));
}
