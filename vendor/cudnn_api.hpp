// cuDNN 9, opened at the first conv step rather than linked.
//
// libkforge_vendor.so must load, and run matmul steps and the other baselines, on a machine
// without cuDNN: cuDNN is not part of the CUDA Toolkit, and a build carried to a GPU machine
// (scripts/pack-gpu.sh) may find none there. Linking libcudnn.so.9 would make the whole library
// fail to load on such a machine, taking cuBLAS and CUB with it; opening it on first use turns its
// absence into a clear KFORGE_VENDOR_UNAVAILABLE on conv steps alone (docs/library-steps.md asks
// exactly that). libcudnn.so.9 is itself a small shim that opens its sub-libraries beside it, so
// opening it is what a link would do anyway. The build needs only cuDNN's headers; each function
// is typed from its own declaration (decltype), so a mismatch with the headers cannot compile.
#pragma once

#include <string>

#include <cudnn_graph.h>

namespace kforge::vendor {

// Every cuDNN function the conv step uses.
#define KF_CUDNN_FUNCTIONS(X)                                                                      \
    X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnGetLastErrorString) X(cudnnCreate) X(cudnnSetStream) \
    X(cudnnBackendCreateDescriptor) X(cudnnBackendDestroyDescriptor) X(cudnnBackendSetAttribute)          \
    X(cudnnBackendGetAttribute) X(cudnnBackendFinalize) X(cudnnBackendExecute)

struct CudnnApi {
#define KF_DECLARE_CUDNN_FN(name) decltype(&::name) name = nullptr;
    KF_CUDNN_FUNCTIONS(KF_DECLARE_CUDNN_FN)
#undef KF_DECLARE_CUDNN_FN
};

// The loaded functions; opens libcudnn.so.9 on the first call. Fails with Status::unavailable and
// the reason (every place tried, with the loader's error; a cuDNN other than 9.x) when cuDNN
// cannot be used; the failure is remembered, so later calls fail at once with the same reason.
const CudnnApi& cudnn_api();
// Short for cudnn_api() at call sites: KF_CUDNN_CHECK(dnn().cudnnBackendFinalize(plan)).
inline const CudnnApi& dnn() { return cudnn_api(); }

// The process's cuDNN handle, made on first use in the current context (see shared_lt_handle in
// steps/matmul.cpp for why it is never destroyed).
cudnnHandle_t shared_cudnn_handle();

// "CUDNN_STATUS_NOT_SUPPORTED (...)" plus cuDNN's last error message, when it has one.
std::string cudnn_error_text(cudnnStatus_t status);

// A backend descriptor of cuDNN's graph API, destroyed with its owner.
class CudnnDescriptor
{
public:
    explicit CudnnDescriptor(cudnnBackendDescriptorType_t type);
    ~CudnnDescriptor();
    CudnnDescriptor(CudnnDescriptor&& other) noexcept : m_desc(other.m_desc) { other.m_desc = nullptr; }
    CudnnDescriptor& operator=(CudnnDescriptor&& other) noexcept;
    CudnnDescriptor(const CudnnDescriptor&) = delete;
    CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
    cudnnBackendDescriptor_t get() const { return m_desc; }

private:
    cudnnBackendDescriptor_t m_desc = nullptr;
};

#define KF_CUDNN_CHECK(call)                                                                       \
    do {                                                                                           \
        cudnnStatus_t kf_dnn_status_ = (call);                                                     \
        if (kf_dnn_status_ != CUDNN_STATUS_SUCCESS)                                                \
            ::kforge::vendor::fail_cuda_call(#call, __FILE__, __LINE__,                            \
                                             ::kforge::vendor::cudnn_error_text(kf_dnn_status_));  \
    } while (0)

} // namespace kforge::vendor
