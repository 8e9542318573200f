// What comes back, and recording it in schedule order.
//
// Proposals: their model calls are stored at once (they cost money whatever happens next); a source
// is checked for duplicates — against the archive, and against items scheduled earlier that are
// still in flight — and only a new one is submitted for the quick screen.
//
// Evaluation policy. A screened candidate that would become an elite (its cell empty on its island,
// or held by an elite its screen beats by more than k_screen_margin) is confirmed: confirmation
// timing, a profile, only its best params.
// Its placement then uses the confirmed fitness; one that would be the run's new best is also
// checked on the held-out shapes, and a held_out_failed verdict keeps it from being an elite or the
// best. A candidate flagged as suspicious (faster than the roofline floor) is never confirmed or
// placed, and its fitness is stored only in its metrics; it gets a line of its own saying why, and
// stays listed by `kforge inspect` until a user re-measures and accepts it (place_accepted). Confirmations may start early, when the
// screen result arrives, but whether one is needed — and so which numbers are recorded — is decided
// only when the candidate is at the head of the line, from the recorded state alone.
#include <fmt/format.h>

#include "evaluator/describe.hpp"
#include "search/loop/loop.hpp"
#include "search/views.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr int k_max_empty_streak = 24;   // items in a row with nothing to evaluate
// How much a screen must beat the elite of its cell by to be confirmed. A quick screen's fitness
// is measured against the baselines its GPU timed at the start, a confirmation's against the
// reference interleaved with it: on one GPU and across GPUs the two differ by up to about this much
// for one kernel. Without the margin a search whose candidates tie (near-copies of one kernel, as
// models often write) confirmed about half of them on noise alone: on an H200 a softmax confirmation
// costs ~4 s, some 25 screened param points, and on several GPUs each lands on the path of the
// records behind it.
constexpr double k_screen_margin = 0.01;
constexpr int k_max_call_failures = 8;   // proposals in a row whose model call failed

bool qualifies(const Evaluation& evaluation)
{
    return evaluation.verdict.is_correct() && evaluation.fitness && *evaluation.fitness > 0 &&
           !evaluation.metrics.value("suspicious", false);
}

bool interrupted_call(const Proposal& proposal)
{
    for (const auto& call : proposal.calls)
        if (call.status == "interrupted")
            return true;
    return false;
}

// metrics.runs (every GPU run of the candidate, for `kforge inspect`): `first`'s, then `later`'s.
void append_runs(Json& metrics, const Json& first, const Evaluation& later)
{
    Json runs = first.value("runs", Json::array());
    for (const auto& run : later.metrics.value("runs", Json::array()))
        runs.push_back(run);
    if (!runs.empty())
        metrics["runs"] = runs;
}

// Why a flagged candidate was flagged: "n=16777216: 4.00 us is under the floor of ...; ..." per
// shape, from the worker's notes.
std::string flagged_reasons(const Evaluation& e)
{
    std::vector<std::string> reasons;
    for (const auto& note : e.metrics.value("notes", Json::object()).value("below_roofline", Json::array()))
        reasons.push_back(fmt::format("{}: {}", note.value("shape", "?"), note.value("why", "faster than the floor")));
    return reasons.empty() ? "faster than the roofline floor" : join(reasons, "; ");
}

std::string describe_verdict(const Candidate& candidate)
{
    const Evaluation& e = candidate.evaluation;
    std::string text(verdict_name(e.verdict.kind));
    if (e.fitness)
        text += fmt::format(" {:.3f}x", *e.fitness);
    else if (e.metrics.contains("suspicious_fitness"))
        text += fmt::format(" {:.3f}x FLAGGED, not counted: faster than the roofline floor",
                            e.metrics["suspicious_fitness"].get<double>());
    return text;
}

} // namespace

