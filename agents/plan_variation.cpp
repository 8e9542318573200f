// Param-list mutations and plan-block rewriting; see plan_variation.hpp.
//
// A param's values are read as positions on a grid (exponents for powers of two, multiples of the
// values' gcd otherwise), mutated there, and mapped back. Validation is the task's own: a variant
// survives only if validate_plan accepts it and resolve_plan succeeds for every param point on
// every shape, so limits such as max_threads_per_block are respected through the plan's own
// expressions rather than guessed from param names. Values whose every point fails are pruned
// once before giving up on a draw.
#include "agents/plan_variation.hpp"

#include <algorithm>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "agents/prompt_sections.hpp"
#include "core/plan_check.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr int64_t k_max_value = int64_t{1} << 30;

struct Grid {
    bool powers_of_two = true;
    int64_t step = 1;
    int64_t to_index(int64_t value) const
    {
        if (!powers_of_two)
            return value / step;
        int64_t index = 0;
        while ((int64_t{1} << index) < value)
            ++index;
        return index;
    }
    int64_t to_value(int64_t index) const { return powers_of_two ? int64_t{1} << index : index * step; }
    int64_t min_index() const { return powers_of_two ? 0 : 1; }
    int64_t max_index(int64_t largest) const
    {
        return powers_of_two ? std::min<int64_t>(to_index(largest) + 3, 30) : std::min(largest / step * 4 + 4, k_max_value / step);
    }
};

Grid grid_of(const std::vector<int64_t>& values)
{
    Grid grid;
    grid.powers_of_two = std::all_of(values.begin(), values.end(), [](int64_t v) { return v > 0 && (v & (v - 1)) == 0; });
    if (!grid.powers_of_two) {
        int64_t g = 0;
        for (int64_t v : values)
            g = std::gcd(g, v);
        grid.step = std::max<int64_t>(g, 1);
    }
    return grid;
}

std::string list_text(const std::vector<int64_t>& values)
{
    std::vector<std::string> parts;
    for (int64_t v : values)
        parts.push_back(std::to_string(v));
    return fmt::format("[{}]", join(parts, ", "));
}

// One mutation of a sorted value list, on its grid. May return the list unchanged.
std::vector<int64_t> mutate_values(const std::vector<int64_t>& values, Rng& rng)
{
    Grid grid = grid_of(values);
    std::vector<int64_t> index;
    for (int64_t v : values)
        index.push_back(grid.to_index(v));
    int64_t lo = index.front(), hi = index.back();
    int64_t bottom = grid.min_index(), top = std::max(grid.max_index(values.back()), hi);
    int64_t n = static_cast<int64_t>(index.size());
    auto draw = [&](int64_t from, int64_t to) { // uniform in [from, to]
        return from + static_cast<int64_t>(rng.below(static_cast<uint64_t>(std::max<int64_t>(to - from, 0) + 1)));
    };
    std::set<int64_t> out;
    switch (rng.weighted({2, 2, 2, 1, 2, 1})) {
    case 0: // shift the whole range up, keeping its pattern
    case 1: { // ... or down
        int64_t k = draw(1, n);
        bool up = rng.below(2) == 0;
        for (int64_t i : index)
            out.insert(up ? i + k : i - k);
        break;
    }
    case 2: { // narrow to a contiguous half
        int64_t keep = std::max<int64_t>(1, (n + 1) / 2);
        int64_t start = draw(0, n - keep);
        out.insert(index.begin() + start, index.begin() + start + keep);
        break;
    }
    case 3: // widen by one step on each side
        out.insert(index.begin(), index.end());
        out.insert(lo - 1);
        out.insert(hi + 1);
        break;
    case 4: // pin one value near the current range
        out.insert(draw(lo - 1, hi + 1));
        break;
    default: { // a small window anywhere on the grid
        int64_t width = draw(1, 3);
        int64_t start = draw(bottom, std::max(bottom, top - width + 1));
        for (int64_t i = start; i < start + width; ++i)
            out.insert(i);
        break;
    }
    }
    std::vector<int64_t> result;
    for (int64_t i : out)
        if (i >= bottom && i <= top && grid.to_value(i) >= 1 && grid.to_value(i) <= k_max_value)
            result.push_back(grid.to_value(i));
    return result;
}

