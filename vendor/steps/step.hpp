// Library steps inside libkforge_vendor.so: the prepared state of one step and its factories.
//
// A step is described and checked without a GPU (matmul_plan, conv_plan turn the C
// structs into the exact numbers the library calls take), then prepared once per shape and param
// point in the caller's context (descriptors, the allowed candidates, the chosen one) and run many
// times with the run's operand addresses. abi.cpp owns the states behind the C interface.
#pragma once

#include <memory>
#include <string>

#include <cuda_runtime_api.h>

#include "kforge_vendor.h"

namespace kforge::vendor {

// A prepared step. run() only enqueues on the stream: no synchronization, no allocation.
class LibraryStep
{
public:
    virtual ~LibraryStep() = default;
    // `operands` holds operand_count() addresses in the order kforge_vendor.h gives.
    virtual void run(const unsigned long long* operands, cudaStream_t stream) = 0;
    virtual size_t operand_count() const = 0;
    // What was chosen, for the record (kforge_vendor_step_chosen).
    const std::string& chosen() const { return m_chosen; }

protected:
    std::string m_chosen;
};

// The library calls `step` makes, with every derived number; fails with bad_bindings naming what
// the library cannot take. Needs no GPU.
std::string describe_step(const KforgeStep& step);

// Prepare a step in the current context. Fail with bad_bindings (as describe_step would),
// unavailable (this build or machine lacks the library), no_algorithm (algo is past the allowed
// candidates, naming how many there are) or library_error (a failing call).
std::unique_ptr<LibraryStep> prepare_matmul_step(const KforgeStep& step);
std::unique_ptr<LibraryStep> prepare_conv_step(const KforgeStep& step);

// Library versions for kforge_vendor_versions(): "cuBLASLt 13.1.0" and what is known of cuDNN
// without loading it; empty when the build lacks the library.
std::string cublaslt_version();
std::string cudnn_build_version();
// The cuDNN in use, e.g. "cuDNN 9.19.0"; opens it, failing with unavailable as a conv step would.
std::string cudnn_loaded_version();

} // namespace kforge::vendor
