// Run-time loading of libcuda.so.1; see the header.
#include "evaluator/worker/cuda_driver.hpp"

#include <atomic>
#include <mutex>

#include <fmt/format.h>

#include "util/dynlib.hpp"

namespace kforge {
namespace {

CudaDriver g_driver;
std::atomic<bool> g_context_lost{false};

std::string load_once()
{
    static DynamicLibrary library({"libcuda.so.1", "libcuda.so"});
    if (!library.loaded())
        return fmt::format("no NVIDIA driver/GPU found (libcuda.so.1 cannot be loaded: {})", library.error());
    using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    auto get_proc = reinterpret_cast<GetProcAddress>(library.symbol("cuGetProcAddress_v2"));
    if (!get_proc)
        return "the NVIDIA driver is too old: libcuda.so.1 lacks cuGetProcAddress_v2 (CUDA 12.0+ needed)";
    std::string missing;
#define KF_RESOLVE_DRIVER_FN(name)                                                                 \
    {                                                                                              \
        void* fn = nullptr;                                                                        \
        CUdriverProcAddressQueryResult status{};                                                   \
        if (get_proc(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS || \
            !fn)                                                                                   \
            missing += (missing.empty() ? "" : ", ") + std::string(#name);                         \
        else                                                                                       \
            g_driver.name = reinterpret_cast<decltype(g_driver.name)>(fn);                         \
    }
    KF_CUDA_DRIVER_FUNCTIONS(KF_RESOLVE_DRIVER_FN)
#undef KF_RESOLVE_DRIVER_FN
    if (!missing.empty())
        return fmt::format("the NVIDIA driver lacks functions kforge needs ({}); a driver for CUDA {}.{} or "
                           "newer is required",
                           missing, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    return "";
}

} // namespace

std::string load_cuda_driver()
{
    static std::once_flag once;
    static std::string result;
    std::call_once(once, [] { result = load_once(); });
    return result;
}

const CudaDriver& driver() { return g_driver; }

void mark_context_lost() { g_context_lost.store(true); }
bool context_lost() { return g_context_lost.load(); }

std::string describe_cuda_error(CUresult result)
{
    const char* name = nullptr;
    const char* text = nullptr;
    if (g_driver.cuGetErrorName)
        g_driver.cuGetErrorName(result, &name);
    if (g_driver.cuGetErrorString)
        g_driver.cuGetErrorString(result, &text);
    return fmt::format("{} ({})", name ? name : fmt::format("CUDA error {}", static_cast<int>(result)),
                       text ? text : "no description");
}

bool is_sticky_cuda_error(CUresult result)
{
    switch (result) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_CONTAINED:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_UNKNOWN:
        return true;
    default:
        return false;
    }
}

void throw_cuda_error(CUresult result, const char* call, const char* file, int line)
{
    if (is_sticky_cuda_error(result))
        mark_context_lost();
    throw CudaError(result, fmt::format("{} failed at {}:{}: {}", call, file, line, describe_cuda_error(result)));
}

} // namespace kforge
