// The search loop against the fake evaluator: MAP-Elites invariants, island isolation, the
// evaluation policy (confirmations, held-out checks, suspicious timings), duplicates.
#include "kf_catch.hpp"

#include <map>
#include <set>
#include <thread>
#include <atomic>

#include <fmt/format.h>

#include "evaluator/describe.hpp"
#include "search/search_harness.hpp"
#include "test_support.hpp"
#include "util/interrupt.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

HarnessOptions model_run(int budget, uint64_t seed)
{
    HarnessOptions options;
    options.config.islands = 3;
    options.config.parallel = 3;
    options.config.generation_size = 3;
    options.config.migrate_every = 1;
    options.config.meta_every = 2;
    options.config.budgets.candidates = budget;
    options.config.seed = seed;
    options.scripted.max_delay = std::chrono::milliseconds(4);
    options.fake.max_delay = std::chrono::milliseconds(3);
    return options;
}

} // namespace

TEST_CASE("each cell holds one elite, replaced only by a strictly fitter candidate", "[search]")
{
    clear_interrupt();
    TempDir dir;
    HarnessOptions options = model_run(70, 11);
    options.scripted.variants = 400;
    SearchOutcome outcome = run_session(dir / "run.kforge", options);
    CHECK(outcome.reason == StopReason::budget);

    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    std::map<std::pair<int, std::string>, std::vector<ElitePlacement>> by_cell;
    for (const auto& placement : archive.elite_history())
        by_cell[{placement.elite.island, placement.elite.cell}].push_back(placement);
    int replacements = 0;
    for (const auto& [key, placements] : by_cell) {
        int current = 0;
        for (size_t i = 0; i < placements.size(); ++i) {
            current += placements[i].replaced_at ? 0 : 1;
            if (i > 0) {
                INFO("island " << key.first << " cell " << key.second << " placement " << i << ": "
                               << placements[i - 1].elite.fitness << " replaced by " << placements[i].elite.fitness);
                CHECK(placements[i].elite.fitness > placements[i - 1].elite.fitness);
                CHECK(placements[i - 1].replaced_at.has_value());
                ++replacements;
            }
        }
        CHECK(current == 1);
    }
    CHECK(replacements > 0); // the landscape is rich enough to exercise replacement
    for (const auto& elite : archive.elites()) {
        auto candidate = archive.candidate(elite.candidate_id);
        REQUIRE(candidate);
        INFO("elite #" << elite.candidate_id);
        CHECK(candidate->evaluation.verdict.is_correct());
        REQUIRE(candidate->evaluation.fitness);
        CHECK(*candidate->evaluation.fitness == elite.fitness);
        CHECK(descriptor_cell(candidate->evaluation.descriptors) == elite.cell);
    }
}

TEST_CASE("islands share candidates only through ring migration", "[search]")
{
    clear_interrupt();
    for (int migrate_every : {1, 1000}) {
        TempDir dir;
        HarnessOptions options = model_run(80, 5);
        options.config.migrate_every = migrate_every;
        run_session(dir / "run.kforge", options);
        Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
        std::map<int64_t, std::set<int>> placed_on; // candidate -> islands where it was ever an elite
        int foreign = 0;
        for (const auto& placement : archive.elite_history()) {
            auto c = archive.candidate(placement.elite.candidate_id);
            placed_on[c->id].insert(placement.elite.island);
            bool planted = c->origin == Origin::seed || c->origin == Origin::reference;
            if (planted || c->island == placement.elite.island)
                continue;
            ++foreign;
            INFO("#" << c->id << " of island " << c->island << " placed on island " << placement.elite.island);
            CHECK(placement.elite.island == (c->island + 1) % 3); // only to the next island of the ring
        }
        if (migrate_every == 1)
            CHECK(foreign > 0);
        else
            CHECK(foreign == 0);
        for (const auto& point : archive.fitness_series()) {
            auto c = archive.candidate(point.candidate_id);
            if (!c->parent_id)
                continue;
            auto parent = archive.candidate(*c->parent_id);
            INFO("#" << c->id << " (" << origin_name(c->origin) << ", island " << c->island << ") from #"
                     << parent->id << " (island " << parent->island << ")");
            if (c->origin == Origin::repair)
                CHECK(parent->island == c->island);
            else
                CHECK(placed_on[parent->id].count(c->island) == 1);
            for (int64_t inspiration : c->inspiration_ids)
                CHECK(placed_on[inspiration].count(c->island) == 1);
        }
    }
}

