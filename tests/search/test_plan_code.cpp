// The two-phase step in the search (loop/plans.cpp) with the scripted model: plans recorded with
// their candidates, --strategy mix, the determinism contract across a stop or a kill between the
// phases, the suggested technique, and the signal check of a plan's techniques.
#include "kf_catch.hpp"

#include <cmath>
#include <set>

#include "search/plan_harness.hpp"
#include "search/search_harness.hpp"
#include "search/techniques.hpp"
#include "test_support.hpp"
#include "util/interrupt.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

HarnessOptions planned_run(int budget, double share)
{
    HarnessOptions options;
    options.config.islands = 2;
    options.config.parallel = 3;
    options.config.window = 6;
    options.config.generation_size = 3;
    options.config.meta_every = 2;
    options.config.budgets.candidates = budget;
    options.config.seed = 4321;
    options.config.plan_share = share;
    options.scripted.max_delay = std::chrono::milliseconds(10);
    options.scripted.variants = 300;
    options.fake.max_delay = std::chrono::milliseconds(6);
    return options;
}

int64_t count_calls(const std::filesystem::path& path, CallPurpose purpose)
{
    Archive archive = Archive::open(path, OpenMode::read_only);
    int64_t count = 0;
    archive.for_each_llm_call(CallText::omit, [&](const LlmCallRecord& call) { count += call.purpose == purpose; });
    return count;
}

} // namespace

TEST_CASE("a run in two phases records each candidate's plan, claimed techniques and speedups", "[search][plan]")
{
    clear_interrupt();
    TempDir dir;
    HarnessOptions options = planned_run(30, 1.0);
    run_session(dir / "run.kforge", options);
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    auto plans = archive.candidate_plans();
    REQUIRE(plans.size() >= 10);
    std::set<PlanStatus> statuses;
    bool new_technique = false, measured = false;
    for (const auto& plan : plans) {
        statuses.insert(plan.status);
        CHECK(plan.menu == "rowwise");
        CHECK_FALSE(plan.call_ids.empty());
        auto candidate = archive.candidate(plan.candidate_id);
        REQUIRE(candidate);
        CHECK(candidate->origin == Origin::llm);
        if (plan.status == PlanStatus::failed) {
            CHECK_FALSE(plan.plan);
            CHECK(candidate->evaluation.verdict.kind == VerdictKind::no_code);
            CHECK_THAT(candidate->evaluation.verdict.message, Catch::StartsWith("The plan could not be read"));
            continue;
        }
        REQUIRE(plan.plan);
        CHECK(plan.techniques.size() == plan.plan->techniques.size());
        for (const auto& claimed : plan.techniques)
            new_technique = new_technique || !claimed.choice.on_menu;
        if (plan.measured_speedup) {
            measured = true;
            auto parent = archive.candidate(*candidate->parent_id);
            CHECK(*plan.measured_speedup == Approx(*candidate->evaluation.fitness / *parent->evaluation.fitness));
        }
        // The coder's call is the candidate's; the planner's come before it.
        CHECK(candidate->llm_call_id > plan.call_ids.back());
        CHECK(archive.llm_call(*candidate->llm_call_id)->purpose == CallPurpose::code);
        CHECK(archive.llm_call(plan.call_ids.front())->purpose == CallPurpose::plan);
    }
    // The scripted planner's unreadable replies are repaired by the second call.
    CHECK(statuses.count(PlanStatus::parsed));
    CHECK(statuses.count(PlanStatus::repaired));
    CHECK(new_technique);
    CHECK(measured);
    CHECK(count_calls(dir / "run.kforge", CallPurpose::propose) == 0);
}

TEST_CASE("--strategy mix makes a share of proposals in two phases and the rest in one", "[search][plan]")
{
    clear_interrupt();
    TempDir dir;
    // Each fresh proposal is made two-phase by a draw of the share, so one run's count of plans is a
    // binomial draw over its ~34 proposals, and any change in what the search draws before moves
    // it. The seeding change of issue 20 (proposals from the first seed on) took seed 4321 to 4
    // plans in 33 proposals, a far tail; the share itself did not move (seeds 4300-4340: 0.52 of
    // proposals two-phase, 0.53 before). Three runs' totals, ~100 draws, are checked against the
    // share instead: outside 0.3-0.7 is a 4-sigma event.
    int64_t plans = 0, direct = 0;
    for (uint64_t seed : {4321, 4322, 4323}) {
        auto path = dir / fmt::format("run-{}.kforge", seed);
        HarnessOptions options = planned_run(40, 0.5);
        options.config.seed = seed;
        run_session(path, options);
        int64_t run_plans = count_calls(path, CallPurpose::plan);
        plans += run_plans;
        direct += count_calls(path, CallPurpose::propose);
        CHECK(count_calls(path, CallPurpose::code) <= run_plans);
    }
    INFO(plans << " two-phase proposals, " << direct << " direct");
    CHECK(plans > 0.3 * static_cast<double>(plans + direct));
    CHECK(direct > 0.3 * static_cast<double>(plans + direct));
}

