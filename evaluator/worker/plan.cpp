// Module loading, launch-limit checks, plan launches and deadline waits.
#include "evaluator/worker/plan.hpp"

#include "evaluator/worker/library_steps.hpp"

#include <cstring>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kforge {

LoadedKernels::LoadedKernels(const std::string& cubin, const std::vector<std::string>& kernels) : m_module(cubin)
{
    const auto& cu = driver();
    for (const auto& name : kernels) {
        if (m_functions.count(name))
            continue;
        FunctionInfo info;
        info.function = m_module.function(name);
        auto attribute = [&](CUfunction_attribute a) {
            int value = 0;
            KF_CU_CHECK(cu.cuFuncGetAttribute(&value, a, info.function));
            return value;
        };
        info.registers = attribute(CU_FUNC_ATTRIBUTE_NUM_REGS);
        info.local_bytes = attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
        info.static_smem = attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
        info.const_bytes = attribute(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
        info.max_threads_per_block = attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
        info.max_dynamic_smem = attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
        m_functions.emplace(name, info);
    }
}

const FunctionInfo& LoadedKernels::info(const std::string& kernel) const { return m_functions.at(kernel); }

std::string check_launch_limits(const LoadedKernels& kernels, const ResolvedPlan& plan, const DeviceFacts& facts)
{
    for (size_t i = 0; i < plan.launches.size(); ++i) {
        const auto& launch = plan.launches[i];
        if (launch.library)
            continue; // the library's own kernels keep their own limits
        const FunctionInfo& info = kernels.info(launch.kernel);
        int threads = static_cast<int>(launch.block[0] * launch.block[1] * launch.block[2]);
        if (threads > info.max_threads_per_block)
            return fmt::format("launch {} ({}): {} threads per block, but the compiled kernel allows at most {} "
                               "(it uses {} registers per thread; add __launch_bounds__ or use fewer registers)",
                               i, launch.kernel, threads, info.max_threads_per_block, info.registers);
        int smem_total = static_cast<int>(launch.smem) + info.static_smem;
        if (smem_total > facts.max_smem_per_block_optin)
            return fmt::format("launch {} ({}): {} bytes of shared memory ({} static + {} dynamic), over the "
                               "device's limit of {} per block",
                               i, launch.kernel, smem_total, info.static_smem, launch.smem,
                               facts.max_smem_per_block_optin);
    }
    return "";
}

namespace {

CUtensorMapDataType tensor_map_type(DType dtype)
{
    switch (dtype) {
    case DType::u8: return CU_TENSOR_MAP_DATA_TYPE_UINT8;
    case DType::u16: return CU_TENSOR_MAP_DATA_TYPE_UINT16;
    case DType::u32: return CU_TENSOR_MAP_DATA_TYPE_UINT32;
    case DType::i32: return CU_TENSOR_MAP_DATA_TYPE_INT32;
    case DType::u64: return CU_TENSOR_MAP_DATA_TYPE_UINT64;
    case DType::i64: return CU_TENSOR_MAP_DATA_TYPE_INT64;
    case DType::f16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DType::bf16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case DType::f32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case DType::f64: return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    default: break;
    }
    throw CudaError(CUDA_ERROR_INVALID_VALUE,
                    fmt::format("tensor map of a {} tensor: TMA has no such element type", dtype_name(dtype)));
}

CUtensorMapSwizzle tensor_map_swizzle(int bytes)
{
    switch (bytes) {
    case 32: return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64: return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128: return CU_TENSOR_MAP_SWIZZLE_128B;
    default: return CU_TENSOR_MAP_SWIZZLE_NONE;
    }
}

} // namespace

std::vector<unsigned char> encode_tensor_map(const ResolvedArg& arg, CUdeviceptr address)
{
    // plan_check resolved and checked every number against the encoder's rules; what the driver
    // still refuses (an unaligned address of a scratch view, say) becomes a CudaError message.
    CUtensorMap map{}; // the header gives the type its alignment (64 bytes in CUDA 12, 128 in 13)
    const auto rank = static_cast<cuuint32_t>(arg.map_dims.size());
    std::vector<cuuint32_t> element_strides(rank, 1);
    CUresult r = driver().cuTensorMapEncodeTiled(
        &map, tensor_map_type(arg.dtype), rank, reinterpret_cast<void*>(address), arg.map_dims.data(),
        arg.map_strides.data(), arg.map_box.data(), element_strides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE,
        tensor_map_swizzle(arg.map_swizzle), CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        throw CudaError(r, fmt::format("cuTensorMapEncodeTiled for the tensor map of '{}' (box {}, swizzle {}): {}",
                                       arg.name, fmt::join(arg.map_box, "x"), arg.map_swizzle,
                                       describe_cuda_error(r)));
    static_assert(sizeof map == k_tensor_map_bytes, "the argument check counts a tensor map as k_tensor_map_bytes");
    std::vector<unsigned char> bytes(sizeof map);
    std::memcpy(bytes.data(), &map, sizeof map);
    return bytes;
}

void launch_plan(const LoadedKernels& kernels, const ResolvedPlan& plan, const BufferBindings& buffers, CUstream stream,
                 const PlanSteps* steps)
{
    const auto& cu = driver();
    // Argument storage must outlive each cuLaunchKernel call; one buffer per launch.
    for (size_t index = 0; index < plan.launches.size(); ++index) {
        const auto& launch = plan.launches[index];
        if (launch.library) {
            if (!steps)
                throw CudaError(CUDA_ERROR_INVALID_VALUE,
                                fmt::format("launches[{}]: a library step, but no steps were prepared", index));
            steps->run(index, buffers, stream);
            continue;
        }
        const FunctionInfo& info = kernels.info(launch.kernel);
        if (launch.smem > 48 * 1024 && static_cast<int>(launch.smem) > info.max_dynamic_smem)
            KF_CU_CHECK(cu.cuFuncSetAttribute(info.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                              static_cast<int>(launch.smem)));
        std::vector<std::vector<unsigned char>> storage;
        storage.reserve(launch.args.size());
        std::vector<void*> pointers;
        for (const auto& arg : launch.args) {
            if (arg.kind == ResolvedArg::Kind::scalar) {
                storage.push_back(scalar_bytes(arg));
            } else if (arg.kind == ResolvedArg::Kind::tensor_map) {
                storage.push_back(encode_tensor_map(arg, buffers.at(arg.name)));
            } else {
                CUdeviceptr ptr = buffers.at(arg.name);
                std::vector<unsigned char> bytes(sizeof ptr);
                std::memcpy(bytes.data(), &ptr, sizeof ptr);
                storage.push_back(std::move(bytes));
            }
            pointers.push_back(storage.back().data());
        }
        KF_CU_CHECK(cu.cuLaunchKernel(info.function, launch.grid[0], launch.grid[1], launch.grid[2],
                                      launch.block[0], launch.block[1], launch.block[2], launch.smem, stream,
                                      pointers.data(), nullptr));
    }
}

WaitStatus wait_for_stream(CUstream stream, std::chrono::steady_clock::time_point deadline)
{
    const auto& cu = driver();
    auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(500);
    for (;;) {
        CUresult r = cu.cuStreamQuery(stream);
        if (r == CUDA_SUCCESS)
            return WaitStatus::done;
        if (r != CUDA_ERROR_NOT_READY)
            throw_cuda_error(r, "cuStreamQuery (the candidate's work)", __FILE__, __LINE__);
        auto now = std::chrono::steady_clock::now();
        if (now >= deadline) {
            mark_context_lost();
            return WaitStatus::timeout;
        }
        // Spin briefly (most waits are short), then sleep so a long kernel does not burn a core.
        if (now < spin_until)
            std::this_thread::yield();
        else
            std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
}

double theoretical_occupancy(const FunctionInfo& info, const ResolvedLaunch& launch, const DeviceFacts& facts)
{
    int threads = static_cast<int>(launch.block[0] * launch.block[1] * launch.block[2]);
    int blocks = 0;
    if (driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, info.function, threads, launch.smem) !=
        CUDA_SUCCESS)
        return 0;
    int warps_per_block = (threads + facts.warp_size - 1) / facts.warp_size;
    int max_warps = facts.max_threads_per_sm / facts.warp_size;
    return max_warps > 0 ? std::min(1.0, static_cast<double>(blocks * warps_per_block) / max_warps) : 0;
}

} // namespace kforge
