// The CUDA driver API, loaded at run time.
//
// kforge must start, and do everything that needs no GPU, on machines without an NVIDIA driver, so
// nothing links libcuda.so.1. The GPU worker (and only it) calls load_cuda_driver(), which dlopens
// the driver and resolves every entry point through cuGetProcAddress for the CUDA version the
// headers describe, so each name resolves to the same versioned symbol a normal link would use.
// Calls then read `driver().cuMemAlloc(...)`, checked by KF_CU_CHECK.
#pragma once

#include <stdexcept>
#include <string>

#include <cuda.h>

namespace kforge {

// Every driver function kforge uses. Adding one here is all it takes to use it.
#define KF_CUDA_DRIVER_FUNCTIONS(X)                                                                \
    X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName)          \
    X(cuDeviceGetUuid) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)     \
    X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuCtxSetLimit)           \
    X(cuCtxResetPersistingL2Cache) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH)       \
    X(cuMemcpyDtoD) X(cuMemsetD8) X(cuMemsetD8Async) X(cuMemsetD32Async) X(cuMemGetInfo)           \
    X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute)             \
    X(cuFuncSetAttribute) X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuLaunchKernel)         \
    X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamQuery)                   \
    X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuEventQuery)      \
    X(cuEventElapsedTime) X(cuGetErrorName) X(cuGetErrorString) X(cuMemHostAlloc) X(cuMemFreeHost) \
    X(cuMemHostGetDevicePointer) X(cuCtxGetDevice) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)   \
    X(cuMemcpyDtoDAsync) X(cuIpcGetMemHandle) X(cuTensorMapEncodeTiled)

struct CudaDriver {
#define KF_DECLARE_DRIVER_FN(name) decltype(&::name) name = nullptr;
    KF_CUDA_DRIVER_FUNCTIONS(KF_DECLARE_DRIVER_FN)
#undef KF_DECLARE_DRIVER_FN
};

// Loads the driver once per process. Returns "" on success, otherwise the reason, starting with
// "no NVIDIA driver/GPU found" when libcuda.so.1 cannot be loaded.
std::string load_cuda_driver();
// The loaded table; only valid after load_cuda_driver() succeeded.
const CudaDriver& driver();

// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)".
std::string describe_cuda_error(CUresult result);
// Errors after which the context is unusable and the process must be replaced (cuda.h says so for
// each of them).
bool is_sticky_cuda_error(CUresult result);

// Once a kernel hangs or a sticky error occurs, the context is lost: freeing memory or unloading a
// module would block behind the spinning kernel (cuMemFree synchronizes) or fail. RAII owners check
// this and leave everything to process exit, which the worker reaches right after replying.
void mark_context_lost();
bool context_lost();

// Thrown by KF_CU_CHECK. The GPU worker turns it into a verdict or a worker restart.
class CudaError : public std::runtime_error
{
public:
    CudaError(CUresult result, const std::string& message) : std::runtime_error(message), m_result(result) {}
    CUresult result() const { return m_result; }
    bool sticky() const { return is_sticky_cuda_error(m_result); }

private:
    CUresult m_result;
};

[[noreturn]] void throw_cuda_error(CUresult result, const char* call, const char* file, int line);

#define KF_CU_CHECK(call)                                                                          \
    do {                                                                                           \
        CUresult kf_result_ = (call);                                                              \
        if (kf_result_ != CUDA_SUCCESS)                                                            \
            ::kforge::throw_cuda_error(kf_result_, #call, __FILE__, __LINE__);                     \
    } while (0)

} // namespace kforge
