// The two-phase step inside the search: a planner call, the plan saved, then a coder call; the plan
// recorded with its candidate; technique statistics and schedules kept in step with the knowledge
// base.
//
// An item is made two-phase when it is scheduled (loop/schedule.cpp draws that and the suggested
// technique). Phase 1 runs on the worker pool; when its result comes back, its calls are stored and
// the plan goes into the item, which is saved with the pending items in one transaction — so a run
// killed between the phases resumes with phase 2 and the same plan, never asking the planner again.
// A plan that could not be read ends the item as a no_code candidate whose message says why (the
// planner's calls are the candidate's calls). The coder's reply is read like any proposal.
//
// Statistics the planner is shown are the knowledge base's tallies for the task's category, read
// once per session and leaving this run out, plus this run's own tries up to the item's
// `tries_seen` (its recorded prefix when scheduled): both fixed by what was recorded, so a resumed
// run shows the same numbers. New tries and a new best's schedule go to the knowledge base after
// their recording transaction commits; at start the run hands all its tries over again (the
// knowledge base keeps each once), which heals a crash between the two writes.
#include <fmt/format.h>

#include "search/loop/loop.hpp"
#include "search/techniques.hpp"
#include "search/views.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace kforge {
namespace {

constexpr size_t k_schedules_shown = 3;
constexpr uint64_t k_code_phase_salt = 0x636f6465; // "code": phase 2 draws from its own stream

bool interrupted_calls(const std::vector<LlmCallRecord>& calls)
{
    for (const auto& call : calls)
        if (call.status == "interrupted")
            return true;
    return false;
}

std::string plural(int64_t n, std::string_view one, std::string_view many)
{
    return fmt::format("{} {}", n, n == 1 ? one : many);
}

} // namespace

bool SearchLoop::plans_enabled() const
{
    return m_config.plan_share > 0 && m_services.models && m_menu;
}

void SearchLoop::start_techniques()
{
    m_menu = m_services.menu;
    if (m_config.plan_share > 0 && m_services.models && !m_menu)
        fail_runtime("internal error: the search plans proposals but has no optimisation menu");
    m_run_tries.clear();
    std::map<int64_t, bool> correct;
    for (const auto& point : m_archive.fitness_series())
        correct[point.candidate_id] = point.verdict == VerdictKind::correct;
    for (const auto& plan : m_archive.candidate_plans()) {
        auto tries = technique_tries_of(plan, correct[plan.candidate_id], m_task.name, m_task.category);
        m_run_tries.insert(m_run_tries.end(), tries.begin(), tries.end());
    }
    if (!m_services.knowledge)
        return;
    std::string run_id = m_archive.run_info().run_id;
    try {
        m_kb_tallies = m_services.knowledge->technique_tallies(m_task.category, run_id);
        for (const auto& [id, tally] : m_kb_tallies)
            m_kb_tries += tally.tried;
        for (auto& schedule : m_services.knowledge->schedules(m_task.category, run_id, k_schedules_shown))
            if (schedule.has_techniques())
                m_kb_schedules.push_back(std::move(schedule));
        m_services.knowledge->add_technique_tries(m_run_tries, run_id);
    } catch (const Error& e) {
        log_warn("technique statistics from the knowledge base are unavailable: {}", e.what());
    }
}

PlanRequest SearchLoop::plan_request(const WorkItem& item)
{
    PlanRequest request{proposal_context(item), *m_menu};
    request.context.inspirations.clear(); // the planner decides from the parent's own measurements
    TechniqueTallies tallies = m_kb_tallies;
    auto own = static_cast<size_t>(std::max<int64_t>(0, item.tries_seen));
    own = std::min(own, m_run_tries.size());
    for (const auto& [id, tally] : tally_tries(m_run_tries, own))
        tallies[id] += tally;
    if (m_kb_tries > 0 || own > 0) {
        request.stats = technique_rows(*m_menu, tallies);
        request.stats_scope = fmt::format("From {} in earlier runs on this machine and {} in this run.",
                                          plural(m_kb_tries, "try", "tries"), plural(static_cast<int64_t>(own), "try", "tries"));
    }
    if (item.show_schedules)
        request.schedules = m_kb_schedules;
    request.focus = item.focus;
    request.focus_reason = item.focus_reason;
    return request;
}

void SearchLoop::dispatch_plan(Flight& flight)
{
    if (!flight.item.plan_done.is_null()) {
        apply_plan_done(flight); // resumed after phase 1
        return;
    }
    const ModelMix& planners = m_services.planner ? *m_services.planner : *m_services.models;
    const PromptLibrary& library = *m_services.library;
    m_pool->post(flight.item.seq, [&planners, &library, request = plan_request(flight.item), seed = flight.item.seed] {
        Rng rng(seed);
        return request_plan(planners.pick(rng), library, request);
    });
}