TEST_CASE("a two-phase run stopped or killed between the phases and resumed records what an uninterrupted run "
          "records, without asking the planner again",
          "[search][plan]")
{
    clear_interrupt();
    TempDir dir;
    HarnessOptions options = planned_run(36, 0.7);
    run_session(dir / "whole.kforge", options);
    auto whole = run_fingerprint(dir / "whole.kforge");
    int64_t whole_plans = count_calls(dir / "whole.kforge", CallPurpose::plan);

    SECTION("killed by SIGKILL right after a plan is stored")
    {
        for (int nth : {2, 7}) {
            auto path = dir / fmt::format("killed-{}.kforge", nth);
            run_killed_after_plan(path, options, nth);
            // The plan the child stored last is in the saved state: its item waits for its coder.
            std::vector<std::string> kept = pending_plan_prompts(path);
            REQUIRE_FALSE(kept.empty());
            run_session(path, options);
            auto resumed = run_fingerprint(path);
            INFO("killed after plan " << nth << "; first difference: " << first_difference(whole, resumed));
            CHECK(resumed == whole);
            // Resuming went on with the kept plans: each planner prompt was sent as often as in the
            // uninterrupted run, not once more.
            for (const auto& request : kept)
                CHECK(count_plan_prompt(path, request) == count_plan_prompt(dir / "whole.kforge", request));
        }
    }
    SECTION("stopped by Ctrl-C right after a plan is stored: the coder is not asked")
    {
        auto path = dir / "stopped.kforge";
        HarnessOptions first = options;
        int stored = 0;
        first.on_plan_stored = [&](uint64_t) {
            if (++stored == 4)
                request_interrupt();
        };
        SearchOutcome stopped = run_session(path, first);
        clear_interrupt();
        CHECK(stopped.reason == StopReason::interrupted);
        run_session(path, options);
        auto resumed = run_fingerprint(path);
        INFO("first difference: " << first_difference(whole, resumed));
        CHECK(resumed == whole);
        // Every plan of the uninterrupted run was asked for once; plans whose items had not been
        // recorded when the run stopped were kept, not asked again (a stop can still cut a planner
        // call short, which is asked again).
        CHECK(count_calls(path, CallPurpose::plan) >= whole_plans);
        CHECK(count_calls(path, CallPurpose::plan) <= whole_plans + options.config.window);
    }
}

TEST_CASE("the search's suggested technique leans toward what paid off and explores untried ones", "[search][plan]")
{
    const Menu& menu = softmax_menu();
    TechniqueTallies tallies;
    for (const auto& item : menu.items) {
        TechniqueTally& t = tallies[item.id];
        t.tried = 10;
        t.correct = 5;
        t.improved = 1;
    }
    TechniqueTally& good = tallies["vectorize-16b"];
    good.correct = 10;
    good.improved = 8;
    good.gains = 10;
    good.log_gain_sum = 10 * std::log(1.4);
    TechniqueTally& bad = tallies["cache-hints"];
    bad.correct = 0;
    bad.improved = 0;
    tallies.erase("fast-math-intrinsics"); // never tried

    Rng rng(7);
    std::map<std::string, int> exploit, explore;
    for (int i = 0; i < 2000; ++i) {
        exploit[choose_focus(menu, tallies, "memory", 0.0, rng).technique]++;
        explore[choose_focus(menu, tallies, "memory", 1.0, rng).technique]++;
    }
    CHECK(exploit["vectorize-16b"] > 4 * exploit["warp-per-row"]);
    CHECK(exploit["cache-hints"] < exploit["warp-per-row"]);
    CHECK(exploit["cache-hints"] > 0); // fades, never ruled out
    CHECK(explore.size() == 1);        // exploring picks the untried technique
    CHECK(explore["fast-math-intrinsics"] == 2000);
    Rng again(7);
    Focus focus = choose_focus(menu, tallies, "memory", 0.0, again);
    CHECK_THAT(focus.reason, Catch::Contains("memory tasks"));
}

TEST_CASE("whether code shows a technique is read from the menu's signals, comments aside", "[search][plan]")
{
    MenuItem vectorize{"vectorize-16b", "vectorise", "", "", {"float4"}};
    std::string scalar = "// float4 would help\n__global__ void k(const float* x) { float v = x[0]; }";
    std::string vector = "__global__ void k(const float* x) { float4 v = reinterpret_cast<const float4*>(x)[0]; }";
    CHECK(check_applied(&vectorize, vector) == Applied::applied);
    CHECK(check_applied(&vectorize, scalar) == Applied::missing); // only a comment mentions it
    CHECK(check_applied(&vectorize, "") == Applied::unchecked);   // no code at all
    CHECK(check_applied(nullptr, vector) == Applied::unchecked);  // a new technique
    MenuItem silent{"tile-shape-sweep", "sweep", "", "", {}};
    CHECK(check_applied(&silent, vector) == Applied::unchecked);
}
