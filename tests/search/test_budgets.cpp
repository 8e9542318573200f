// Budgets: candidates, model calls and dollars are never exceeded, work in flight counts, and the
// stop conditions (patience, an exhausted proposer) end a run with their reason.
#include "kf_catch.hpp"

#include "search/budget.hpp"
#include "search/search_harness.hpp"
#include "test_support.hpp"
#include "util/interrupt.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

HarnessOptions budget_run(int budget)
{
    HarnessOptions options;
    options.config.islands = 2;
    options.config.parallel = 4;
    options.config.generation_size = 3;
    options.config.budgets.candidates = budget;
    options.config.seed = 17;
    options.scripted.max_delay = std::chrono::milliseconds(5);
    options.scripted.variants = 500;
    return options;
}

int64_t model_calls(const Archive& archive)
{
    int64_t calls = 0;
    for (const auto& usage : archive.llm_usage_by_model())
        if (usage.provider != "builtin")
            calls += usage.calls;
    return calls;
}

} // namespace

TEST_CASE("a reservation counts until its item settles at the real cost", "[search]")
{
    Ledger ledger;
    ledger.start(3, 0.5);
    WorkItem item;
    item.kind = ItemKind::propose;
    item.reserved_calls = 2;
    item.reserved_cost_usd = 0.25;
    ledger.reserve(item);
    CHECK(ledger.committed_calls() == 5);
    CHECK(ledger.committed_cost() == Approx(0.75));
    Budgets budgets;
    budgets.candidates = 100;
    budgets.max_cost_usd = 0.9;
    BudgetUse use{10, 1.0, 0};
    CHECK(budget_blocks(budgets, use, ledger, item) == StopReason::max_cost); // 0.75 + 0.25 > 0.9
    LlmCallRecord call;
    call.provider = "openai";
    call.cost_usd = 0.05;
    ledger.settle(item, {call});
    CHECK(ledger.committed_calls() == 4);
    CHECK(ledger.committed_cost() == Approx(0.55));
    CHECK(budget_blocks(budgets, use, ledger, item) == StopReason::none);
    budgets.max_calls = 5;
    CHECK(budget_blocks(budgets, use, ledger, item) == StopReason::max_calls); // 4 + 2 > 5
    use.candidates = 100;
    CHECK(budget_blocks(budgets, use, ledger, item) == StopReason::budget);
    WorkItem lesson;
    lesson.kind = ItemKind::analyst;
    budgets.max_calls.reset();
    CHECK(budget_blocks(budgets, use, ledger, lesson) == StopReason::none); // lessons are not candidates
}

TEST_CASE("--budget is never exceeded, candidates in flight counted", "[search]")
{
    clear_interrupt();
    for (bool builtin : {true, false}) {
        TempDir dir;
        HarnessOptions options = budget_run(23);
        options.builtin = builtin;
        int64_t screened = 0;
        options.inspect_evaluator = [&](FakeEvaluator& evaluator) {
            for (const auto& job : evaluator.jobs())
                screened += job.ticket % 3 == 0 ? 1 : 0;
        };
        SearchOutcome outcome = run_session(dir / "run.kforge", options);
        Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
        INFO((builtin ? "builtin" : "model") << " run: " << outcome.reason_text);
        CHECK(outcome.reason == StopReason::budget);
        CHECK(archive.candidate_count() + outcome.duplicates == 23);
        CHECK(screened <= 23);
    }
}

TEST_CASE("--max-calls is never exceeded: calls in flight are counted before another starts", "[search]")
{
    clear_interrupt();
    TempDir dir;
    HarnessOptions options = budget_run(200);
    options.config.budgets.max_calls = 15;
    options.config.meta_every = 1; // meta-prompt and lesson calls count too
    SearchOutcome outcome = run_session(dir / "run.kforge", options);
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    CHECK(outcome.reason == StopReason::max_calls);
    CHECK(model_calls(archive) <= 15);
    CHECK(model_calls(archive) >= 10); // the limit is used, not avoided
}

TEST_CASE("--max-cost is never exceeded: calls in flight count at their estimate", "[search]")
{
    clear_interrupt();
    TempDir dir;
    HarnessOptions options = budget_run(400);
    options.scripted.cost_per_call = 0.04;
    options.cost.max_output_tokens = 1000;
    options.cost.output_usd_per_token = 0.06 / 1000; // at least $0.06 a call reserved
    options.config.budgets.max_cost_usd = 1.0;
    SearchOutcome outcome = run_session(dir / "run.kforge", options);
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    double spent = archive.llm_usage_total().cost_usd;
    INFO("spent $" << spent << " in " << model_calls(archive) << " calls");
    CHECK(outcome.reason == StopReason::max_cost);
    CHECK(spent <= 1.0 + 1e-9);
    CHECK(spent >= 0.8);
    CHECK(outcome.cost_usd == Approx(spent));
}

TEST_CASE("a resumed run may spend only what its extended budget allows", "[search]")
{
    clear_interrupt();
    TempDir dir;
    HarnessOptions options = budget_run(400);
    options.scripted.cost_per_call = 0.05;
    options.cost.max_output_tokens = 1000;
    options.cost.output_usd_per_token = 0.05 / 1000;
    options.config.budgets.max_cost_usd = 0.5;
    run_session(dir / "run.kforge", options);
    options.config.budgets.max_cost_usd = 0.8;
    SearchOutcome second = run_session(dir / "run.kforge", options);
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    CHECK(second.reason == StopReason::max_cost);
    CHECK(archive.llm_usage_total().cost_usd <= 0.8 + 1e-9);
    CHECK(archive.llm_usage_total().cost_usd > 0.5);
}

TEST_CASE("--patience stops a run whose best stopped improving", "[search]")
{
    clear_interrupt();
    TempDir dir;
    HarnessOptions options;
    options.builtin = true;
    options.config.islands = 2;
    options.config.generation_size = 2;
    options.config.budgets.candidates = 5000;
    options.config.budgets.patience = 2;
    SearchOutcome outcome = run_session(dir / "run.kforge", options);
    CHECK(outcome.reason == StopReason::patience);
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    CHECK(archive.candidate_count() < 5000);
}

TEST_CASE("a proposer that keeps producing nothing new ends the run", "[search]")
{
    clear_interrupt();
    TempDir dir;
    HarnessOptions options = budget_run(300);
    options.scripted.variants = 2;
    SearchOutcome outcome = run_session(dir / "run.kforge", options);
    CHECK(outcome.reason == StopReason::exhausted);
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    CHECK(archive.run_info().state == "finished");
}
