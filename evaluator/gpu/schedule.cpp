// The GPU evaluator's GPU threads and its scheduling policy (gpu/evaluator.hpp states the policy;
// sweep_board.hpp the sharing of one sweep between GPUs).
//
// One thread per GPU slot starts the slot's worker and then loops: wait until there is work this
// GPU may take, take the lowest ticket among the waiting jobs and the running sweeps it may help
// with, run it, and tell the other threads it is free again. A job runs whole on its slot
// (gpu/slot_evaluate.cpp); between the variants of its sweep the slot serves any earlier job that
// no idle GPU could take, and while it is away its sweep's remaining variants and final step are
// open to idle GPUs of its model, so the job the search records next never waits behind later ones
// nor behind a busy owner. Every decision is made with the evaluator's mutex held, over the slots'
// states and the queue of compiled jobs; the GPU work itself runs outside it. A GPU that is lost
// gives back what it held (its job to the head of the queue, a helper's variant or final step to
// the sweep) and its thread ends; the others carry on.
#include <algorithm>
#include <cstddef>
#include <exception>

#include <fmt/format.h>

#include "evaluator/gpu/evaluator.hpp"
#include "evaluator/gpu/prepare.hpp"
#include "util/log.hpp"

namespace kforge {
namespace {

// For the debug log's timeline lines (util/log.hpp, scripts/timeline.py).
const char* job_kind(const EvalOptions& options)
{
    return options.confirm ? "confirm" : options.held_out ? "held_out" : "screen";
}

} // namespace

void GpuEvaluator::slot_loop(size_t index, Json setup)
{
    GpuSlot& slot = *m_slots[index].slot;
    std::string failure;
    try {
        slot.start(setup);
    } catch (const std::exception& e) {
        failure = e.what();
    }
    {
        std::lock_guard lock(m_mutex);
        m_slots[index].state = failure.empty() ? SlotState::ready : SlotState::failed;
        m_slots[index].failure = failure;
        m_slots[index].idle_since = EvalClock::now();
    }
    m_work_ready.notify_all();
    while (failure.empty()) {
        PreparedJob prepared;
        std::shared_ptr<SweepBoard> board;
        {
            std::unique_lock lock(m_mutex);
            std::optional<size_t> next;
            auto idle_from = EvalClock::now();
            bool compiles_queued = m_pool->queued() > 0;
            m_work_ready.wait(lock, [&] {
                if (m_stopping)
                    return true;
                next = job_for(index);
                board = sweep_to_help(index);
                return next || board;
            });
            if (m_stopping)
                break;
            double waited = std::chrono::duration<double>(EvalClock::now() - idle_from).count();
            log_debug("{} waited {:.3f} s for work ({} job{} to compile, {} compiled{})", slot.identity().label(), waited,
                      m_incoming.size(), m_incoming.size() == 1 ? "" : "s", m_compiled.size(),
                      compiles_queued ? ", compiles queued for a worker" : "");
            if (compiles_queued)
                note_compile_starved(waited);
            // Lowest ticket first, between waiting jobs and running sweeps alike: a later job taken
            // while the variants of an earlier sweep wait for its busy GPU holds up the earlier one.
            if (next && board && board->ticket() < m_compiled[*next].job.ticket)
                next.reset();
            if (next) {
                board.reset();
                prepared = std::move(m_compiled[*next]);
                m_compiled.erase(m_compiled.begin() + static_cast<std::ptrdiff_t>(*next));
            }
            m_slots[index].busy = true;
        }
        m_work_ready.notify_all(); // the next idle GPU in line may now take a job
        try {
            if (board)
                help_sweep(index, *board);
            else
                run_job(index, prepared);
        } catch (const GpuLostError& e) {
            log_warn("{}; {} goes back to the other GPUs", e.what(), board ? "the sweep variant it ran" : "its candidate");
            {
                std::lock_guard lock(m_mutex);
                m_slots[index].state = SlotState::lost;
                m_slots[index].busy = false;
                slot.mark_lost();
            }
            m_work_ready.notify_all();
            m_done_ready.notify_all();
            break;
        }
        {
            std::lock_guard lock(m_mutex);
            m_slots[index].busy = false;
            m_slots[index].idle_since = EvalClock::now();
        }
        m_work_ready.notify_all();
    }
    slot.stop(); // on this thread, which started the worker
}

// May `job` run on slot `index` at all? Not on a GPU of another model than the one it prefers, while
// a GPU of that model serves.
bool GpuEvaluator::may_run_on(size_t index, const PreparedJob& job) const
{
    const SlotEntry& entry = m_slots[index];
    if (entry.state != SlotState::ready)
        return false;
    const auto& wanted = job.job.options.gpu;
    if (!wanted || entry.slot->identity().name == wanted->name)
        return true;
    return std::none_of(m_slots.begin(), m_slots.end(), [&](const SlotEntry& other) {
        return other.state == SlotState::ready && other.slot->identity().name == wanted->name;
    });
}

bool GpuEvaluator::idle_and_allowed(size_t index, const PreparedJob& job) const
{
    return !m_slots[index].busy && may_run_on(index, job);
}

// May idle slot `index` take `job` now? Not when the GPU the job prefers is idle and is another, nor
// when another idle GPU that may take it has waited longer.
bool GpuEvaluator::may_take(size_t index, const PreparedJob& job) const
{
    if (!idle_and_allowed(index, job))
        return false;
    if (const auto& wanted = job.job.options.gpu) {
        bool preferred = m_slots[index].slot->identity() == *wanted;
        for (size_t i = 0; i < m_slots.size(); ++i)
            if (i != index && idle_and_allowed(i, job) && m_slots[i].slot->identity() == *wanted)
                return false;
        if (preferred)
            return true;
    }
    for (size_t i = 0; i < m_slots.size(); ++i)
        if (i != index && idle_and_allowed(i, job) && m_slots[i].idle_since < m_slots[index].idle_since)
            return false;
    return true;
}

// The waiting job slot `index` should take: the lowest ticket among those it may take.
std::optional<size_t> GpuEvaluator::job_for(size_t index) const
{
    std::optional<size_t> pick;
    for (size_t j = 0; j < m_compiled.size(); ++j)
        if ((!pick || m_compiled[j].job.ticket < m_compiled[*pick].job.ticket) && may_take(index, m_compiled[j]))
            pick = j;
    return pick;
}

void GpuEvaluator::note_compile_starved(double seconds)
{
    m_compile_starved_s += seconds;
    if (m_compile_hint_given)
        return;
    // Said once, when the waits are a real share of the GPUs' time, and only where a larger pool
    // is possible: the default pool is kept small on purpose (compile_workers_for in compile.hpp).
    double gpu_seconds = std::chrono::duration<double>(EvalClock::now() - m_started).count() *
                         static_cast<double>(m_slots.size());
    if (m_compile_starved_s < std::max(2.0, 0.1 * gpu_seconds) || m_pool->workers() >= m_usable_cpus)
        return;
    m_compile_hint_given = true;
    log_info("the GPUs have waited {:.1f} s for compiles queued behind the pool's {} worker{}; a larger pool "
             "(--compile-workers, up to the {} CPUs here) may keep them busier",
             m_compile_starved_s, m_pool->workers(), m_pool->workers() == 1 ? "" : "s", m_usable_cpus);
}

// Evaluates `prepared` on slot `index` and reports the result. A lost GPU puts the job back at the
// head of the queue and throws GpuLostError on.
void GpuEvaluator::run_job(size_t index, PreparedJob& prepared)
{
    GpuSlot& slot = *m_slots[index].slot;
    log_debug("timeline {:.3f} {} begin job {} {}", log_clock_s(), slot.identity().label(), prepared.job.ticket,
              job_kind(prepared.job.options));
    std::optional<Evaluation> evaluation;
    try {
        evaluation = slot.evaluate(prepared, [&] { serve_earlier_jobs(index, prepared.job.ticket); },
                                   [&](const std::shared_ptr<SweepBoard>& board) { offer_sweep(board); });
    } catch (const GpuLostError& e) {
        if (!e.job_delivered()) {
            std::lock_guard lock(m_mutex);
            m_compiled.push_front(std::move(prepared));
        }
        throw;
    } catch (const std::exception& e) {
        // The per-candidate wrapper: nothing a candidate does may stop the pipeline.
        evaluation = Evaluation{};
        evaluation->verdict = Verdict{VerdictKind::runtime_error, fmt::format("kforge could not evaluate this "
                                                                              "candidate: {}", e.what())};
    }
    log_debug("timeline {:.3f} {} end job {} {}", log_clock_s(), slot.identity().label(), prepared.job.ticket,
              job_kind(prepared.job.options));
    if (evaluation) // else a helper finished the sweep and delivered it (help_sweep)
        deliver(prepared, std::move(*evaluation));
}

void GpuEvaluator::deliver(const PreparedJob& prepared, Evaluation evaluation)
{
    // Every way a job ends passes here, so a sampled sweep is recorded whatever the verdict.
    if (!prepared.param_points.is_null())
        evaluation.metrics["param_points"] = prepared.param_points;
    evaluation.eval_seconds = std::chrono::duration<double>(EvalClock::now() - prepared.started).count();
    finish(prepared.job.ticket, std::move(evaluation));
}

// Between the variants of a sweep on slot `index`: runs here any waiting job with a lower ticket
// than `ticket` (a confirmation of the item the search waits to record, say) that may run on this
// GPU and that no idle GPU could take instead.
void GpuEvaluator::serve_earlier_jobs(size_t index, uint64_t ticket)
{
    for (;;) {
        PreparedJob earlier;
        {
            std::lock_guard lock(m_mutex);
            if (m_stopping)
                return;
            std::optional<size_t> pick;
            for (size_t j = 0; j < m_compiled.size(); ++j) {
                const PreparedJob& job = m_compiled[j];
                if (job.job.ticket >= ticket || (pick && job.job.ticket >= m_compiled[*pick].job.ticket) ||
                    !may_run_on(index, job))
                    continue;
                bool other_idle = false;
                for (size_t i = 0; i < m_slots.size() && !other_idle; ++i)
                    other_idle = i != index && idle_and_allowed(i, job);
                if (!other_idle)
                    pick = j;
            }
            if (!pick)
                return;
            earlier = std::move(m_compiled[*pick]);
            m_compiled.erase(m_compiled.begin() + static_cast<std::ptrdiff_t>(*pick));
        }
        m_work_ready.notify_all(); // this GPU's own sweep is open to idle GPUs meanwhile, final step included
        run_job(index, earlier);
    }
}

// A sweep that has started: idle GPUs of its model may take its variants (sweep_board.hpp).
void GpuEvaluator::offer_sweep(const std::shared_ptr<SweepBoard>& board)
{
    {
        std::lock_guard lock(m_mutex);
        m_sweeps.push_back(board);
    }
    m_work_ready.notify_all();
}

// The sweep idle slot `index` may help with: the lowest ticket among those of its GPU model with a
// variant nobody has claimed. Called with m_mutex held; forgets sweeps with nothing left to claim.
std::shared_ptr<SweepBoard> GpuEvaluator::sweep_to_help(size_t index)
{
    std::erase_if(m_sweeps, [](const std::shared_ptr<SweepBoard>& b) { return b->finished(); });
    if (m_slots[index].state != SlotState::ready)
        return nullptr;
    std::shared_ptr<SweepBoard> pick;
    for (const auto& board : m_sweeps)
        if (board->model() == m_slots[index].slot->identity().name && (!pick || board->ticket() < pick->ticket()) &&
            board->has_helper_work())
            pick = board;
    return pick;
}

// Runs one variant of another GPU's sweep on slot `index`, or, when every variant is done while
// that GPU runs an earlier job, the sweep's final step, delivering the job's evaluation. A lost
// GPU gives the variant or the step back and throws GpuLostError on; any other failure is the
// variant's or the job's verdict.
void GpuEvaluator::help_sweep(size_t index, SweepBoard& board)
{
    std::optional<size_t> claimed = board.claim();
    if (!claimed) {
        if (board.claim_final_step())
            finish_sweep_for_owner(index, board);
        return;
    }
    VariantResult result;
    log_debug("timeline {:.3f} {} begin variant {}:{}", log_clock_s(), m_slots[index].slot->identity().label(),
              board.ticket(), *claimed);
    try {
        result = m_slots[index].slot->screen_variant(board.variant(*claimed), board.plan());
    } catch (const GpuLostError&) {
        board.release(*claimed);
        throw;
    } catch (const std::exception& e) {
        result.params = board.variant(*claimed).params;
        result.from_worker = false;
        result.verdict = Verdict{VerdictKind::runtime_error, fmt::format("kforge could not evaluate this variant: {}", e.what())};
    }
    board.finish(*claimed, std::move(result), true);
    log_debug("timeline {:.3f} {} end variant {}:{}", log_clock_s(), m_slots[index].slot->identity().label(),
              board.ticket(), *claimed);
}

void GpuEvaluator::finish_sweep_for_owner(size_t index, SweepBoard& board)
{
    GpuSlot& slot = *m_slots[index].slot;
    log_debug("timeline {:.3f} {} begin final {}", log_clock_s(), slot.identity().label(), board.ticket());
    Evaluation evaluation;
    try {
        evaluation = slot.finish_sweep(board);
    } catch (const GpuLostError&) {
        board.release_final_step();
        throw;
    } catch (const std::exception& e) {
        evaluation.verdict = Verdict{VerdictKind::runtime_error, fmt::format("kforge could not evaluate this "
                                                                             "candidate: {}", e.what())};
    }
    log_debug("{}: finished the sweep of job {} while its own GPU ran an earlier job", slot.identity().label(),
              board.ticket());
    log_debug("timeline {:.3f} {} end final {}", log_clock_s(), slot.identity().label(), board.ticket());
    deliver(board.job(), std::move(evaluation));
    board.final_step_delivered(); // last: the owner keeps the job alive until now
}

} // namespace kforge
