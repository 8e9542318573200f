// Validating a plan against a task, and resolving it into concrete launches.
//
// validate_plan() runs before anything is compiled: every kernel the plan launches must be a
// __global__ function of the source, every name must be a task argument, a scratch buffer, a size
// symbol, a constant or a param, and the argument types must make sense. resolve_plan() then turns
// the plan into numbers for one shape and one param point, checking the launch limits (zero or
// oversized grids and blocks, shared memory, launch count, scratch size). Both throw PlanError,
// which the evaluator stores as a plan_error verdict.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/task.hpp"

namespace kforge {

// CUDA's hard limits on a launch (any current GPU); the task's Limits may be tighter.
inline constexpr int64_t k_max_grid_x = (int64_t{1} << 31) - 1;
inline constexpr int64_t k_max_grid_yz = 65535;
inline constexpr int64_t k_max_block_xy = 1024;
inline constexpr int64_t k_max_block_z = 64;

void validate_plan(const Task& task, const Plan& plan, const std::vector<std::string>& kernel_names);

// The plan `source` runs with: its own kforge:plan block, else the task's default plan. Throws
// PlanError when the block is malformed or there is neither (not validated: validate_plan).
Plan source_plan(const Task& task, std::string_view source);

// The kernels a plan launches, each once, in the order of its first launch (library steps are no
// kernels of the source and are left out).
std::vector<std::string> launched_kernels(const Plan& plan);

struct ResolvedArg {
    enum class Kind { tensor, scratch, scalar, tensor_map };
    Kind kind = Kind::scalar;
    std::string name;        // tensor or scratch name (a tensor map's tensor); the scalar's name or expression text
    DType dtype = DType::i32;
    int64_t int_value = 0;   // scalars of integer type
    double real_value = 0;   // scalars of floating type
    // Tensor maps only, innermost (contiguous) dimension first, as cuTensorMapEncodeTiled takes
    // them: the tensor's extents, the box, the byte strides of dimensions 1.., the swizzle bytes.
    std::vector<uint64_t> map_dims;
    std::vector<uint32_t> map_box;
    std::vector<uint64_t> map_strides;
    int map_swizzle = 0;
};

struct ResolvedLaunch {
    std::string kernel;                          // empty for a library step
    std::optional<ResolvedLibraryStep> library;  // a library step's numbers (core/library_step.hpp)
    std::array<uint32_t, 3> grid{1, 1, 1};
    std::array<uint32_t, 3> block{1, 1, 1};
    uint32_t smem = 0;
    std::vector<ResolvedArg> args;
};

struct ResolvedScratch {
    std::string name;
    int64_t bytes = 0;
};

struct ResolvedPlan {
    std::vector<ResolvedLaunch> launches; // repeats unrolled, swaps applied
    std::vector<ResolvedScratch> scratch;
};

ResolvedPlan resolve_plan(const Task& task, const Plan& plan, const Shape& shape, const ParamPoint& point);

// Element types a tensor map can describe (cuTensorMapEncodeTiled's data types).
bool tensor_map_dtype_supported(DType dtype);

// Bytes of a scalar's value as the kernel receives it (for cuLaunchKernel's argument array).
std::vector<unsigned char> scalar_bytes(const ResolvedArg& arg);

} // namespace kforge
