// The search loop: its table of contents, starting and resuming a run, waiting, finishing.
//
// run() is the whole loop in a few lines; every step it names lives in one of the stage files (see
// loop/loop.hpp). Starting a fresh run plants the task's reference and seed kernels as the first
// items (they seed every island) and gives each island its starting strategy text; resuming rebuilds
// the grids from the archive's elite table, the strategy texts from the meta_prompt table, and
// re-issues the items the saved state lists as scheduled but not recorded.
#include "search/loop/loop.hpp"

#include <thread>

#include <fmt/format.h>

#include "evaluator/describe.hpp"
#include "search/knowledge.hpp"
#include "search/meta_prompts.hpp"
#include "search/views.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/log.hpp"

namespace kforge {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t k_max_imported_lessons = 40;
constexpr auto k_orphan_wait = std::chrono::seconds(10); // for interrupted calls to come back

WorkItem seeding_item(ItemKind kind, int seed_index)
{
    WorkItem item;
    item.kind = kind;
    item.island = -1;
    item.seed_index = seed_index;
    return item;
}

} // namespace

SearchLoop::SearchLoop(Archive& archive, const Task& task, const SearchConfig& config, SearchServices& services)
    : m_archive(archive), m_task(task), m_config(config), m_services(services), m_progress(config.progress)
{
    m_config.validate();
    m_config.window = m_config.effective_window(std::max<size_t>(1, m_services.evaluator.gpu_usage().size()));
    if (m_services.models && !m_services.library)
        fail_runtime("internal error: the search has models for lessons but no prompt library");
    m_pool = std::make_unique<WorkerPool>(m_config.parallel);
}

SearchLoop::~SearchLoop()
{
    // Leaving early (an exception): calls still running give up once the interrupt flag is set.
    if (m_pool && m_pool->outstanding() > 0)
        request_interrupt();
    m_pool.reset();
}

SearchOutcome SearchLoop::run()
{
    start();                                   // state, grids, strategies, lessons; first items
    while (!m_flights.empty() && !leaving_now()) {
        wait_for_work();                       // proposals and evaluations come back
        while (!m_flights.empty() && head_ready(m_flights.begin()->second))
            record_head();                     // record, place, adapt, learn, schedule, save
        dispatch_new();                        // start what was scheduled
        m_progress.tick(snapshot());
    }
    finish();                                  // final held-out check, run state, outcome
    return m_outcome;
}

void SearchLoop::start()
{
    m_started = Clock::now();
    m_baselines = m_services.evaluator.baselines();
    if (!m_baselines.empty())
        m_archive.insert_baselines(m_baselines);
    m_hardware = hardware_facts(m_services.evaluator.environment());
    m_gpu_session = m_archive.next_gpu_session();
    m_gpu_count = m_services.evaluator.gpu_usage().size();
    if (m_services.knowledge) {
        size_t imported = import_knowledge(m_archive, *m_services.knowledge, m_task, k_max_imported_lessons);
        if (imported > 0)
            log_info("drew {} lesson{} from the knowledge base {}", imported, imported == 1 ? "" : "s",
                     m_services.knowledge->path().string());
    }
    m_lessons = m_archive.lessons();
    start_techniques();
    m_verdicts = m_archive.verdict_counts();
    m_flagged = m_archive.flagged_count();
    LlmUsage spent = m_archive.llm_usage_total(); // model calls only, not the builtin proposer's
    m_ledger.start(spent.calls, spent.cost_usd);

    if (auto saved = m_archive.search_state(k_loop_state_key))
        restore(*saved);
    else
        start_fresh();
    m_archive.set_run_state("running");
    m_archive.atomically([&] {
        schedule();
        save_state();
    });
    dispatch_new();
}

