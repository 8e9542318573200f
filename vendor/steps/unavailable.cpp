// The library steps a build lacks: their prepare says why, and describe still works (it needs no
// library). configure leaves out cuBLASLt when CUDA::cublasLt is missing and cuDNN when its
// headers are (vendor/CMakeLists.txt); a cuDNN missing at run time is cudnn_api.cpp's to report.
#include "step.hpp"
#include "vendor_routine.hpp"

namespace kforge::vendor {

#if !KFORGE_VENDOR_HAVE_CUBLASLT
std::unique_ptr<LibraryStep> prepare_matmul_step(const KforgeStep&)
{
    fail(Status::unavailable, "matmul: this build of libkforge_vendor.so has no cuBLASLt (CUDA::cublasLt was not "
                              "found when kforge was configured)");
}

std::string cublaslt_version() { return ""; }
#endif

#if !KFORGE_VENDOR_HAVE_CUDNN
namespace {

[[noreturn]] void fail_without_cudnn()
{
    fail(Status::unavailable, "conv: this build of libkforge_vendor.so has no cuDNN (its header cudnn_graph.h was not "
                              "found in the CUDA Toolkit when kforge was configured)");
}

} // namespace

std::unique_ptr<LibraryStep> prepare_conv_step(const KforgeStep&) { fail_without_cudnn(); }

std::string cudnn_build_version() { return ""; }

std::string cudnn_loaded_version() { fail_without_cudnn(); }
#endif

} // namespace kforge::vendor
