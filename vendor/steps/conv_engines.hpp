// Choosing a cuDNN engine configuration for a conv step's operation graph.
//
// The heuristics propose configurations (INSTANT, then FALLBACK); those whose numerical notes
// break the step's precision are left out unbuilt, the rest are built into execution plans in
// order, and a plan that does not finalize or needs more workspace than the step has is not
// allowed. `algo` indexes the allowed plans; only as many are built as reaching it takes.
#pragma once

#include <cstdint>
#include <string>

#include "cudnn_api.hpp"
#include "conv_plan.hpp"

namespace kforge::vendor {

struct EngineChoice {
    CudnnDescriptor config;       // the engine configuration the plan was built from
    CudnnDescriptor plan;         // its finalized execution plan
    int64_t workspace_bytes = 0;  // what the plan needs
    std::string text;             // for kforge_vendor_step_chosen
};

// The allowed configuration number `algo` of `graph`; fails with no_algorithm, saying how many
// there are and why the others were left out, when there are not that many.
EngineChoice choose_engine(const CudnnDescriptor& graph, cudnnHandle_t handle, const ConvPlan& plan, uint64_t algo);

} // namespace kforge::vendor
