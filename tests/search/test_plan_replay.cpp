// The two-phase step with recorded replies (tests/fixtures/replay/plancode_*.jsonl, written as a
// strong model answers kforge's prompts): the determinism contract across a kill between the
// phases, and the knowledge base's technique statistics and schedules across two runs.
#include "kf_catch.hpp"

#include "agents/call_record_json.hpp"
#include "archive/knowledge_base.hpp"
#include "search/plan_harness.hpp"
#include "search/search_harness.hpp"
#include "search/techniques.hpp"
#include "test_support.hpp"
#include "util/interrupt.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

// The recorded two-phase replies of tests/fixtures/replay (scripts/replay/plancode.py), served in
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
    options.config.repairs = 0;
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
            CHECK(count_plan_prompt(path, request) == count_plan_prompt(dir / "whole.kforge", request));
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
