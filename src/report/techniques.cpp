// The techniques section of `kforge inspect` and `kforge report`: how the run's two-phase plans went
// (read, repaired, failed; whether the code did what the plan said) and, per technique, the tries
// the statistics count — tried, correct, improved, mean gain, predicted against measured — and the
// times the code left a claimed technique out. The same tally the search keeps and the knowledge
// base sums (search/techniques.hpp), computed from the archive alone.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "report/inspect_report.hpp"
#include "search/techniques.hpp"
#include "util/text_table.hpp"

namespace kforge {
namespace {

Json optional_number(const std::optional<double>& value)
{
    return value ? Json(*value) : Json();
}

std::string ratio_text(const Json& value)
{
    return value.is_null() ? "-" : fmt::format("{:.2f}x", value.get<double>());
}

} // namespace

Json plan_json(const CandidatePlan& plan)
{
    Json techniques = Json::array();
    for (const auto& claimed : plan.techniques)
        techniques.push_back({{"id", claimed.choice.id},
                              {"title", claimed.choice.title},
                              {"on_menu", claimed.choice.on_menu},
                              {"applied", applied_name(claimed.applied)}});
    return {{"menu", plan.menu},
            {"status", plan_status_name(plan.status)},
            {"problem", plan.problem},
            {"focus", plan.focus},
            {"techniques", techniques},
            {"steps", plan.plan ? Json(plan.plan->steps) : Json::array()},
            {"why", plan.plan ? Json(plan.plan->rationale) : Json()},
            {"warnings", plan.plan ? Json(plan.plan->warnings) : Json::array()},
            {"predicted_speedup", optional_number(plan.predicted_speedup)},
            {"measured_speedup", optional_number(plan.measured_speedup)},
            {"followed", plan.followed ? Json(*plan.followed) : Json()},
            {"plan_calls", plan.call_ids}};
}

std::string plan_summary_text(const Json& plan)
{
    if (plan.is_null())
        return "";
    if (plan["status"] == "failed")
        return "plan unreadable";
    std::vector<std::string> names;
    for (const auto& technique : plan["techniques"])
        names.push_back(technique["id"].get<std::string>() +
                        (technique["applied"] == "missing" ? " (missing)" : ""));
    std::string text = fmt::format("{}", fmt::join(names, " + "));
    if (!plan["predicted_speedup"].is_null() || !plan["measured_speedup"].is_null())
        text += fmt::format(", expected {} measured {}", ratio_text(plan["predicted_speedup"]),
                            ratio_text(plan["measured_speedup"]));
    return text;
}

Json techniques_section(const Archive& archive)
{
    std::vector<CandidatePlan> plans = archive.candidate_plans();
    std::map<int64_t, bool> correct;
    if (!plans.empty())
        for (const auto& point : archive.fitness_series())
            correct[point.candidate_id] = point.verdict == VerdictKind::correct;
    std::map<PlanStatus, int64_t> statuses;
    int64_t followed = 0, ignored = 0, unchecked = 0;
    TechniqueTallies tallies;
    std::map<std::string, int64_t> missing;
    std::map<std::string, std::pair<std::string, bool>> titles; // id -> (title, on menu)
    std::vector<std::string> menus;
    RunInfo run = archive.run_info();
    for (const auto& plan : plans) {
        ++statuses[plan.status];
        if (std::find(menus.begin(), menus.end(), plan.menu) == menus.end())
            menus.push_back(plan.menu);
        if (plan.plan)
            (plan.followed ? (*plan.followed ? followed : ignored) : unchecked)++;
        for (const auto& claimed : plan.techniques) {
            titles.emplace(claimed.choice.id, std::make_pair(claimed.choice.title, claimed.choice.on_menu));
            tallies[claimed.choice.id]; // listed even when never tried
            if (claimed.applied == Applied::missing)
                ++missing[claimed.choice.id];
        }
        for (const auto& one : technique_tries_of(plan, correct[plan.candidate_id], run.task_name, ""))
            tallies[one.technique].add(one);
    }
    std::vector<std::pair<std::string, TechniqueTally>> ordered(tallies.begin(), tallies.end());
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const auto& a, const auto& b) { return a.second.tried > b.second.tried; });
    Json rows = Json::array();
    for (const auto& [id, tally] : ordered) {
        Json row = tally.to_json();
        row["technique"] = id;
        row["title"] = titles[id].first;
        row["on_menu"] = titles[id].second;
        row["missing"] = missing[id];
        rows.push_back(row);
    }
    return {{"plans", static_cast<int64_t>(plans.size())},
            {"parsed", statuses[PlanStatus::parsed]},
            {"repaired", statuses[PlanStatus::repaired]},
            {"failed", statuses[PlanStatus::failed]},
            {"followed", followed},
            {"ignored", ignored},
            {"unchecked", unchecked},
            {"menus", menus},
            {"rows", rows}};
}

std::string techniques_heading(const Json& section)
{
    auto times = [](const Json& n) { return fmt::format("{} time{}", n.get<int64_t>(), n.get<int64_t>() == 1 ? "" : "s"); };
    return fmt::format("{} plans ({} read, {} repaired, {} unreadable); the code followed its plan {}, left a "
                       "technique out {}, {} not checkable",
                       section["plans"].get<int64_t>(), section["parsed"].get<int64_t>(),
                       section["repaired"].get<int64_t>(), section["failed"].get<int64_t>(), times(section["followed"]),
                       times(section["ignored"]), section["unchecked"].get<int64_t>());
}

std::string render_techniques_text(const Json& section)
{
    using Align = TextTable::Align;
    std::string out = "techniques: " + techniques_heading(section) + "\n";
    TextTable table({{"technique"},
                     {"tried", Align::right},
                     {"correct", Align::right},
                     {"improved", Align::right},
                     {"mean gain", Align::right},
                     {"predicted", Align::right},
                     {"measured", Align::right},
                     {"left out", Align::right}});
    for (const auto& row : section["rows"])
        table.add_row({row["technique"].get<std::string>(),
                       std::to_string(row["tried"].get<int64_t>()), std::to_string(row["correct"].get<int64_t>()),
                       std::to_string(row["improved"].get<int64_t>()), ratio_text(row["mean_gain"]),
                       ratio_text(row["predicted"]), ratio_text(row["measured"]),
                       std::to_string(row["missing"].get<int64_t>())});
    return out + (table.empty() ? "  none\n" : table.render());
}

} // namespace kforge