std::vector<const std::vector<Shape>*> shape_lists(const Task& task)
{
    return {&task.tests, &task.bench, &task.held_out, &task.stress};
}

bool point_resolves(const Task& task, const Plan& plan, const ParamPoint& point)
{
    try {
        for (const auto* list : shape_lists(task))
            for (const auto& shape : *list)
                resolve_plan(task, plan, shape, point);
        return true;
    } catch (const PlanError&) {
        return false;
    } catch (const ExprError&) {
        return false;
    }
}

std::optional<Plan> rebuild(const Plan& plan, const std::map<std::string, std::vector<int64_t>>& params)
{
    Json json = plan.json;
    json["params"] = Json::object();
    for (const auto& [name, values] : params)
        json["params"][name] = values;
    try {
        return parse_plan(json, "variant");
    } catch (const PlanError&) {
        return std::nullopt;
    }
}

} // namespace

std::optional<PlanVariant> vary_plan_params(const Task& task, const Plan& plan,
                                            const std::vector<std::string>& kernel_names, Rng& rng)
{
    if (plan.params.empty())
        return std::nullopt;
    std::vector<std::string> names;
    for (const auto& [name, values] : plan.params)
        names.push_back(name);
    std::map<std::string, std::vector<int64_t>> original = plan.params;
    for (auto& [name, values] : original) {
        std::sort(values.begin(), values.end());
        values.erase(std::unique(values.begin(), values.end()), values.end());
    }
    std::map<std::string, std::vector<int64_t>> params = original;
    size_t changes = names.size() > 1 && rng.uniform() < 0.3 ? 2 : 1;
    std::set<std::string> changed;
    for (size_t c = 0; c < changes; ++c) {
        const std::string& name = names[rng.below(names.size())];
        if (params[name].empty())
            continue;
        std::vector<int64_t> mutated = mutate_values(params[name], rng);
        if (!mutated.empty()) {
            params[name] = std::move(mutated);
            changed.insert(name);
        }
    }
    if (params == original)
        return std::nullopt;

    for (int pass = 0; pass < 2; ++pass) {
        std::optional<Plan> variant = rebuild(plan, params);
        if (!variant)
            return std::nullopt;
        try {
            validate_plan(task, *variant, kernel_names);
        } catch (const PlanError&) {
            return std::nullopt;
        }
        if (count_param_points(*variant) > static_cast<size_t>(task.limits.max_param_points))
            return std::nullopt;
        std::vector<ParamPoint> points = enumerate_param_points(*variant, static_cast<size_t>(task.limits.max_param_points));
        std::vector<bool> good;
        for (const auto& point : points)
            good.push_back(point_resolves(task, *variant, point));
        if (std::all_of(good.begin(), good.end(), [](bool g) { return g; })) {
            PlanVariant result{std::move(*variant), ""};
            std::vector<std::string> parts;
            for (const auto& name : changed)
                parts.push_back(fmt::format("{} {} -> {}", name, list_text(original.at(name)), list_text(params[name])));
            result.description = join(parts, "; ");
            return result;
        }
        if (pass == 1)
            return std::nullopt;
        // Drop the values of changed params that fail at every point, then check once more.
        for (const auto& name : changed) {
            std::vector<int64_t> kept;
            for (int64_t value : params[name]) {
                bool any_good = false;
                for (size_t p = 0; p < points.size(); ++p)
                    any_good = any_good || (good[p] && points[p].at(name) == value);
                if (any_good)
                    kept.push_back(value);
            }
            if (kept.empty())
                return std::nullopt;
            params[name] = std::move(kept);
        }
        if (params == original)
            return std::nullopt;
    }
    return std::nullopt;
}

} // namespace kforge
