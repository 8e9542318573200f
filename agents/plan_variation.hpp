// Varying a plan's declared param values, and writing a plan back into a source.
//
// The offline proposer's only move: take a kernel whose plan declares params, change the value list
// of one or two params so that a candidate pins a different region of the param space (shift the
// range up or down, narrow it, widen it, pin one value, jump to a window elsewhere), and keep the
// result only if every param point still resolves on every shape of the task within its limits.
// Values stay on the grid of the original list: powers of two stay powers of two, multiples of 32
// stay multiples of 32.
#pragma once

#include <optional>
#include <string>

#include "core/plan.hpp"
#include "core/task.hpp"
#include "util/rng.hpp"

namespace kforge {

struct PlanVariant {
    Plan plan;
    std::string description; // "BLOCK [128, 256, 512] -> [512, 1024]; VEC [2, 4] -> [4]"
};

// One random variant of `plan`'s params, valid for `task` (validate_plan and resolve_plan on every
// shape and param point, at most task.limits.max_param_points points), or nullopt when this draw
// produced nothing valid or nothing different. `kernel_names` are the source's __global__
// functions. Never throws.
std::optional<PlanVariant> vary_plan_params(const Task& task, const Plan& plan,
                                            const std::vector<std::string>& kernel_names, Rng& rng);


} // namespace kforge
