// The live line of `kforge suite run` (suite/progress.hpp): problems done, running and waiting,
// each GPU's busy share and what it runs, the running fast_1, dollars and elapsed time.
#include "kf_catch.hpp"

#include "suite/progress.hpp"

using namespace kforge;

TEST_CASE("the suite's live line says what is done, running and waiting, each GPU's share and runs, fast_1 and "
          "dollars",
          "[cli][suite]")
{
    SuiteStatus s;
    s.total = 12;
    s.done = 5;
    s.failed = 1;
    s.running = 2;
    s.importing = 1;
    s.waiting = 5;
    s.fast1 = 3;
    s.correct = 4;
    s.cost_usd = 1.234;
    s.elapsed_s = 125;
    s.lanes = {{"gpu0", {{"quick_gelu", 42}, {"sum_squares", 3}}, 0.914}, {"gpu1", {}, 0.5}};
    std::string line = render_suite_status(s);
    CHECK(line == "suite: 5/12 done (1 failed), 2 running, 5 waiting (1 importing) | gpu0 91% quick_gelu 42s + "
                  "sum_squares 3s, gpu1 50% idle | fast_1 3/5 (4 correct) | $1.23 | 2m05s");

    s.stopping = true;
    s.failed = 0;
    s.importing = 0;
    s.lanes.clear();
    std::string stopping = render_suite_status(s);
    CHECK_THAT(stopping, Catch::StartsWith("suite: 5/12 done, 2 running, 5 waiting | fast_1 3/5"));
    CHECK_THAT(stopping, Catch::EndsWith("stopping (Ctrl-C again to leave at once)"));
}
