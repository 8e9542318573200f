// Plans, technique tallies and schedules as data: names, JSON forms and the arithmetic of tallies.
//
// Tallies keep sums, never means, so that the statistics of several runs are exactly the sums of
// each run's (the knowledge base's claim, checked by the tests). Gains are ratios, so their means are
// geometric: the sums are of logarithms.
#include "core/technique.hpp"

#include <array>
#include <cmath>

#include <fmt/format.h>

#include "util/error.hpp"

namespace kforge {
namespace {

constexpr std::array k_statuses = {PlanStatus::parsed, PlanStatus::repaired, PlanStatus::failed};
constexpr std::array k_applied = {Applied::applied, Applied::missing, Applied::unchecked};
constexpr size_t k_schedule_note_chars = 60;

Json optional_number(const std::optional<double>& value)
{
    return value ? Json(*value) : Json();
}

std::optional<double> geometric_mean(double log_sum, int64_t count)
{
    if (count <= 0)
        return std::nullopt;
    return std::exp(log_sum / static_cast<double>(count));
}

} // namespace

std::string_view plan_status_name(PlanStatus status)
{
    switch (status) {
    case PlanStatus::parsed: return "parsed";
    case PlanStatus::repaired: return "repaired";
    case PlanStatus::failed: return "failed";
    }
    return "failed";
}

std::optional<PlanStatus> parse_plan_status(std::string_view name)
{
    for (PlanStatus status : k_statuses)
        if (plan_status_name(status) == name)
            return status;
    return std::nullopt;
}

std::string_view applied_name(Applied applied)
{
    switch (applied) {
    case Applied::applied: return "applied";
    case Applied::missing: return "missing";
    case Applied::unchecked: return "unchecked";
    }
    return "unchecked";
}

std::optional<Applied> parse_applied(std::string_view name)
{
    for (Applied applied : k_applied)
        if (applied_name(applied) == name)
            return applied;
    return std::nullopt;
}

Json TechniquePlan::to_json() const
{
    Json techniques_json = Json::array();
    for (const auto& choice : techniques)
        techniques_json.push_back({{"id", choice.id}, {"title", choice.title}, {"on_menu", choice.on_menu}});
    return Json{{"techniques", techniques_json},
                {"expected_speedup", optional_number(expected_speedup)},
                {"steps", steps},
                {"why", rationale},
                {"warnings", warnings}};
}

TechniquePlan TechniquePlan::from_json(const Json& json, const std::string& what)
{
    JsonReader reader(json, what);
    if (!reader.is_object())
        reader.fail("expected a plan object");
    TechniquePlan plan;
    for (const auto& item : reader.at("techniques").items())
        plan.techniques.push_back(
            {item.at("id").as_string(), item.get_string("title", ""), item.get_bool("on_menu", true)});
    if (reader.has("expected_speedup") && !reader.at("expected_speedup").json().is_null())
        plan.expected_speedup = reader.at("expected_speedup").as_number();
    if (reader.has("steps"))
        for (const auto& step : reader.at("steps").items())
            plan.steps.push_back(step.as_string());
    plan.rationale = reader.get_string("why", "");
    if (reader.has("warnings"))
        for (const auto& warning : reader.at("warnings").items())
            plan.warnings.push_back(warning.as_string());
    return plan;
}

void TechniqueTally::add(const TechniqueTry& one)
{
    ++tried;
    correct += one.correct ? 1 : 0;
    improved += one.improved ? 1 : 0;
    if (one.gain && *one.gain > 0) {
        ++gains;
        log_gain_sum += std::log(*one.gain);
        if (one.predicted && *one.predicted > 0) {
            ++predictions;
            log_predicted_sum += std::log(*one.predicted);
            log_measured_sum += std::log(*one.gain);
        }
    }
}

TechniqueTally& TechniqueTally::operator+=(const TechniqueTally& other)
{
    tried += other.tried;
    correct += other.correct;
    improved += other.improved;
    gains += other.gains;
    log_gain_sum += other.log_gain_sum;
    predictions += other.predictions;
    log_predicted_sum += other.log_predicted_sum;
    log_measured_sum += other.log_measured_sum;
    return *this;
}

std::optional<double> TechniqueTally::mean_gain() const
{
    return geometric_mean(log_gain_sum, gains);
}

std::optional<double> TechniqueTally::mean_predicted() const
{
    return geometric_mean(log_predicted_sum, predictions);
}

std::optional<double> TechniqueTally::mean_measured() const
{
    return geometric_mean(log_measured_sum, predictions);
}

Json TechniqueTally::to_json() const
{
    return Json{{"tried", tried},
                {"correct", correct},
                {"improved", improved},
                {"mean_gain", optional_number(mean_gain())},
                {"gains", gains},
                {"predicted", optional_number(mean_predicted())},
                {"measured", optional_number(mean_measured())},
                {"predictions", predictions}};
}

bool Schedule::has_techniques() const
{
    for (const auto& step : steps)
        if (!step.techniques.empty())
            return true;
    return false;
}

std::string Schedule::describe() const
{
    std::string text;
    for (const auto& step : steps) {
        std::string what;
        if (!step.techniques.empty()) {
            for (const auto& technique : step.techniques)
                what += (what.empty() ? "" : " + ") + technique;
        } else if (step.origin == "seed" || step.origin == "reference") {
            what = step.note.empty() ? step.origin : step.note;
        } else if (step.origin == "tune") {
            what = "param tune";
        } else {
            what = step.origin + (step.note.empty() ? "" : " (" + step.note.substr(0, k_schedule_note_chars) + ")");
        }
        if (step.speedup)
            what += fmt::format(" {:.2f}x", *step.speedup);
        text += (text.empty() ? "" : " -> ") + what;
    }
    return text;
}

Json Schedule::steps_json() const
{
    Json out = Json::array();
    for (const auto& step : steps)
        out.push_back({{"candidate_id", step.candidate_id},
                       {"origin", step.origin},
                       {"techniques", step.techniques},
                       {"note", step.note},
                       {"speedup", optional_number(step.speedup)}});
    return out;
}

std::vector<ScheduleStep> Schedule::steps_from_json(const Json& json, const std::string& what)
{
    JsonReader reader(json, what);
    std::vector<ScheduleStep> steps;
    for (const auto& item : reader.items()) {
        ScheduleStep step;
        step.candidate_id = item.get_int("candidate_id", 0);
        step.origin = item.get_string("origin", "");
        if (item.has("techniques"))
            for (const auto& technique : item.at("techniques").items())
                step.techniques.push_back(technique.as_string());
        step.note = item.get_string("note", "");
        if (item.has("speedup") && !item.at("speedup").json().is_null())
            step.speedup = item.at("speedup").as_number();
        steps.push_back(std::move(step));
    }
    return steps;
}

} // namespace kforge
