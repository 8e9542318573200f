// Which param points of a candidate's plan the evaluator sweeps (DESIGN.md §4: "all combinations up
// to a cap, a sample beyond").
//
// A plan may declare up to 8 params of 64 values each, 2^48 combinations; a task sweeps at most
// limits.max_param_points of them (64 unless the task says otherwise, never more than
// k_max_param_points_limit in util/limits.hpp). Up to the cap every combination is swept. Beyond it
// a sample of `cap` distinct points is drawn from the whole product, not its first corner (the
// first 64 of 8 x 8 x ... points would vary only the last two params), with a seed taken from the
// plan's params: the same params give the same points on every evaluation, in a resumed run, on
// another machine, and in a child that keeps its parent's param lists. A sample is never silent:
// describe() says so, the evaluation's metrics record it (`param_points`), `kforge eval` prints it
// and the next prompt about the candidate tells the model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.hpp"

namespace kforge {

struct ParamSweep {
    std::vector<ParamPoint> points; // in odometer order: the first param varies slowest
    size_t total = 0;               // combinations the params make (count_param_points)
    size_t cap = 0;                 // the task's limits.max_param_points
    uint64_t seed = 0;              // of the sample; 0 when every combination is swept

    bool sampled() const { return points.size() < total; }
    // "" when every combination is swept; otherwise one sentence: how many of how many, the cap
    // that decided it, how the sample was drawn and how to sweep them all.
    std::string describe() const;
    // {"swept", "total", "cap", "seed", "note"} for a sample; null when every combination is swept.
    Json to_json() const;
};

// The points to sweep for `plan` under a cap of `cap` points (see above).
ParamSweep sweep_param_points(const Plan& plan, size_t cap);

// The part of `point` NVRTC must see for `source`: the params its code mentions. A param that only
// the plan reads (a library step's ALGO, a block size used in "grid" alone) changes nothing the
// compiler makes, so every value of it shares one compile (and one CUBIN in the cache).
ParamPoint params_for_compile(std::string_view source, const ParamPoint& point);

} // namespace kforge
