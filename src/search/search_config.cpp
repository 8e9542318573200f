// Search settings: validation and their JSON form in the run record; see search_config.hpp.
#include "search/search_config.hpp"

#include <cmath>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

Json optional_json(const std::optional<int64_t>& value) { return value ? Json(*value) : Json(); }
Json optional_json(const std::optional<double>& value) { return value ? Json(*value) : Json(); }

std::string_view progress_name(ProgressMode mode)
{
    switch (mode) {
    case ProgressMode::automatic: return "auto";
    case ProgressMode::live: return "live";
    case ProgressMode::lines: return "lines";
    case ProgressMode::quiet: return "quiet";
    }
    return "auto";
}

ProgressMode parse_progress(std::string_view name)
{
    for (auto mode : {ProgressMode::automatic, ProgressMode::live, ProgressMode::lines, ProgressMode::quiet})
        if (progress_name(mode) == name)
            return mode;
    return ProgressMode::automatic;
}

} // namespace

SelectionMix parse_selection_mix(std::string_view text)
{
    std::vector<std::string> parts = split(text, ',');
    auto bad = [&](std::string_view why) {
        fail(ErrorKind::usage, "--mix '{}': {}; expected three non-negative weights exploit,explore,target such as "
                               "0.6,0.2,0.2",
             text, why);
    };
    if (parts.size() != 3)
        bad(fmt::format("{} value{}", parts.size(), parts.size() == 1 ? "" : "s"));
    double values[3];
    for (size_t i = 0; i < 3; ++i) {
        try {
            size_t used = 0;
            std::string part = trim(parts[i]);
            values[i] = std::stod(part, &used);
            if (used != part.size())
                bad(fmt::format("'{}' is not a number", part));
        } catch (const std::logic_error&) {
            bad(fmt::format("'{}' is not a number", parts[i]));
        }
        if (!std::isfinite(values[i]))
            bad(fmt::format("'{}' is not a finite number", trim(parts[i])));
        if (!(values[i] >= 0))
            bad("a weight is negative");
    }
    // Finite weights can still sum to infinity, which would make every selection draw NaN.
    double sum = values[0] + values[1] + values[2];
    if (!std::isfinite(sum))
        bad("the weights' sum is not a finite number");
    if (sum <= 0)
        bad("all weights are zero");
    return SelectionMix{values[0], values[1], values[2]};
}

std::string_view edit_form_policy_name(EditFormPolicy policy)
{
    switch (policy) {
    case EditFormPolicy::whole: return "whole";
    case EditFormPolicy::diff: return "diff";
    case EditFormPolicy::mix: return "mix";
    }
    return "mix";
}

std::optional<EditFormPolicy> parse_edit_form_policy(std::string_view name)
{
    for (auto policy : {EditFormPolicy::whole, EditFormPolicy::diff, EditFormPolicy::mix})
        if (edit_form_policy_name(policy) == name)
            return policy;
    return std::nullopt;
}

double parse_strategy(std::string_view name, std::optional<double> share)
{
    if (share && !(*share > 0 && *share < 1))
        fail(ErrorKind::usage, "--plan-share {}: expected a share between 0 and 1 (exclusive); use --strategy plan "
                               "for every proposal, direct for none", *share);
    if (name == "direct" || name == "plan") {
        if (share)
            fail(ErrorKind::usage, "--plan-share goes with --strategy mix, not --strategy {}", name);
        return name == "plan" ? 1.0 : 0.0;
    }
    if (name == "mix")
        return share.value_or(0.5);
    fail(ErrorKind::usage, "--strategy '{}': expected direct (one call per proposal), plan (a planner, then a coder) "
                           "or mix (a share of each, --plan-share)", name);
}

std::string describe_strategy(double plan_share)
{
    if (plan_share <= 0)
        return "direct";
    if (plan_share >= 1)
        return "plan";
    return fmt::format("mix {:.2f}", plan_share);
}

void SearchConfig::validate() const
{
    auto require = [](bool ok, std::string_view what) {
        if (!ok)
            fail(ErrorKind::usage, "{}", what);
    };
    require(islands >= 1 && islands <= 64, "--islands must be between 1 and 64");
    require(parallel >= 1 && parallel <= 64, "--parallel must be between 1 and 64");
    require(window >= 0 && window <= 1024, "the window must be between 0 (automatic) and 1024");
    require(generation_size >= 1, "--generation-size must be at least 1");
    require(migrate_every >= 1, "--migrate-every must be at least 1");
    require(meta_every >= 1, "--meta-every must be at least 1");
    require(max_lessons >= 0 && lessons_per_prompt >= 0, "lesson limits must not be negative");
    require(plan_share >= 0 && plan_share <= 1, "the plan share must be between 0 and 1");
    require(plan_explore >= 0 && plan_explore <= 1, "--plan-explore must be between 0 and 1");
    require(budgets.candidates >= 1, "--budget must be at least 1");
    require(!budgets.max_calls || *budgets.max_calls >= 0, "--max-calls must not be negative");
    require(!budgets.max_cost_usd || *budgets.max_cost_usd >= 0, "--max-cost must not be negative");
    require(!budgets.max_seconds || *budgets.max_seconds > 0, "--time must be positive");
    require(!budgets.patience || *budgets.patience >= 1, "--patience must be at least 1");
    require(mix.exploit >= 0 && mix.explore >= 0 && mix.target >= 0 && mix.exploit + mix.explore + mix.target > 0,
            "--mix needs non-negative weights, not all zero");
}

