// Time to first result: the first item is recorded as soon as its own evaluations are back, never
// after later ones, and the progress line says what the run waits for.
#include "kf_catch.hpp"

#include <atomic>

#include "search/progress.hpp"
#include "search/search_harness.hpp"
#include "test_support.hpp"
#include "util/interrupt.hpp"

using namespace kforge;
using namespace kforge::test;

TEST_CASE("the reference is recorded while the seeds are still being evaluated", "[search]")
{
    clear_interrupt();
    TempDir dir;
    HarnessOptions options;
    options.builtin = true;
    options.config.islands = 2;
    options.config.budgets.candidates = 6;
    // The seeds' evaluations are slow; the reference's (screen, confirmation, held-out check) are not.
    const std::string& reference = softmax_task().reference.source;
    options.fake.delay_of = [&](const EvalJob& job) {
        return std::chrono::milliseconds(job.source == reference ? 0 : 1500);
    };
    auto started = std::chrono::steady_clock::now();
    std::atomic<double> first_recorded_s{-1};
    options.on_recorded = [&](const Candidate& c) {
        if (first_recorded_s >= 0)
            return;
        CHECK(c.origin == Origin::reference);
        first_recorded_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    };
    run_session(dir / "run.kforge", options);
    INFO("first record after " << first_recorded_s << " s");
    CHECK(first_recorded_s >= 0);
    CHECK(first_recorded_s < 1.0); // not after the seeds' 1.5 s evaluations
}

TEST_CASE("the progress line says what the next record waits for", "[search]")
{
    ProgressSnapshot s;
    s.budget = 64;
    s.in_flight = 3;
    CHECK(render_progress_line(s).find("waiting for") == std::string::npos);
    s.waiting_for = "screening the reference (compiling 6 variants, 2 jobs waiting for the GPU)";
    CHECK_THAT(render_progress_line(s),
               Catch::Contains("| waiting for: screening the reference (compiling 6 variants, 2 jobs waiting for the GPU)"));
}