void SearchLoop::take_pool_result(PoolResult result)
{
    if (result.error)
        std::rethrow_exception(result.error);
    auto it = m_flights.find(result.seq);
    if (it == m_flights.end())
        return;
    Flight& flight = it->second;
    auto store = [&](LlmCallRecord record) {
        flight.call_ids.push_back(m_archive.insert_llm_call(record));
        flight.calls.push_back(std::move(record));
    };
    if (auto* proposal = std::get_if<Proposal>(&result.value)) {
        accept_proposal(flight, std::move(*proposal));
    } else if (auto* meta = std::get_if<MetaPromptResult>(&result.value)) {
        store(meta->call);
        flight.interrupted = meta->call.status == "interrupted";
        flight.meta = std::move(*meta);
        flight.proposed = true;
    } else if (auto* plan = std::get_if<PlanOutcome>(&result.value)) {
        take_plan(flight, std::move(*plan));
    } else if (auto* lesson = std::get_if<LessonResult>(&result.value)) {
        store(lesson->call);
        flight.interrupted = lesson->call.status == "interrupted";
        flight.lesson = std::move(*lesson);
        flight.proposed = true;
    }
}

void SearchLoop::accept_proposal(Flight& flight, Proposal proposal)
{
    for (const auto& call : proposal.calls) {
        flight.call_ids.push_back(m_archive.insert_llm_call(call));
        flight.calls.push_back(call);
    }
    flight.interrupted = proposal.outcome == ProposalOutcome::call_failed && interrupted_call(proposal);
    flight.proposal = std::move(proposal);
    flight.proposed = true;
    if (flight.proposal.outcome == ProposalOutcome::source && flight.proposal.source) {
        flight.source = *flight.proposal.source;
        accept_source(flight);
    }
}

void SearchLoop::accept_source(Flight& flight)
{
    flight.source_hash = candidate_hash(flight.source);
    if (m_archive.find_candidate_by_hash(flight.source_hash))
        flight.duplicate = true;
    for (const auto& [seq, other] : m_flights)
        if (seq < flight.item.seq && other.source_hash == flight.source_hash)
            flight.duplicate = true;
    if (flight.duplicate)
        return;
    // Model calls finish out of order, so a later item with the same source may already be at the
    // evaluator. This item records first and would make that one a duplicate at its turn: take
    // over its evaluation now rather than evaluate the same source twice.
    for (auto& [seq, other] : m_flights)
        if (seq > flight.item.seq && !other.duplicate && other.source_hash == flight.source_hash &&
            (other.item.kind == ItemKind::reference) == (flight.item.kind == ItemKind::reference)) {
            adopt_evaluation(flight, other);
            return;
        }
    submit(flight, EvalJobKind::screen, EvalOptions{}); // submit() sets task_code
}

void SearchLoop::adopt_evaluation(Flight& flight, Flight& later)
{
    flight.screen = std::move(later.screen);
    flight.confirm = std::move(later.confirm);
    flight.held_out = std::move(later.held_out);
    flight.confirm_submitted = later.confirm_submitted;
    flight.confirm_ticket = later.confirm_ticket;
    flight.confirm_withdrawn = later.confirm_withdrawn;
    flight.held_out_submitted = later.held_out_submitted;
    later.screen.reset();
    later.confirm.reset();
    later.held_out.reset();
    later.duplicate = true;
    later.evaluated_for = flight.item.seq;
}

void SearchLoop::submit(Flight& flight, EvalJobKind kind, EvalOptions options)
{
    EvalJob job;
    job.ticket = flight.item.seq * k_job_kinds + static_cast<uint64_t>(kind);
    job.label = flight.source_hash;
    job.source = flight.source;
    options.task_code = flight.item.kind == ItemKind::reference;
    job.options = std::move(options);
    if (kind == EvalJobKind::confirm) {
        flight.confirm_submitted = true;
        flight.confirm_ticket = job.ticket;
    }
    if (kind == EvalJobKind::held_out)
        flight.held_out_submitted = true;
    m_services.evaluator.submit(std::move(job));
}