void SearchLoop::take_plan(Flight& flight, PlanOutcome outcome)
{
    for (const auto& call : outcome.calls) {
        flight.call_ids.push_back(m_archive.insert_llm_call(call));
        flight.calls.push_back(call);
    }
    if (interrupted_calls(outcome.calls)) {
        flight.interrupted = true; // never recorded: resume asks the planner again
        return;
    }
    flight.item.plan_done = Json{{"status", plan_status_name(outcome.status)},
                                 {"problem", outcome.problem},
                                 {"plan", outcome.plan ? outcome.plan->to_json() : Json()},
                                 {"calls", flight.call_ids},
                                 {"call_failed", outcome.call_failed}};
    m_archive.atomically([&] { save_state(); });
    if (m_services.hooks.on_plan_stored)
        m_services.hooks.on_plan_stored(flight.item.seq);
    apply_plan_done(flight);
}

void SearchLoop::apply_plan_done(Flight& flight)
{
    // Read back from the saved state on a resume: an absent or null field reads as its default.
    const Json none = Json::object();
    JsonReader done(flight.item.plan_done.is_object() ? flight.item.plan_done : none,
                    fmt::format("the saved plan of work item {}", flight.item.seq));
    if (flight.call_ids.empty())
        if (auto calls = done.find("calls"))
            for (const auto& id : calls->items())
                flight.call_ids.push_back(id.as_int());
    if (done.get_string("status", "failed") != plan_status_name(PlanStatus::failed)) {
        if (m_stop == StopReason::interrupted)
            flight.phase2_held = true; // after Ctrl-C no new model call starts
        else
            start_code_phase(flight);
        return;
    }
    Proposal& proposal = flight.proposal;
    proposal.origin = Origin::llm;
    proposal.note = "(no plan)";
    bool call_failed = done.get_bool("call_failed", false);
    proposal.outcome = call_failed ? ProposalOutcome::call_failed : ProposalOutcome::no_code;
    std::string problem = done.get_string("problem", "");
    proposal.failure = {VerdictKind::no_code, call_failed ? problem : "The plan could not be read: " + problem};
    flight.proposed = true;
}

void SearchLoop::start_code_phase(Flight& flight)
{
    const WorkItem& item = flight.item;
    const Json none;
    const Json& saved = item.plan_done.is_object() && item.plan_done.contains("plan") ? item.plan_done["plan"] : none;
    TechniquePlan plan = TechniquePlan::from_json(saved, "the saved plan of item " + std::to_string(item.seq));
    const ModelMix& coders = *m_services.models;
    const PromptLibrary& library = *m_services.library;
    m_pool->post(item.seq, [&coders, &library, context = proposal_context(item), menu = *m_menu, plan,
                            seed = splitmix64(item.seed ^ k_code_phase_salt)] {
        Rng rng(seed);
        return request_code(coders.pick(rng), library, context, menu, plan);
    });
}

std::string SearchLoop::record_plan(const Candidate& candidate, const Flight& flight)
{
    std::optional<Candidate> parent;
    if (candidate.parent_id)
        parent = m_archive.candidate(*candidate.parent_id);
    CandidatePlan plan = candidate_plan_of(candidate, flight.item.plan_done, flight.item.focus, *m_menu, parent);
    m_archive.insert_candidate_plan(plan);
    auto tries = technique_tries_of(plan, candidate.evaluation.verdict.is_correct(), m_task.name, m_task.category);
    m_run_tries.insert(m_run_tries.end(), tries.begin(), tries.end());
    m_tries_outbox.insert(m_tries_outbox.end(), tries.begin(), tries.end());
    if (!plan.plan)
        return "plan unreadable";
    std::vector<std::string> names;
    for (const auto& claimed : plan.techniques)
        names.push_back(claimed.choice.id + (claimed.applied == Applied::missing ? " (missing)" : ""));
    std::string text = "plan " + fmt::format("{}", fmt::join(names, " + "));
    if (plan.predicted_speedup)
        text += fmt::format(", expected {:.2f}x", *plan.predicted_speedup);
    if (plan.measured_speedup)
        text += fmt::format(", measured {:.2f}x", *plan.measured_speedup);
    return text;
}

void SearchLoop::note_new_best(const Candidate& candidate)
{
    if (!m_services.knowledge)
        return;
    std::optional<Schedule> schedule = build_schedule(m_archive, m_task, candidate.id);
    if (schedule && schedule->has_techniques())
        m_schedule_outbox = std::move(schedule);
}

void SearchLoop::publish_knowledge()
{
    KnowledgeBase* knowledge = m_services.knowledge;
    std::string run_id = knowledge ? m_archive.run_info().run_id : std::string();
    for (const auto& lesson : m_knowledge_outbox) {
        try {
            if (knowledge)
                knowledge->add(lesson, run_id);
        } catch (const Error& e) {
            log_warn("the lesson was kept in the run archive but not in the knowledge base: {}", e.what());
        }
    }
    m_knowledge_outbox.clear();
    try {
        if (knowledge && !m_tries_outbox.empty())
            knowledge->add_technique_tries(m_tries_outbox, run_id);
        if (knowledge && m_schedule_outbox)
            knowledge->put_schedule(*m_schedule_outbox);
    } catch (const Error& e) {
        log_warn("technique results were kept in the run archive but not in the knowledge base: {}", e.what());
    }
    m_tries_outbox.clear();
    m_schedule_outbox.reset();
}

} // namespace kforge
