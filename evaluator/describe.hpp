// MAP-Elites descriptors of a candidate, computed by kforge (never self-reported by the model).
//
// Four axes with fixed bins (DESIGN.md §6.5, §7), read off the source (after comments and strings
// are removed), the resolved plan and the loaded kernels' resources:
//   memory:    plain < vector (16/8-byte loads and stores) < smem (shared-memory tiles) < async
//              (cp.async, TMA, memcpy_async) — the most advanced technique present
//   compute:   scalar < shuffle (warp shuffles/reductions) < mma (mma.sync, WMMA) < wgmma
//   work:      output elements per thread of the largest launch: w1 (<=1), w4 (<=4), w16 (<=16), w64+
//   occupancy: theoretical occupancy of the heaviest launch: o25, o50, o75, o100
// Fixed bins, never rescaled, so a cell means the same thing for the whole run and across runs.
#pragma once

#include <string>
#include <vector>

#include "core/plan_check.hpp"
#include "util/json_reader.hpp"

namespace kforge {

struct DescriptorInputs {
    std::string source;
    ResolvedPlan plan;              // at the largest bench shape
    int64_t output_elements = 0;    // of all out/inout tensors at that shape
    double occupancy = 0;           // theoretical, of the launch with the most threads (0..1)
};

Json describe_candidate(const DescriptorInputs& inputs);
// "vector/shuffle/w4/o50": the grid cell of a descriptor object.
std::string descriptor_cell(const Json& descriptors);
// The bins of each axis, in order (for drawing grids and choosing target cells).
const std::vector<std::pair<std::string, std::vector<std::string>>>& descriptor_axes();

} // namespace kforge