TEST_CASE("would-be elites are confirmed, new bests are checked on held-out shapes, suspicious times never "
          "count", "[search]")
{
    clear_interrupt();
    TempDir dir;
    // A held-out failure needs a would-be best that fails: a run has only ~3 new bests among its
    // proposals, so with 25% failing a run has none about 40% of the time, and which run that is
    // moves with any change of what the search draws (the seeding change of issue 20 moved seed 21
    // from 2 failures to 0; over seeds 22-61 both policies gave 31). The invariants are checked on
    // every run; runs go on over further seeds until one has a held-out failure (under 1% that six
    // have none).
    int suspicious = 0, held_out_failed = 0;
    for (uint64_t seed = 21; seed < 27 && held_out_failed == 0; ++seed) {
        INFO("seed " << seed);
        auto path = dir / fmt::format("run-{}.kforge", seed);
        HarnessOptions options = model_run(90, seed);
        options.scripted.suspicious_percent = 15;
        options.scripted.held_out_fail_percent = 25;
        options.scripted.variants = 500;
        std::vector<EvalJob> jobs;
        options.inspect_evaluator = [&](FakeEvaluator& evaluator) { jobs = evaluator.jobs(); };
        SearchOutcome outcome = run_session(path, options);
        Archive archive = Archive::open(path, OpenMode::read_only);

        std::map<std::string, std::vector<EvalJob>> jobs_by_source;
        for (const auto& job : jobs)
            jobs_by_source[job.source].push_back(job);
        std::set<int64_t> ever_elite;
        for (const auto& placement : archive.elite_history())
            ever_elite.insert(placement.elite.candidate_id);

        for (const auto& point : archive.fitness_series()) {
            auto c = archive.candidate(point.candidate_id);
            const Evaluation& e = c->evaluation;
            INFO("#" << c->id << " " << verdict_name(e.verdict.kind));
            if (e.metrics.contains("suspicious_fitness")) {
                ++suspicious;
                CHECK_FALSE(e.fitness.has_value());
                CHECK(ever_elite.count(c->id) == 0);
            }
            if (e.verdict.kind == VerdictKind::held_out_failed) {
                ++held_out_failed;
                CHECK(ever_elite.count(c->id) == 0);
            }
            if (ever_elite.count(c->id) && c->origin != Origin::reference) {
                bool confirmed = false;
                for (const auto& job : jobs_by_source[c->source])
                    confirmed = confirmed || (job.options.confirm && job.options.profile && job.options.only_params);
                CHECK(confirmed);
                CHECK(e.metrics.contains("screen_fitness"));
                CHECK(e.metrics["screen_fitness"].get<double>() != *e.fitness); // the confirmed number is stored
            }
        }
        REQUIRE(outcome.best_id);
        CHECK(outcome.best_held_out == "passed");
        auto best = archive.best_candidate();
        REQUIRE(best);
        CHECK(best->id == *outcome.best_id);
        bool held_out_checked = false;
        for (const auto& job : jobs_by_source[best->source])
            held_out_checked = held_out_checked || job.options.held_out;
        CHECK(held_out_checked);
    }
    CHECK(suspicious > 0);
    CHECK(held_out_failed > 0);
}