void SearchLoop::start_fresh()
{
    if (m_archive.candidate_count() > 0)
        fail_input("{}: the archive holds candidates but no search state; it was not written by `kforge optimize`",
                   m_archive.path().string());
    auto islands = static_cast<size_t>(m_config.islands);
    m_state.rng = Rng(m_config.seed);
    m_state.island_best.assign(islands, 0.0);
    m_state.follow_ups.resize(islands);
    m_grids.assign(islands, IslandGrid());
    m_archive.atomically([&] {
        for (int island = 0; island < m_config.islands; ++island) {
            MetaPrompt prompt;
            prompt.island = island;
            prompt.text = initial_strategy(island);
            prompt.id = m_archive.insert_meta_prompt(prompt);
            m_meta_prompts[prompt.id] = prompt;
            m_active_meta.push_back(prompt.id);
        }
    });
    // A reference kernel is the first candidate; a PyTorch program is no kernel and starts nothing.
    if (!m_task.is_torch())
        m_state.requests.push_back(seeding_item(ItemKind::reference, 0));
    for (size_t i = 0; i < m_task.seeds.size(); ++i)
        m_state.requests.push_back(seeding_item(ItemKind::seed, static_cast<int>(i)));
    if (m_services.builtin) {
        if (!m_task.is_torch())
            m_services.builtin->remember(m_task.reference.source);
        for (const auto& seed : m_task.seeds)
            m_services.builtin->remember(seed.source);
    }
}

void SearchLoop::restore(const Json& saved)
{
    std::string label = m_archive.path().string() + ": search state";
    m_state = LoopState::from_json(saved, m_config.islands, label);
    // A state saved before search seconds were kept: the sessions' GPU time stands in (waits included).
    m_searched_before = m_state.searched_s.value_or(0);
    if (!m_state.searched_s)
        for (const auto& gpu : m_archive.gpu_totals())
            m_searched_before = std::max(m_searched_before, gpu.usage.wall_s);
    m_grids.assign(static_cast<size_t>(m_config.islands), IslandGrid());
    for (const auto& elite : m_archive.elites()) {
        if (elite.island < 0 || elite.island >= m_config.islands)
            fail_input("{}: an elite on island {}, but the run has {} islands", label, elite.island, m_config.islands);
        auto candidate = m_archive.candidate(elite.candidate_id);
        if (!candidate)
            fail_input("{}: elite candidate {} is missing", label, elite.candidate_id);
        bool planted = candidate->origin == Origin::seed || candidate->origin == Origin::reference;
        m_grids[static_cast<size_t>(elite.island)].place(
            {elite.candidate_id, elite.fitness, elite.cell, planted ? -1 : candidate->island});
    }
    m_active_meta.assign(static_cast<size_t>(m_config.islands), 0);
    for (const auto& prompt : m_archive.meta_prompts(MetaPromptFilter::all)) {
        m_meta_prompts[prompt.id] = prompt;
        if (prompt.active && prompt.island >= 0 && prompt.island < m_config.islands)
            m_active_meta[static_cast<size_t>(prompt.island)] = prompt.id;
    }
    for (int island = 0; island < m_config.islands; ++island)
        if (m_active_meta[static_cast<size_t>(island)] == 0)
            fail_input("{}: island {} has no strategy text", label, island);
    if (m_services.builtin)
        for (const auto& point : m_archive.fitness_series())
            if (auto candidate = m_archive.candidate(point.candidate_id); candidate && !candidate->source.empty())
                m_services.builtin->remember(candidate->source);
    // A run stopped for lack of progress gets a fresh allowance; any other reason continues as is.
    if (m_state.stop == StopReason::patience)
        m_state.stale_generations = 0;
    m_state.stop = StopReason::none;
    for (const auto& item : m_state.pending) {
        Flight flight;
        flight.item = item;
        m_ledger.reserve(item);
        m_flights.emplace(item.seq, std::move(flight));
        m_undispatched.push_back(item.seq);
    }
    if (!m_state.pending.empty())
        log_info("resuming: {} item{} that were in flight start again", m_state.pending.size(),
                 m_state.pending.size() == 1 ? "" : "s");
    place_accepted();
}

void SearchLoop::notice_interrupt()
{
    if (!interrupt_requested() || m_stop == StopReason::interrupted)
        return;
    m_stop = StopReason::interrupted;
    m_interrupt_deadline = Clock::now() + milliseconds(static_cast<int64_t>(m_config.interrupt_grace_s * 1000));
    m_progress.event(fmt::format("stopping: recording work that finishes within {:.0f} s; the run can be resumed",
                                 m_config.interrupt_grace_s));
}

