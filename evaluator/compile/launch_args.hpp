// Checking a plan's launches against the kernels as compiled: the argument count and each
// argument's size must be the kernel's own parameter list (from the CUBIN, cubin_info.hpp).
//
// The driver copies each parameter's size in bytes from the pointer kforge hands it, whatever
// kforge meant: a plan that passes two arguments to a four-parameter kernel, or an i32 where the
// kernel takes a 64-bit integer, launches with whatever lies beyond. The plan can only say what it
// passes (tensors and scratch buffers as 8-byte pointers, scalars as their dtype, sizes and params
// as i32 unless given a dtype), so this check runs on each compiled variant before any GPU work,
// and a mismatch is the candidate's plan_error.
#pragma once

#include <string>

#include "core/plan.hpp"
#include "core/task.hpp"
#include "evaluator/compile/compile.hpp"

namespace kforge {

// The size in bytes the evaluator passes for launch argument `arg` (plan_check.hpp's resolution,
// without a shape): 8 for a tensor or scratch buffer, the dtype's size for a scalar.
size_t launch_argument_bytes(const Task& task, const Plan& plan, const PlanArg& arg);

// "" when every launch of `plan` passes exactly the parameters its kernel takes in `compiled`
// (count and sizes), otherwise the first mismatch, naming the launch, the argument and the
// kernel's parameter list. A kernel whose parameters the CUBIN does not record is not checked.
std::string check_launch_arguments(const Task& task, const Plan& plan, const CompileResult& compiled);

} // namespace kforge
