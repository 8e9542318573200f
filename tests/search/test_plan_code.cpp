// The two-phase step in the search (search_plans.cpp): plans recorded with their candidates, the
// determinism contract across a stop or a kill between the phases, and the knowledge base's
// technique statistics.
#include "kf_catch.hpp"

#include <csignal>
#include <set>

#include <sys/wait.h>
#include <unistd.h>

#include "agents/call_record_json.hpp"
#include "archive/knowledge_base.hpp"
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

// Runs `options` in a child process that dies by SIGKILL right after the `nth` plan is stored.
void run_killed_after_plan(const std::filesystem::path& path, const HarnessOptions& options, int nth)
{
    std::fflush(nullptr);
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        HarnessOptions doomed = options;
        int stored = 0;
        doomed.on_plan_stored = [&](uint64_t) {
            if (++stored == nth)
                ::raise(SIGKILL);
        };
        try {
            run_session(path, doomed);
        } catch (...) {
            ::_exit(3);
        }
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    REQUIRE(WTERMSIG(status) == SIGKILL);
}

// The planner prompts of the plans the saved state holds for items not recorded yet.
std::vector<std::string> pending_plan_prompts(const std::filesystem::path& path)
{
    Archive archive = Archive::open(path, OpenMode::read_only);
    std::vector<std::string> prompts;
    auto state = archive.search_state("loop");
    REQUIRE(state);
    for (const auto& item : (*state)["pending"]) {
        const Json& done = item.value("plan_done", Json());
        if (done.is_null())
            continue;
        auto call = archive.llm_call(done["calls"].front().get<int64_t>());
        REQUIRE(call);
        prompts.push_back(call->request.dump());
    }
    return prompts;
}