TEST_CASE("a duplicate proposal is counted and never evaluated", "[search]")
{
    clear_interrupt();
    TempDir dir;
    HarnessOptions options = model_run(40, 3);
    options.scripted.variants = 6; // six distinct kernels at most
    std::vector<EvalJob> jobs;
    options.inspect_evaluator = [&](FakeEvaluator& evaluator) { jobs = evaluator.jobs(); };
    SearchOutcome outcome = run_session(dir / "run.kforge", options);
    CHECK(outcome.duplicates > 0);
    std::set<std::string> screened;
    for (const auto& job : jobs)
        if (job.ticket % 3 == 0) {
            INFO("screened twice: " << job.source.substr(0, 200));
            CHECK(screened.insert(job.source).second);
        }
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    std::set<std::string> hashes;
    for (const auto& point : archive.fitness_series()) {
        auto c = archive.candidate(point.candidate_id);
        if (!c->source.empty())
            CHECK(hashes.insert(c->source_hash).second);
    }
    CHECK(archive.candidate_count() + outcome.duplicates == 40);
}

// Four model calls in flight answer with the same kernel, newest first: item 3's reply goes to the
// evaluator, then 2's takes over its evaluation, then 1's takes over 2's, then 0's over 1's. The
// evaluation must reach item 0, which records first; it once stopped one step short (at item 2),
// and the search waited for item 0's screen for ever.
TEST_CASE("identical replies that finish newest first are recorded: an evaluation taken over twice reaches the "
          "item that records it",
          "[search][extended]")
{
    // Which pool thread reaches the model first varies, so the chain is not always three long: three
    // runs (each a few seconds) make a stall all but certain to show, had it come back.
    for (uint64_t seed : {5, 6, 7}) {
        clear_interrupt();
        TempDir dir;
        HarnessOptions options = model_run(16, seed);
        options.config.parallel = 4;
        options.config.interrupt_grace_s = 1;
        options.scripted.variants = 1;
        options.scripted.no_code_percent = 0;
        options.scripted.incorrect_percent = 0;
        options.scripted.suspicious_percent = 0;
        options.scripted.held_out_fail_percent = 0;
        options.scripted.max_delay = std::chrono::milliseconds(0);
        options.scripted.release_newest_first = 4;
        // The GPU is slow beside the model's replies (20 ms apart): the first reply's screen is
        // still running when the three earlier items have taken it over one after another.
        options.fake.delay_of = [](const EvalJob& job) {
            return std::chrono::milliseconds(job.source.find("KF_SPEED") != std::string::npos ? 400 : 1);
        };
        std::atomic<bool> done{false};
        SearchOutcome outcome;
        std::thread search([&] {
            outcome = run_session(dir / "run.kforge", options);
            done = true;
        });
        auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!done && std::chrono::steady_clock::now() < give_up)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        bool stalled = !done;
        if (stalled)
            request_interrupt(); // the search waits for an evaluation that never comes: end it to report
        search.join();
        clear_interrupt();
        INFO("seed " << seed << ": the search stalled: " << outcome.reason_text);
        REQUIRE_FALSE(stalled);
        CHECK(outcome.duplicates >= 3);
        Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
        int proposals = 0;
        archive.for_each_candidate([&](const Candidate& c) {
            if (c.source.find("KF_SPEED") != std::string::npos) {
                ++proposals;
                CHECK(c.evaluation.verdict.is_correct());
            }
        });
        CHECK(proposals == 1); // recorded once, evaluated, and every other reply is its duplicate
    }
}

TEST_CASE("the reference and the seeds are planted in every island before any proposal", "[search]")
{
    clear_interrupt();
    TempDir dir;
    HarnessOptions options;
    options.builtin = true;
    options.config.islands = 4;
    options.config.budgets.candidates = 12;
    run_session(dir / "run.kforge", options);
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    size_t planted = 1 + softmax_task().seeds.size();
    for (size_t id = 1; id <= planted; ++id) {
        auto c = archive.candidate(static_cast<int64_t>(id));
        CHECK((c->origin == Origin::reference || c->origin == Origin::seed));
    }
    std::map<int, int> elites_per_island;
    for (const auto& placement : archive.elite_history())
        if (placement.elite.candidate_id <= static_cast<int64_t>(planted))
            ++elites_per_island[placement.elite.island];
    for (int island = 0; island < 4; ++island) {
        INFO("island " << island);
        CHECK(elites_per_island[island] >= 1);
    }
    for (const auto& point : archive.fitness_series())
        if (point.candidate_id > static_cast<int64_t>(planted)) {
            auto c = archive.candidate(point.candidate_id);
            CHECK(c->origin == Origin::builtin);
            CHECK(c->parent_id.has_value()); // every island had elites to start from
        }
}