void SearchLoop::wait_for_work()
{
    notice_interrupt();
    CandidateEvaluator& evaluator = m_services.evaluator;
    std::vector<PoolResult> results = m_pool->take(milliseconds(0));
    // collect() returns at once when the evaluator has nothing left to do, finished results or not.
    milliseconds wait = !results.empty() ? milliseconds(0) : m_pool->outstanding() > 0 ? milliseconds(10) : milliseconds(100);
    std::vector<EvalResult> evaluations = evaluator.collect(wait);
    if (results.empty() && evaluations.empty() && evaluator.pending() == 0) {
        results = m_pool->take(milliseconds(100));
        if (results.empty() && m_pool->outstanding() == 0)
            std::this_thread::sleep_for(milliseconds(10)); // nothing is running: never spin
    }
    for (auto& result : results)
        take_pool_result(std::move(result));
    for (auto& evaluation : evaluations)
        take_evaluation(std::move(evaluation));
}

bool SearchLoop::leaving_now() const
{
    if (m_stop != StopReason::interrupted)
        return false;
    // Items are recorded in order: once the oldest cannot finish, nothing after it can be recorded.
    const Flight& head = m_flights.begin()->second;
    return Clock::now() >= *m_interrupt_deadline || head.interrupted || !head.dispatched || head.phase2_held;
}

void SearchLoop::finish()
{
    m_progress.finish();
    if (m_stop == StopReason::none)
        m_stop = StopReason::exhausted;
    // Model calls cut off by Ctrl-C still come back; their records belong in the archive.
    auto until = Clock::now() + k_orphan_wait;
    while (m_pool->outstanding() > 0 && Clock::now() < until)
        for (auto& result : m_pool->take(milliseconds(100)))
            take_pool_result(std::move(result));
    m_outcome.dropped = static_cast<int64_t>(m_flights.size());
    if (m_stop != StopReason::interrupted)
        verify_final_best();
    m_state.stop = m_stop;
    bool resumable_stop = m_stop == StopReason::interrupted || m_stop == StopReason::calls_failing;
    m_archive.atomically([&] {
        save_state();
        m_archive.set_run_state(resumable_stop ? "interrupted" : "finished");
    });
    for (const auto& [seq, flight] : m_flights)
        m_ledger.add_orphans(flight.calls);

    m_outcome.reason = m_stop;
    m_outcome.reason_text = describe_stop(m_stop, m_config.budgets);
    m_outcome.best_id = m_state.best_id;
    if (m_state.best_id) {
        m_outcome.best_fitness = m_state.best_fitness;
        auto it = m_state.held_out.find(*m_state.best_id);
        m_outcome.best_held_out = it == m_state.held_out.end() ? "" : it->second;
    }
    m_outcome.seconds = elapsed_s();
    m_outcome.search_seconds = search_s();
    m_outcome.gpu_busy = m_services.evaluator.gpu_busy_fraction();
    m_outcome.gpus = gpu_shares();
    LlmUsage usage = m_archive.llm_usage_total();
    m_outcome.cost_usd = usage.cost_usd;
    m_outcome.calls = m_ledger.spent_calls();
}

void SearchLoop::verify_final_best()
{
    if (!m_state.best_id || m_state.held_out.count(*m_state.best_id))
        return;
    auto best = m_archive.candidate(*m_state.best_id);
    if (!best)
        return;
    log_info("checking the best candidate #{} on the held-out shapes", best->id);
    EvalJob job;
    job.ticket = k_final_ticket;
    job.label = best->source_hash;
    job.source = best->source;
    job.options.held_out = true;
    job.options.only_params = best->evaluation.best_params;
    job.options.task_code = best->origin == Origin::reference;
    m_services.evaluator.submit(job);
    while (!m_final_check && !interrupt_requested())
        for (auto& result : m_services.evaluator.collect(milliseconds(200)))
            take_evaluation(std::move(result));
    if (!m_final_check)
        return;
    bool passed = m_final_check->verdict.is_correct();
    m_state.held_out[best->id] = passed ? "passed" : "failed";
    if (!passed)
        log_warn("the best candidate #{} FAILED on the held-out shapes: {}", best->id, m_final_check->verdict.message);
}