void SearchLoop::take_evaluation(EvalResult result)
{
    if (result.ticket == k_final_ticket) {
        m_final_check = std::move(result.evaluation);
        return;
    }
    // The item that records this evaluation: an adopted evaluation may have been adopted again by a
    // still earlier item (model calls finish in any order: item 3's reply first, then 2's adopts its
    // evaluation, then 1's, then 0's), so the chain is followed to its end, not one step.
    auto it = m_flights.find(result.ticket / k_job_kinds);
    while (it != m_flights.end() && it->second.evaluated_for)
        it = m_flights.find(*it->second.evaluated_for);
    if (it == m_flights.end())
        return;
    Flight& flight = it->second;
    switch (static_cast<EvalJobKind>(result.ticket % k_job_kinds)) {
    case EvalJobKind::screen:
        flight.screen = std::move(result.evaluation);
        // Start the confirmation early when it looks needed now; head_ready() decides for real.
        if (qualifies(*flight.screen) && would_be_elite(flight, *flight.screen->fitness) && !flight.confirm_submitted &&
            !outdone_in_flight(flight))
            submit(flight, EvalJobKind::confirm,
                   EvalOptions{true, false, true, flight.screen->best_params, false, flight.screen->gpu});
        return;
    case EvalJobKind::confirm: flight.confirm = std::move(result.evaluation); return;
    case EvalJobKind::held_out: flight.held_out = std::move(result.evaluation); return;
    }
}

// An earlier item still in flight screened at least as well in the same cell of the same island:
// it records first and will most likely hold the cell, so starting this one's confirmation early
// would spend seconds of a GPU on a confirmation the head of the line then finds unneeded.
bool SearchLoop::outdone_in_flight(const Flight& flight) const
{
    if (flight.item.island < 0)
        return false;
    std::string cell = descriptor_cell(flight.screen->descriptors);
    for (const auto& [seq, earlier] : m_flights) {
        if (seq >= flight.item.seq)
            break;
        if (earlier.duplicate || !earlier.screen || !qualifies(*earlier.screen) ||
            (earlier.item.island >= 0 && earlier.item.island != flight.item.island))
            continue;
        if (descriptor_cell(earlier.screen->descriptors) == cell &&
            *earlier.screen->fitness * (1 + k_screen_margin) >= *flight.screen->fitness)
            return true;
    }
    return false;
}

// Early confirmations of items still in flight that the latest record made unneeded (a fitter elite
// now holds their cell; cells only get fitter) leave the evaluator's queue.
void SearchLoop::withdraw_unneeded_confirmations()
{
    for (auto& [seq, flight] : m_flights)
        if (flight.confirm_submitted && !flight.confirm && !flight.confirm_withdrawn && flight.screen &&
            qualifies(*flight.screen) && !would_be_elite(flight, *flight.screen->fitness)) {
            m_services.evaluator.withdraw(flight.confirm_ticket);
            flight.confirm_withdrawn = true;
        }
}

bool SearchLoop::would_be_elite(const Flight& flight, double fitness) const
{
    std::string cell = descriptor_cell(flight.screen->descriptors);
    if (flight.item.island >= 0)
        return m_grids[static_cast<size_t>(flight.item.island)].would_accept(cell, fitness, k_screen_margin);
    for (const auto& grid : m_grids)
        if (grid.would_accept(cell, fitness, k_screen_margin))
            return true;
    return false;
}

bool SearchLoop::head_ready(Flight& flight)
{
    if (!flight.proposed || flight.interrupted)
        return false;
    if (!yields_candidate(flight.item.kind) || flight.source.empty() || flight.duplicate)
        return true;
    if (m_archive.find_candidate_by_hash(flight.source_hash)) {
        flight.duplicate = true;
        return true;
    }
    if (!flight.screen)
        return false;
    if (!qualifies(*flight.screen) || !would_be_elite(flight, *flight.screen->fitness))
        return true;
    flight.confirm_needed = true;
    if (!flight.confirm) {
        if (!flight.confirm_submitted || flight.confirm_withdrawn) {
            flight.confirm_withdrawn = false;
            submit(flight, EvalJobKind::confirm,
                   EvalOptions{true, false, true, flight.screen->best_params, false, flight.screen->gpu});
        }
        return false;
    }
    if (!qualifies(*flight.confirm) || *flight.confirm->fitness <= m_state.best_fitness)
        return true;
    if (!flight.held_out) {
        if (!flight.held_out_submitted)
            submit(flight, EvalJobKind::held_out,
                   EvalOptions{false, true, false, flight.confirm->best_params, false, flight.confirm->gpu});
        return false;
    }
    return true;
}