TEST_CASE("a flagged candidate a user accepted takes its cell when the run resumes, and the lead when fittest",
          "[search]")
{
    clear_interrupt();
    TempDir dir;
    HarnessOptions options = model_run(40, 31);
    options.scripted.suspicious_percent = 30;
    options.scripted.variants = 500;
    run_session(dir / "run.kforge", options);
    int64_t flagged = 0;
    {
        Archive archive = Archive::open(dir / "run.kforge", OpenMode::write);
        std::vector<Candidate> listed = archive.flagged_candidates();
        REQUIRE_FALSE(listed.empty());
        CHECK(archive.flagged_count() == static_cast<int64_t>(listed.size()));
        flagged = listed.front().id;
        for (const auto& elite : archive.elites())
            CHECK(elite.candidate_id != flagged);
        archive.accept_flagged_candidate(flagged, 100.0, Json{{"held_out", "passed"}}, {});
    }
    options.config.budgets.candidates = 44;
    SearchOutcome resumed = run_session(dir / "run.kforge", options);
    REQUIRE(resumed.best_id);
    CHECK(*resumed.best_id == flagged);
    CHECK(resumed.best_fitness == 100.0);
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    bool placed = false;
    for (const auto& elite : archive.elites())
        placed = placed || elite.candidate_id == flagged;
    CHECK(placed);
    CHECK(archive.best_candidate()->id == flagged);

    // Resuming again places nothing twice.
    size_t placements = archive.elite_history().size();
    options.config.budgets.candidates = 44;
    run_session(dir / "run.kforge", options);
    CHECK(Archive::open(dir / "run.kforge", OpenMode::read_only).elite_history().size() == placements);
}

TEST_CASE("a failed model-written candidate gets up to --repairs repair rounds in a row, each from the last",
          "[search]")
{
    clear_interrupt();
    std::map<int, int> deepest; // repairs setting -> the longest chain of repairs seen
    for (int repairs : {0, 1, 2, 3}) {
        TempDir dir;
        HarnessOptions options = model_run(90, 7);
        options.config.repairs = repairs;
        options.scripted.variants = 1000;        // few duplicates: a repair is a new kernel
        options.scripted.incorrect_percent = 50; // and fails as often as not
        run_session(dir / "run.kforge", options);
        Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
        int longest = 0, repaired = 0;
        std::vector<int64_t> ids;
        archive.for_each_candidate([&](const Candidate& c) { ids.push_back(c.id); });
        for (int64_t id : ids) {
            auto c = archive.candidate(id);
            if (c->origin != Origin::repair)
                continue;
            ++repaired;
            // Walk back to the proposal: every link is a repair of the failed candidate before it.
            int chain = 0;
            for (auto at = c; at && at->origin == Origin::repair; at = archive.candidate(*at->parent_id)) {
                ++chain;
                REQUIRE(at->parent_id);
                auto parent = archive.candidate(*at->parent_id);
                INFO("#" << at->id << " repairs #" << parent->id);
                CHECK(parent->evaluation.verdict.kind != VerdictKind::correct);
                CHECK((parent->origin == Origin::llm || parent->origin == Origin::repair));
            }
            longest = std::max(longest, chain);
        }
        INFO("--repairs " << repairs << ": " << repaired << " repairs, longest chain " << longest);
        CHECK(longest <= repairs);
        if (repairs == 0)
            CHECK(repaired == 0);
        deepest[repairs] = longest;
    }
    CHECK(deepest[1] == 1);
    CHECK(deepest[3] >= 2); // a repair that failed again was repaired again
}