// What the oldest item in flight (every record waits for it) still needs, and what the evaluator is
// busy with meanwhile.
std::string SearchLoop::waiting_for() const
{
    if (m_flights.empty())
        return "";
    const Flight& head = m_flights.begin()->second;
    std::string what = head.item.kind == ItemKind::reference ? "the reference"
                       : head.item.kind == ItemKind::seed    ? fmt::format("seed {}", head.item.seed_index + 1)
                                                             : fmt::format("item {} ({})", head.item.seq,
                                                                           item_kind_name(head.item.kind));
    std::string text;
    if (!head.dispatched)
        text = "scheduling " + what;
    else if (!head.proposed)
        text = fmt::format("model calls ({} in flight; the oldest is {})", m_pool->outstanding(), what);
    else if (head.held_out_submitted && !head.held_out)
        text = "checking " + what + " on the held-out shapes";
    else if (head.confirm_submitted && !head.confirm)
        text = "confirming " + what;
    else if (!head.source.empty() && !head.duplicate && !head.screen)
        text = "screening " + what;
    else
        return "";
    std::string busy = m_services.evaluator.activity();
    return busy.empty() ? text : text + " (" + busy + ")";
}

double SearchLoop::elapsed_s() const
{
    return std::chrono::duration<double>(Clock::now() - m_started).count();
}

// On a GPU shared with other runs, the time this run's worker waited while another run measured
// is not its own: --time counts the session's time without it, so a run buys the same search
// shared as alone (docs/suite.md, "Several runs per GPU").
double SearchLoop::search_s() const
{
    double waited = 0;
    for (const auto& gpu : m_services.evaluator.gpu_usage())
        waited += gpu.lock_wait_s;
    return std::max(0.0, elapsed_s() - waited);
}

ProgressSnapshot SearchLoop::snapshot() const
{
    ProgressSnapshot s;
    s.done = m_state.recorded_candidates;
    s.budget = m_config.budgets.candidates;
    s.in_flight = m_flights.size();
    s.verdicts = m_verdicts;
    s.duplicates = m_state.duplicates;
    s.flagged = m_flagged;
    if (m_state.best_id)
        s.best = m_state.best_fitness;
    s.cost_usd = m_ledger.spent_cost();
    s.elapsed_s = elapsed_s();
    s.gpu_busy = m_services.evaluator.gpu_busy_fraction();
    if (m_gpu_count > 1)
        s.gpus = gpu_shares();
    s.waiting_for = waiting_for();
    if (m_outcome.recorded > 0) {
        double per_candidate = s.elapsed_s / static_cast<double>(m_outcome.recorded);
        double eta = per_candidate * static_cast<double>(std::max<int64_t>(0, s.budget - s.done));
        if (m_config.budgets.max_seconds)
            eta = std::min(eta, std::max(0.0, *m_config.budgets.max_seconds - search_s()));
        s.eta_s = eta;
    }
    return s;
}

std::vector<GpuShare> SearchLoop::gpu_shares() const
{
    std::vector<GpuShare> shares;
    for (auto& usage : m_services.evaluator.gpu_usage()) {
        auto counted = m_candidates_per_gpu.find(usage.gpu.label());
        shares.push_back(GpuShare{usage, counted == m_candidates_per_gpu.end() ? 0 : counted->second});
    }
    return shares;
}

SearchOutcome run_search(Archive& archive, const Task& task, const SearchConfig& config, SearchServices& services)
{
    try {
        SearchLoop loop(archive, task, config, services);
        return loop.run();
    } catch (...) {
        try {
            archive.set_run_state("failed");
        } catch (const std::exception& e) {
            log_warn("could not mark the run as failed: {}", e.what());
        }
        throw;
    }
}

} // namespace kforge