void SearchLoop::record_head()
{
    Flight flight = std::move(m_flights.begin()->second);
    m_flights.erase(m_flights.begin());
    // A confirmation started early and then not needed: no GPU should spend seconds on it now.
    if (flight.confirm_submitted && !flight.confirm && !flight.confirm_withdrawn)
        m_services.evaluator.withdraw(flight.confirm_ticket);
    log_debug("timeline {:.3f} record {}", log_clock_s(), flight.item.seq);
    std::optional<Candidate> recorded;
    m_archive.atomically([&] {
        if (yields_candidate(flight.item.kind))
            recorded = record_candidate(flight);
        else if (flight.item.kind == ItemKind::analyst)
            record_lesson(flight);
        else
            record_meta_prompt(flight);
        m_ledger.settle(flight.item, flight.calls);
        withdraw_unneeded_confirmations();
        schedule();
        save_state();
    });
    publish_knowledge();
    if (recorded && m_services.hooks.on_recorded)
        m_services.hooks.on_recorded(*recorded);
}

std::optional<Candidate> SearchLoop::record_candidate(Flight& flight)
{
    const WorkItem& item = flight.item;
    const Proposal& proposal = flight.proposal;
    ++m_state.recorded_candidates;
    ++m_outcome.recorded;
    if (flight.duplicate) {
        ++m_state.duplicates;
        ++m_outcome.duplicates;
        ++m_state.empty_streak;
        m_state.call_failure_streak = 0;
        use_meta_prompt(item, false);
        m_progress.recorded(snapshot(), fmt::format("island {} {}: duplicate of an archived candidate, not evaluated",
                                                    item.island, origin_name(proposal.origin)));
        count_generation();
        stop_when_stuck("the proposals are duplicates of archived candidates");
        return std::nullopt;
    }
    Candidate candidate;
    candidate.source = flight.source;
    candidate.source_hash = flight.source_hash;
    if (item.kind == ItemKind::propose || item.kind == ItemKind::repair || item.kind == ItemKind::tune)
        candidate.parent_id = item.parent;
    if (const KernelFile* seed = seed_parent_file(item)) // recorded before this item: records are in order
        candidate.parent_id = m_archive.find_candidate_by_hash(candidate_hash(seed->source));
    candidate.inspiration_ids = item.inspirations;
    candidate.island = std::max(item.island, 0);
    candidate.generation = item.generation;
    candidate.origin = proposal.origin;
    if (!flight.call_ids.empty())
        candidate.llm_call_id = flight.call_ids.back();
    candidate.note = proposal.note;
    if (flight.source.empty()) {
        candidate.evaluation.verdict = proposal.failure;
        ++m_state.empty_streak;
        m_state.call_failure_streak =
            proposal.outcome == ProposalOutcome::call_failed ? m_state.call_failure_streak + 1 : 0;
    } else {
        candidate.evaluation = merged_evaluation(flight);
        m_state.empty_streak = 0;
        m_state.call_failure_streak = 0;
    }
    candidate.id = m_archive.insert_candidate(candidate);
    m_source_sizes[candidate.id] = candidate.source.size();
    std::string plan_words;
    if (item.two_phase && !item.plan_done.is_null() && m_menu)
        plan_words = record_plan(candidate, flight);
    if (candidate.evaluation.gpu)
        ++m_candidates_per_gpu[candidate.evaluation.gpu->label()];
    ++m_verdicts[candidate.evaluation.verdict.kind];

    Placement placement = place(candidate, item.island, flight.confirm_needed ? 0.0 : k_screen_margin);
    if (placement.new_best)
        note_new_best(candidate);
    use_meta_prompt(item, placement.island_best);
    follow_up(candidate, flight, placement);
    request_lesson(candidate, placement);
    std::string line = fmt::format("#{} island {} {}: {}", candidate.id, item.island < 0 ? "*" : std::to_string(item.island),
                                   origin_name(candidate.origin), describe_verdict(candidate));
    if (!placement.islands.empty())
        line += placement.new_best ? " NEW BEST" : " elite";
    if (candidate.evaluation.gpu && m_gpu_count > 1)
        line += " on " + candidate.evaluation.gpu->label();
    if (!plan_words.empty())
        line += " [" + plan_words + "]";
    m_progress.recorded(snapshot(), line + (candidate.note.empty() ? "" : " - " + candidate.note));
    if (placement.new_best)
        m_progress.event(fmt::format("new best #{}: {:.3f}x the reference ({})", candidate.id, m_state.best_fitness,
                                     candidate.note));
    if (candidate.evaluation.metrics.contains("suspicious_fitness"))
        report_flagged(candidate);
    count_generation();
    stop_when_stuck(candidate.evaluation.verdict.message);
    return candidate;
}

