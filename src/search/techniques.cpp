// Technique statistics, the suggested focus, plan adherence and schedules; see techniques.hpp.
//
// Everything here is a pure function of recorded facts (and the Rng passed in), so the search can
// call it while scheduling and recording and stay deterministic.
#include "search/techniques.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/plan.hpp"
#include "core/source.hpp"
#include "util/error.hpp"

namespace kforge {
namespace {

constexpr double k_min_gain_weight = 0.5;
constexpr double k_max_gain_weight = 3;
constexpr size_t k_note_chars = 80;

std::string tally_words(const TechniqueTally& t)
{
    std::string text = fmt::format("improved {} of {} tries", t.improved, t.tried);
    if (auto gain = t.mean_gain())
        text += fmt::format(", mean gain {:.2f}x", *gain);
    if (t.correct < t.tried)
        text += fmt::format(", {} incorrect or failed", t.tried - t.correct);
    return text;
}

} // namespace

Focus choose_focus(const Menu& menu, const TechniqueTallies& tallies, const std::string& category, double explore,
                   Rng& rng)
{
    Focus focus;
    if (menu.items.empty())
        return focus;
    auto tally_of = [&](const std::string& id) {
        auto it = tallies.find(id);
        return it == tallies.end() ? TechniqueTally{} : it->second;
    };
    std::string where = category.empty() ? "" : " on " + category + " tasks";
    if (rng.uniform() < explore) {
        std::vector<const MenuItem*> untried;
        for (const auto& item : menu.items)
            if (tally_of(item.id).tried == 0)
                untried.push_back(&item);
        if (!untried.empty()) {
            const MenuItem* pick = untried[rng.below(untried.size())];
            focus.technique = pick->id;
            focus.reason = "exploring: it has not been tried yet" + where;
        } else {
            const MenuItem& pick = menu.items[rng.below(menu.items.size())];
            focus.technique = pick.id;
            focus.reason = "exploring: " + tally_words(tally_of(pick.id)) + where;
        }
        return focus;
    }
    std::vector<double> weights;
    for (const auto& item : menu.items) {
        TechniqueTally t = tally_of(item.id);
        double tried = static_cast<double>(t.tried);
        double improve = (static_cast<double>(t.improved) + 1) / (tried + 2);
        double correct = (static_cast<double>(t.correct) + 1) / (tried + 2);
        double gain = std::clamp(t.mean_gain().value_or(1.0), k_min_gain_weight, k_max_gain_weight);
        weights.push_back(improve * correct * gain * gain);
    }
    const MenuItem& pick = menu.items[rng.weighted(weights)];
    TechniqueTally t = tally_of(pick.id);
    focus.technique = pick.id;
    focus.reason = t.tried == 0 ? "no results for it yet" + where : "it has paid off: " + tally_words(t) + where;
    return focus;
}

TechniqueTallies tally_tries(const std::vector<TechniqueTry>& tries, size_t count)
{
    TechniqueTallies tallies;
    for (size_t i = 0; i < tries.size() && i < count; ++i)
        tallies[tries[i].technique].add(tries[i]);
    return tallies;
}

std::vector<TechniqueStatRow> technique_rows(const Menu& menu, const TechniqueTallies& tallies, size_t max_extra)
{
    std::vector<TechniqueStatRow> rows;
    for (const auto& item : menu.items) {
        auto it = tallies.find(item.id);
        rows.push_back({item.id, item.title, it == tallies.end() ? TechniqueTally{} : it->second});
    }
    std::vector<TechniqueStatRow> extra;
    for (const auto& [id, tally] : tallies)
        if (!menu.find(id) && tally.tried > 0)
            extra.push_back({id, "", tally});
    std::stable_sort(extra.begin(), extra.end(),
                     [](const auto& a, const auto& b) { return a.tally.tried > b.tally.tried; });
    for (size_t i = 0; i < extra.size() && i < max_extra; ++i)
        rows.push_back(extra[i]);
    return rows;
}

Applied check_applied(const MenuItem* item, const std::string& child)
{
    if (!item || item->signals.empty() || child.empty())
        return Applied::unchecked;
    std::string code = strip_comments(child);
    // "plan:" signals look in the plan block (a comment, so not in `code`), as compact JSON.
    std::string plan;
    try {
        if (auto json = extract_plan_json(child))
            plan = json->dump();
    } catch (const PlanError&) {
    }
    for (const auto& signal : item->signals) {
        bool in_plan = signal.rfind("plan:", 0) == 0;
        const std::string& text = in_plan ? plan : code;
        if (text.find(in_plan ? signal.substr(5) : signal) != std::string::npos)
            return Applied::applied;
    }
    return Applied::missing;
}

CandidatePlan candidate_plan_of(const Candidate& candidate, const Json& plan_done, const std::string& focus,
                                const Menu& menu, const std::optional<Candidate>& parent)
{
    CandidatePlan plan;
    plan.candidate_id = candidate.id;
    plan.menu = menu.name;
    plan.focus = focus;
    JsonReader reader(plan_done, "the saved plan of candidate " + std::to_string(candidate.id));
    plan.status = parse_plan_status(reader.get_string("status", "failed")).value_or(PlanStatus::failed);
    plan.problem = reader.get_string("problem", "");
    if (reader.has("calls"))
        for (const auto& id : reader.at("calls").items())
            plan.call_ids.push_back(id.as_int());
    if (reader.has("plan") && !plan_done["plan"].is_null())
        plan.plan = TechniquePlan::from_json(plan_done["plan"], reader.file());
    if (!plan.plan)
        return plan;
    plan.predicted_speedup = plan.plan->expected_speedup;
    bool any_checked = false, all_applied = true;
    for (const auto& choice : plan.plan->techniques) {
        ClaimedTechnique claimed{choice, Applied::unchecked};
        if (candidate.source.empty())
            claimed.applied = Applied::missing; // no code was written: nothing of the plan was applied
        else
            claimed.applied = check_applied(choice.on_menu ? menu.find(choice.id) : nullptr, candidate.source);
        if (claimed.applied != Applied::unchecked) {
            any_checked = true;
            all_applied = all_applied && claimed.applied == Applied::applied;
        }
        plan.techniques.push_back(std::move(claimed));
    }
    if (any_checked && !candidate.source.empty())
        plan.followed = all_applied;
    const auto& fitness = candidate.evaluation.fitness;
    if (fitness && parent && parent->evaluation.fitness && *parent->evaluation.fitness > 0)
        plan.measured_speedup = *fitness / *parent->evaluation.fitness;
    return plan;
}

std::vector<TechniqueTry> technique_tries_of(const CandidatePlan& plan, bool correct, const std::string& task_name,
                                             const std::string& category)
{
    std::vector<TechniqueTry> tries;
    if (!plan.plan)
        return tries;
    for (const auto& claimed : plan.techniques) {
        if (claimed.applied == Applied::missing)
            continue;
        TechniqueTry one;
        one.technique = claimed.choice.id;
        one.task_name = task_name;
        one.category = category;
        one.candidate_id = plan.candidate_id;
        one.correct = correct;
        one.improved = correct && plan.measured_speedup && *plan.measured_speedup > 1;
        if (correct)
            one.gain = plan.measured_speedup;
        one.predicted = plan.predicted_speedup;
        tries.push_back(std::move(one));
    }
    return tries;
}

std::optional<Schedule> build_schedule(const Archive& archive, const Task& task, int64_t best_id)
{
    std::vector<CandidateSummary> chain = archive.lineage(best_id);
    if (chain.empty())
        return std::nullopt;
    std::reverse(chain.begin(), chain.end()); // the starting kernel first
    const CandidateSummary& start = chain.front();
    const CandidateSummary& best = chain.back();
    if (!start.fitness || !best.fitness || *start.fitness <= 0)
        return std::nullopt;
    Schedule schedule;
    schedule.run_id = archive.run_info().run_id;
    schedule.task_name = task.name;
    schedule.category = task.category;
    schedule.speedup = *best.fitness / *start.fitness;
    std::optional<double> previous;
    for (const auto& link : chain) {
        ScheduleStep step;
        step.candidate_id = link.id;
        step.origin = std::string(origin_name(link.origin));
        step.note = link.note.substr(0, k_note_chars);
        if (link.fitness && previous && *previous > 0)
            step.speedup = *link.fitness / *previous;
        if (auto plan = archive.candidate_plan(link.id))
            for (const auto& claimed : plan->techniques)
                if (claimed.applied != Applied::missing)
                    step.techniques.push_back(claimed.choice.id);
        previous = link.fitness;
        schedule.steps.push_back(std::move(step));
    }
    return schedule;
}

} // namespace kforge