int64_t count_prompt(const std::filesystem::path& path, const std::string& request)
{
    Archive archive = Archive::open(path, OpenMode::read_only);
    int64_t count = 0;
    for (const auto& call : archive.llm_calls(100000, CallText::include))
        count += call.purpose == CallPurpose::plan && call.request.dump() == request;
    return count;
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
    HarnessOptions options = planned_run(40, 0.5);
    run_session(dir / "run.kforge", options);
    int64_t plans = count_calls(dir / "run.kforge", CallPurpose::plan);
    int64_t direct = count_calls(dir / "run.kforge", CallPurpose::propose);
    CHECK(plans > 5);
    CHECK(direct > 5);
    CHECK(count_calls(dir / "run.kforge", CallPurpose::code) <= plans);
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
                CHECK(count_prompt(path, request) == count_prompt(dir / "whole.kforge", request));
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

namespace {

// The recorded two-phase replies of tests/fixtures/replay (scripts/make-replay-plancode.py), served in
// order: plans to planner calls, code to coder calls.
std::vector<LlmCallRecord> fixture_replies(const std::string& task)
{
    return load_call_records(source_dir() / "tests" / "fixtures" / "replay" / ("plancode_" + task + ".jsonl"));
}

// The settings the replies were written for: one island, every proposal planned, no repair, tune,
// lesson or strategy calls, and 9 proposals (softmax) or 6 (axpy) after the reference and seeds.
HarnessOptions fixture_run(const std::string& task, int parallel)
{
    HarnessOptions options;
    options.config.islands = 1;
    options.config.parallel = parallel;
    options.config.window = 4;
    options.config.plan_share = 1;
    options.config.repair = false;
    options.config.tune = false;
    options.config.max_lessons = 0;
    options.config.meta_every = 100;
    options.config.budgets.candidates = task == "softmax_f32" ? 12 : 9;
    options.config.seed = 5;
    options.fake.max_delay = std::chrono::milliseconds(5);
    options.replay = fixture_replies(task);
    return options;
}

const Task& axpy_task()
{
    static const Task task = load_task(source_dir() / "tasks" / "axpy_f32.json");
    return task;
}

// The tallies of one archive's tries, as the knowledge base sums them.
TechniqueTallies archive_tallies(const std::filesystem::path& path)
{
    Archive archive = Archive::open(path, OpenMode::read_only);
    std::map<int64_t, bool> correct;
    for (const auto& point : archive.fitness_series())
        correct[point.candidate_id] = point.verdict == VerdictKind::correct;
    TechniqueTallies tallies;
    for (const auto& plan : archive.candidate_plans())
        for (const auto& one : technique_tries_of(plan, correct[plan.candidate_id], "", ""))
            tallies[one.technique].add(one);
    return tallies;
}

int64_t archive_tries(const std::filesystem::path& path)
{
    int64_t tries = 0;
    for (const auto& [id, tally] : archive_tallies(path))
        tries += tally.tried;
    return tries;
}

} // namespace

TEST_CASE("recorded two-phase replies: a run killed between the phases and resumed records exactly what an "
          "uninterrupted run records",
          "[search][plan]")
{
    clear_interrupt();
    TempDir dir;
    // A first run, one call at a time, serves the recorded replies in order and records the exact
    // prompts they answered; the runs below replay those by prompt, three calls at a time.
    run_session(dir / "recording.kforge", fixture_run("softmax_f32", 1));
    auto recording = run_fingerprint(dir / "recording.kforge");
    HarnessOptions replay = fixture_run("softmax_f32", 3);
    {
        Archive archive = Archive::open(dir / "recording.kforge", OpenMode::read_only);
        auto calls = archive.llm_calls(100000, CallText::include);
        replay.replay.assign(calls.rbegin(), calls.rend());
        // What the replies were written to exercise.
        auto plans = archive.candidate_plans();
        REQUIRE(plans.size() == 9);
        std::map<PlanStatus, int> statuses;
        bool unknown_kept = false, ignored = false;
        for (const auto& plan : plans) {
            ++statuses[plan.status];
            for (const auto& claimed : plan.techniques)
                unknown_kept = unknown_kept || claimed.choice.id == "new:length-dispatched-kernels";
            ignored = ignored || (plan.followed && !*plan.followed);
            if (plan.status == PlanStatus::failed) {
                auto candidate = archive.candidate(plan.candidate_id);
                CHECK(candidate->evaluation.verdict.kind == VerdictKind::no_code);
                CHECK_THAT(candidate->evaluation.verdict.message,
                           Catch::Contains("The plan could not be read: the reply holds no JSON object"));
                CHECK(plan.call_ids.size() == 2);
            }
        }
        CHECK(statuses[PlanStatus::parsed] == 6);
        CHECK(statuses[PlanStatus::repaired] == 2); // one fixed locally, one by asking again
        CHECK(statuses[PlanStatus::failed] == 1);
        CHECK(unknown_kept);
        CHECK(ignored);
    }
    run_session(dir / "whole.kforge", replay);
    auto whole = run_fingerprint(dir / "whole.kforge");
    INFO("recording vs parallel replay, first difference: " << first_difference(recording, whole));
    CHECK(whole == recording);

    for (int nth : {1, 4, 6}) {
        auto path = dir / fmt::format("killed-{}.kforge", nth);
        run_killed_after_plan(path, replay, nth);
        std::vector<std::string> kept = pending_plan_prompts(path);
        CHECK_FALSE(kept.empty());
        run_session(path, replay);
        auto resumed = run_fingerprint(path);
        INFO("killed after plan " << nth << "; first difference: " << first_difference(whole, resumed));
        CHECK(resumed == whole);
        for (const auto& request : kept)
            CHECK(count_prompt(path, request) == count_prompt(dir / "whole.kforge", request));
    }
}

TEST_CASE("the knowledge base's technique statistics after two runs are the sums of their archives, and the second "
          "run's planner sees them and the first run's schedule",
          "[search][plan]")
{
    clear_interrupt();
    TempDir dir;
    KnowledgeBase knowledge = KnowledgeBase::open(dir / "knowledge.sqlite", KnowledgeAccess::read_write);
    HarnessOptions axpy = fixture_run("axpy_f32", 1);
    axpy.knowledge = &knowledge;
    run_session(dir / "axpy.kforge", axpy, axpy_task());
    HarnessOptions softmax = fixture_run("softmax_f32", 1);
    softmax.knowledge = &knowledge;
    run_session(dir / "softmax.kforge", softmax);

    TechniqueTallies sums = archive_tallies(dir / "softmax.kforge");
    for (const auto& [id, tally] : archive_tallies(dir / "axpy.kforge"))
        sums[id] += tally;
    TechniqueTallies stored = knowledge.technique_tallies("memory");
    REQUIRE(stored.size() == sums.size());
    int64_t tries = 0;
    for (const auto& [id, tally] : sums) {
        INFO("technique " << id);
        REQUIRE(stored.count(id));
        const TechniqueTally& kb = stored[id];
        CHECK(kb.tried == tally.tried);
        CHECK(kb.correct == tally.correct);
        CHECK(kb.improved == tally.improved);
        CHECK(kb.gains == tally.gains);
        CHECK(kb.predictions == tally.predictions);
        CHECK(kb.log_gain_sum == Approx(tally.log_gain_sum).margin(1e-12));
        CHECK(kb.log_predicted_sum == Approx(tally.log_predicted_sum).margin(1e-12));
        tries += tally.tried;
    }
    CHECK(tries >= 12);
    // Handing a run's tries over again (as a resume does) adds nothing: each is kept once.
    std::vector<TechniqueTry> again;
    for (const auto& [run, one] : knowledge.technique_tries())
        if (run == "softmax")
            again.push_back(one);
    CHECK(again.size() == static_cast<size_t>(archive_tries(dir / "softmax.kforge")));
    CHECK(knowledge.add_technique_tries(again, "softmax") == 0);

    // The softmax run's first plan was shown the axpy run's statistics and its schedule (the chain
    // from a seed to its best, through a planned step).
    auto schedules = knowledge.schedules("memory", "softmax", 5);
    REQUIRE(schedules.size() == 1);
    CHECK(schedules[0].task_name == "axpy_f32");
    CHECK(schedules[0].has_techniques());
    Archive archive = Archive::open(dir / "softmax.kforge", OpenMode::read_only);
    auto calls = archive.llm_calls(100000, CallText::include);
    std::reverse(calls.begin(), calls.end());
    auto first_plan = std::find_if(calls.begin(), calls.end(),
                                   [](const LlmCallRecord& call) { return call.purpose == CallPurpose::plan; });
    REQUIRE(first_plan != calls.end());
    std::string user = first_plan->request["user"].get<std::string>();
    CHECK_THAT(user, Catch::Contains("# How these techniques have done on memory tasks"));
    CHECK_THAT(user, Catch::Contains(fmt::format("From {} tries in earlier runs on this machine and 0 tries in this run",
                                                 archive_tries(dir / "axpy.kforge"))));
    CHECK_THAT(user, Catch::Contains("# Schedules that worked on earlier tasks of category memory"));
    CHECK_THAT(user, Catch::Contains("- axpy_f32 (" + fmt::format("{:.2f}x over its start): ", schedules[0].speedup) +
                                         schedules[0].describe()));
}
