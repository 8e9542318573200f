// Loading a compiled candidate (or the reference) and launching its resolved plan.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/plan_check.hpp"
#include "evaluator/worker/context.hpp"

namespace kforge {

// What the driver says about one kernel after loading (cuFuncGetAttribute).
struct FunctionInfo {
    CUfunction function = nullptr;
    int registers = 0;
    int local_bytes = 0;          // per thread: stack and spills
    int static_smem = 0;
    int const_bytes = 0;
    int max_threads_per_block = 0;
    int max_dynamic_smem = 0;     // current opt-in limit
};

class LoadedKernels
{
public:
    // Loads the CUBIN and looks up each kernel; throws CudaError (e.g. a missing name).
    LoadedKernels(const std::string& cubin, const std::vector<std::string>& kernels);
    const FunctionInfo& info(const std::string& kernel) const;
    const std::map<std::string, FunctionInfo>& all() const { return m_functions; }

private:
    Module m_module;
    std::map<std::string, FunctionInfo> m_functions;
};

// Where each tensor and scratch name of a plan lives on the device.
using BufferBindings = std::map<std::string, CUdeviceptr, std::less<>>;

// Checks the plan against what the loaded kernels can do (block size vs the kernel's limit, dynamic
// shared memory vs the device's opt-in limit) and returns "" or the problem, phrased for the model.
std::string check_launch_limits(const LoadedKernels& kernels, const ResolvedPlan& plan, const DeviceFacts& facts);

// The 128 bytes of a tensor-map argument (a CUtensorMap of the tensor at `address`), as the kernel
// receives it by value. Throws CudaError when the driver refuses the description.
std::vector<unsigned char> encode_tensor_map(const ResolvedArg& arg, CUdeviceptr address);

class PlanSteps;

// Enqueues every launch of `plan` on `stream`, its library steps through `steps` (prepared for this
// plan; null when it has none). Throws CudaError when a launch is refused.
void launch_plan(const LoadedKernels& kernels, const ResolvedPlan& plan, const BufferBindings& buffers,
                 CUstream stream, const PlanSteps* steps = nullptr);

enum class WaitStatus { done, timeout };
// Waits until the stream is idle or the deadline passes; throws CudaError when the work failed.
WaitStatus wait_for_stream(CUstream stream, std::chrono::steady_clock::time_point deadline);

// Theoretical occupancy of one launch: resident warps per SM over the device's maximum.
double theoretical_occupancy(const FunctionInfo& info, const ResolvedLaunch& launch, const DeviceFacts& facts);

} // namespace kforge