// A correct candidate timed below the roofline floor is never silently dropped: its own line says
// what it measured, why that is impossible by kforge's model, and how a user who trusts it accepts
// it; `kforge inspect` and `report` list it too.
void SearchLoop::report_flagged(const Candidate& candidate)
{
    ++m_flagged;
    const Evaluation& e = candidate.evaluation;
    m_progress.event(fmt::format("#{} is correct and measured {:.3f}x, but FLAGGED and not counted: {}. If it is "
                                 "right, re-measure and accept it: kforge eval {} --candidate {} --held-out --accept",
                                 candidate.id, e.metrics["suspicious_fitness"].get<double>(), flagged_reasons(e),
                                 m_archive.path().string(), candidate.id));
}

void SearchLoop::stop_when_stuck(const std::string& last)
{
    if (m_stop != StopReason::none)
        return;
    if (m_state.empty_streak >= std::max(k_max_empty_streak, 2 * m_config.effective_window()))
        m_stop = m_state.call_failure_streak > 0 ? StopReason::calls_failing : StopReason::exhausted;
    if (m_state.call_failure_streak >= k_max_call_failures)
        m_stop = StopReason::calls_failing;
    if (m_stop != StopReason::none)
        m_progress.event(fmt::format("stopping: {} (last: {})", describe_stop(m_stop, m_config.budgets), last.substr(0, 200)));
}

Evaluation SearchLoop::merged_evaluation(const Flight& flight) const
{
    Evaluation merged = *flight.screen;
    if (flight.confirm_needed && flight.confirm) {
        const Evaluation& screen = *flight.screen;
        merged = *flight.confirm;
        std::vector<Measurement> all = screen.measurements;
        all.insert(all.end(), merged.measurements.begin(), merged.measurements.end());
        merged.measurements = std::move(all);
        merged.compile_info = screen.compile_info;
        // The sweep was the screen's; the confirmation timed its winner alone.
        for (const char* key : {"sweep", "param_points"})
            if (screen.metrics.contains(key))
                merged.metrics[key] = screen.metrics[key];
        merged.metrics["screen_fitness"] = screen.fitness ? Json(*screen.fitness) : Json();
        merged.eval_seconds += screen.eval_seconds;
        append_runs(merged.metrics, screen.metrics, *flight.confirm);
    } else if (flight.confirm) {
        // Started early and then not needed: its numbers are not recorded, its GPU time is.
        append_runs(merged.metrics, merged.metrics, *flight.confirm);
    }
    if (flight.held_out) {
        const Evaluation& check = *flight.held_out;
        merged.eval_seconds += check.eval_seconds;
        append_runs(merged.metrics, merged.metrics, check);
        for (const auto& m : check.measurements)
            if (m.shape_set == "held_out")
                merged.measurements.push_back(m);
        if (check.verdict.is_correct()) {
            merged.metrics["held_out"] = "passed";
        } else {
            merged.metrics["held_out"] = "failed";
            merged.verdict = check.verdict;
            merged.fitness.reset();
        }
    }
    if (merged.metrics.value("suspicious", false) && merged.fitness) {
        merged.metrics["suspicious_fitness"] = *merged.fitness;
        merged.fitness.reset();
    }
    return merged;
}

void SearchLoop::save_state()
{
    m_state.searched_s = m_searched_before + search_s();
    m_state.pending.clear();
    for (const auto& [seq, flight] : m_flights)
        m_state.pending.push_back(flight.item);
    m_archive.set_search_state(k_loop_state_key, m_state.to_json());
    if (std::vector<GpuUsage> usage = m_services.evaluator.gpu_usage(); !usage.empty())
        m_archive.record_gpu_usage(m_gpu_session, usage);
}

} // namespace kforge