Json SearchConfig::to_json() const
{
    return Json{{"islands", islands},
                {"parallel", parallel},
                {"window", window},
                {"generation_size", generation_size},
                {"migrate_every", migrate_every},
                {"meta_every", meta_every},
                {"mix", {{"exploit", mix.exploit}, {"explore", mix.explore}, {"target", mix.target}}},
                {"edit_form", edit_form_policy_name(edit_form)},
                {"repairs", repairs},
                {"tune", tune},
                {"plan_share", plan_share},
                {"plan_explore", plan_explore},
                {"menu", menu},
                {"max_lessons", max_lessons},
                {"lessons_per_prompt", lessons_per_prompt},
                {"budgets",
                 {{"candidates", budgets.candidates},
                  {"max_calls", optional_json(budgets.max_calls)},
                  {"max_cost_usd", optional_json(budgets.max_cost_usd)},
                  {"max_seconds", optional_json(budgets.max_seconds)},
                  {"patience", budgets.patience ? Json(*budgets.patience) : Json()}}},
                {"seed", std::to_string(seed)},
                {"interrupt_grace_s", interrupt_grace_s},
                {"progress", progress_name(progress)}};
}

SearchConfig SearchConfig::from_json(const Json& json, std::string_view what)
{
    SearchConfig config;
    JsonReader reader(json, std::string(what));
    if (!reader.is_object())
        reader.fail("the search settings must be an object");
    config.islands = static_cast<int>(reader.get_int("islands", config.islands));
    config.parallel = static_cast<int>(reader.get_int("parallel", config.parallel));
    config.window = static_cast<int>(reader.get_int("window", config.window));
    config.generation_size = static_cast<int>(reader.get_int("generation_size", config.generation_size));
    config.migrate_every = static_cast<int>(reader.get_int("migrate_every", config.migrate_every));
    config.meta_every = static_cast<int>(reader.get_int("meta_every", config.meta_every));
    if (auto mix = reader.find("mix")) {
        config.mix.exploit = mix->get_number("exploit", config.mix.exploit);
        config.mix.explore = mix->get_number("explore", config.mix.explore);
        config.mix.target = mix->get_number("target", config.mix.target);
    }
    if (auto form = parse_edit_form_policy(reader.get_string("edit_form", "mix")))
        config.edit_form = *form;
    // Archives written before rounds were counted say "repair": true for one round.
    config.repairs = reader.has("repairs") ? static_cast<int>(reader.get_int("repairs", config.repairs))
                                           : (reader.get_bool("repair", true) ? 1 : 0);
    config.tune = reader.get_bool("tune", config.tune);
    config.plan_share = reader.get_number("plan_share", config.plan_share);
    config.plan_explore = reader.get_number("plan_explore", config.plan_explore);
    config.menu = reader.get_string("menu", "");
    config.max_lessons = static_cast<int>(reader.get_int("max_lessons", config.max_lessons));
    config.lessons_per_prompt = static_cast<int>(reader.get_int("lessons_per_prompt", config.lessons_per_prompt));
    if (auto budgets = reader.find("budgets")) {
        config.budgets.candidates = budgets->get_int("candidates", config.budgets.candidates);
        auto present = [&](std::string_view key) { return budgets->has(key) && !budgets->at(key).json().is_null(); };
        if (present("max_calls"))
            config.budgets.max_calls = budgets->at("max_calls").as_int();
        if (present("max_cost_usd"))
            config.budgets.max_cost_usd = budgets->at("max_cost_usd").as_number();
        if (present("max_seconds"))
            config.budgets.max_seconds = budgets->at("max_seconds").as_number();
        if (present("patience"))
            config.budgets.patience = static_cast<int>(budgets->at("patience").as_int());
    }
    std::string seed = reader.get_string("seed", "0");
    try {
        config.seed = std::stoull(seed);
    } catch (const std::logic_error&) {
        reader.at("seed").fail("expected an unsigned integer in a string");
    }
    config.interrupt_grace_s = reader.get_number("interrupt_grace_s", config.interrupt_grace_s);
    config.progress = parse_progress(reader.get_string("progress", "auto"));
    return config;
}

} // namespace kforge
