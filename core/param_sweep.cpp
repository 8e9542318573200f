// The param points a sweep evaluates; see param_sweep.hpp.
//
// The sample is Floyd's algorithm over the indices of the full product (exactly `cap` draws, no
// retries, whatever the ratio of cap to total), decoded into points like an odometer reading, the
// last param turning fastest. Sorted indices keep the points in the order enumerate_param_points
// would list them, so logs and compile records read the same way for swept and sampled plans.
#include "core/param_sweep.hpp"

#include <set>

#include <fmt/format.h>

#include "core/source.hpp"
#include "util/hash.hpp"
#include "util/rng.hpp"

namespace kforge {
namespace {

// The plan's params as text: names and value lists, in their (sorted) order.
std::string params_text(const Plan& plan)
{
    std::string text;
    for (const auto& [name, values] : plan.params) {
        text += name + "=";
        for (int64_t v : values)
            text += std::to_string(v) + ",";
        text += ";";
    }
    return text;
}

// Point number `index` of the product, the last param turning fastest.
ParamPoint point_at(const Plan& plan, size_t index)
{
    ParamPoint point;
    for (auto param = plan.params.rbegin(); param != plan.params.rend(); ++param) {
        const std::vector<int64_t>& values = param->second;
        point[param->first] = values[index % values.size()];
        index /= values.size();
    }
    return point;
}

} // namespace

ParamSweep sweep_param_points(const Plan& plan, size_t cap)
{
    ParamSweep sweep;
    sweep.cap = cap;
    sweep.total = count_param_points(plan);
    if (sweep.total <= cap) {
        sweep.points = enumerate_param_points(plan, cap);
        return sweep;
    }
    // A parsed plan has at most 64^8 = 2^48 points, so `total` is exact here and j + 1 cannot wrap.
    sweep.seed = hash64(params_text(plan), 0x6b66737765657000ULL);
    Rng rng(sweep.seed);
    std::set<size_t> chosen;
    for (size_t j = sweep.total - cap; j < sweep.total; ++j)
        if (!chosen.insert(static_cast<size_t>(rng.below(j + 1))).second)
            chosen.insert(j);
    for (size_t index : chosen)
        sweep.points.push_back(point_at(plan, index));
    return sweep;
}

std::string ParamSweep::describe() const
{
    if (!sampled())
        return "";
    return fmt::format("{} of {} param points swept: the task sweeps at most {} (its limits.max_param_points); "
                       "they are a sample of the whole product, drawn with a seed from the plan's params, so the "
                       "same params give the same points at every evaluation. Shorten the param lists to at most "
                       "{} combinations to sweep them all.",
                       points.size(), total, cap, cap);
}

Json ParamSweep::to_json() const
{
    if (!sampled())
        return Json();
    return Json{{"swept", points.size()},
                {"total", total},
                {"cap", cap},
                {"seed", fmt::format("{:016x}", seed)},
                {"note", describe()}};
}

ParamPoint params_for_compile(std::string_view source, const ParamPoint& point)
{
    std::vector<std::string> names;
    for (const auto& [name, value] : point)
        names.push_back(name);
    ParamPoint used;
    for (const auto& name : identifiers_used(source, names))
        used[name] = point.at(name);
    return used;
}

} // namespace kforge
