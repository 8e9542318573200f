// Time to first result: the first item is recorded as soon as its own evaluations are back, never
// after later ones, and the progress line says what the run waits for.
#include "kf_catch.hpp"

#include <mutex>
#include <optional>

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
    // Times are taken from the first seed's start, so a slow start of the session (a loaded machine)
    // does not count: the reference must be recorded before any seed's evaluation could be back.
    const std::string& reference = softmax_task().reference.source;
    constexpr auto k_seed_delay = std::chrono::milliseconds(1500);
    using Clock = std::chrono::steady_clock;
    std::mutex mutex;
    std::optional<Clock::time_point> first_seed_started, first_recorded;
    options.fake.delay_of = [&](const EvalJob& job) {
        if (job.source == reference)
            return std::chrono::milliseconds(0);
        std::lock_guard lock(mutex);
        if (!first_seed_started)
            first_seed_started = Clock::now();
        return k_seed_delay;
    };
    options.on_recorded = [&](const Candidate& c) {
        std::lock_guard lock(mutex);
        if (first_recorded)
            return;
        CHECK(c.origin == Origin::reference);
        first_recorded = Clock::now();
    };
    run_session(dir / "run.kforge", options);
    REQUIRE(first_seed_started);
    REQUIRE(first_recorded);
    double after_s = std::chrono::duration<double>(*first_recorded - *first_seed_started).count();
    INFO("the first record came " << after_s << " s after the first seed's evaluation started");
    CHECK(after_s < std::chrono::duration<double>(k_seed_delay).count()); // not after the seeds' evaluations
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
