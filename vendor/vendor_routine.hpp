// Inside libkforge_vendor.so: the routine interface, operand lookup, and checked CUDA calls.
//
// Each baseline is a VendorRoutine built from the task's operands by a factory; the C entry points
// (abi.cpp) own the states and turn every VendorFailure into a return code and a message, so no
// exception crosses the C interface. Failures carry the status they map to: a missing operand is
// bad_bindings, a failing library call library_error.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "kforge_vendor.h"

namespace kforge::vendor {

enum class Status {
    ok = KFORGE_VENDOR_OK,
    unavailable = KFORGE_VENDOR_UNAVAILABLE,
    bad_bindings = KFORGE_VENDOR_BAD_BINDINGS,
    library_error = KFORGE_VENDOR_LIBRARY_ERROR,
    mismatch = KFORGE_VENDOR_MISMATCH,
    no_algorithm = KFORGE_VENDOR_NO_ALGORITHM,
};

class VendorFailure : public std::runtime_error
{
public:
    VendorFailure(Status status, const std::string& message) : std::runtime_error(message), m_status(status) {}
    Status status() const { return m_status; }

private:
    Status m_status;
};

[[noreturn]] void fail(Status status, const std::string& message);
[[noreturn]] void fail_cuda_call(const char* call, const char* file, int line, const std::string& why);

// Copies `text` into a caller's buffer of `out_len` bytes, truncated and NUL-terminated.
void copy_text(const std::string& text, char* out, size_t out_len);

// Runs `body` for a C entry point, turning any exception into a status and a message in `error`
// (cleared on success), so that no exception crosses the C interface.
template <typename Body>
int guarded(char* error, size_t error_len, Body body)
{
    try {
        body();
        copy_text("", error, error_len);
        return static_cast<int>(Status::ok);
    } catch (const VendorFailure& e) {
        copy_text(e.what(), error, error_len);
        return static_cast<int>(e.status());
    } catch (const std::exception& e) {
        copy_text(std::string("libkforge_vendor: ") + e.what(), error, error_len);
        return static_cast<int>(Status::library_error);
    } catch (...) {
        copy_text("libkforge_vendor: an unknown exception", error, error_len);
        return static_cast<int>(Status::library_error);
    }
}

// Text of an error code of each API, for the check macros.
std::string cudart_error_text(cudaError_t result);

// One checking macro per API: the call, file:line and the API's own error text.
#define KF_CUDART_CHECK(call)                                                                      \
    do {                                                                                           \
        cudaError_t kf_status_ = (call);                                                           \
        if (kf_status_ != cudaSuccess)                                                             \
            ::kforge::vendor::fail_cuda_call(#call, __FILE__, __LINE__,                            \
                                             ::kforge::vendor::cudart_error_text(kf_status_));     \
    } while (0)

// A tensor operand as the routine uses it.
struct TensorOperand {
    std::string name;
    void* ptr = nullptr;
    uint64_t count = 0;
};

// The task's operands, copied out of the caller's bindings. Lookups fail with bad_bindings and a
// message naming the routine and the operand.
class Operands
{
public:
    Operands(std::string routine, const KforgeVendorBindings* bindings);

    // The tensor `name`, which must have `dtype` and, when `count` is non-zero, that many elements.
    TensorOperand tensor(const std::string& name, const std::string& dtype, uint64_t count = 0) const;
    bool has_value(const std::string& name) const;
    int64_t integer(const std::string& name) const;
    double real(const std::string& name) const;
    // An integer that a library takes as `int`: fails unless 0 < value <= INT_MAX.
    int positive_int(const std::string& name, int64_t value) const;
    const std::string& routine() const { return m_routine; }

private:
    struct Tensor {
        std::string name, dtype;
        uint64_t ptr = 0, count = 0;
    };
    struct Value {
        std::string name;
        int64_t int_value = 0;
        double real_value = 0;
    };
    const Value& value(const std::string& name) const;

    std::string m_routine;
    std::vector<Tensor> m_tensors;
    std::vector<Value> m_values;
};

// Device memory from cudaMalloc, freed in the destructor.
class DeviceBuffer
{
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(size_t bytes);
    ~DeviceBuffer();
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    void* get() const { return m_ptr; }
    size_t bytes() const { return m_bytes; }

private:
    void* m_ptr = nullptr;
    size_t m_bytes = 0;
};

// A prepared baseline. stage() and run() only enqueue on the stream.
class VendorRoutine
{
public:
    virtual ~VendorRoutine() = default;
    // Work before each run that is not measured (see kforge_vendor.h); nothing by default.
    virtual void stage(cudaStream_t) {}
    virtual void run(cudaStream_t stream) = 0;
};

enum class Mode { check, prepare };

// A routine's factory reads the operands into the routine's Args (failing with bad_bindings),
// writes into `call` (when given) the library call those Args give (Routine::describe, built from
// the same values run() passes), and, in prepare mode only, creates the routine: checking a task's
// operands never touches CUDA.
using RoutineFactory = std::unique_ptr<VendorRoutine> (*)(const Operands& operands, Mode mode, std::string* call);

template <typename Routine>
std::unique_ptr<VendorRoutine> make_routine(const Operands& operands, Mode mode, std::string* call)
{
    typename Routine::Args args(operands);
    if (call)
        *call = Routine::describe(args);
    if (mode == Mode::check)
        return nullptr;
    return std::make_unique<Routine>(args);
}

// Initialises the CUDA runtime in the calling thread's current context (device 0's primary
// context when none is current) and fails unless that context is device 0's primary context.
void attach_to_primary_context();

// The driver context current on the calling thread (a CUcontext), or nullptr when there is none.
// Library handles that live for the whole process remember the context they were made in.
void* current_cuda_context();

// A member that runs attach_to_primary_context() when it is constructed; declared first in a
// routine's session, it makes the context check precede every allocation.
struct AttachedContext {
    AttachedContext() { attach_to_primary_context(); }
};

// The factories, one per routine; each file defines those of its library.
std::unique_ptr<VendorRoutine> make_cublas_sgemm(const Operands& operands, Mode mode, std::string* call);
std::unique_ptr<VendorRoutine> make_cublas_gemm_bf16(const Operands& operands, Mode mode, std::string* call);
std::unique_ptr<VendorRoutine> make_cublas_saxpy(const Operands& operands, Mode mode, std::string* call);
std::unique_ptr<VendorRoutine> make_cublas_geam_transpose(const Operands& operands, Mode mode, std::string* call);
std::unique_ptr<VendorRoutine> make_cub_reduce_sum(const Operands& operands, Mode mode, std::string* call);
std::unique_ptr<VendorRoutine> make_cub_inclusive_scan(const Operands& operands, Mode mode, std::string* call);
std::unique_ptr<VendorRoutine> make_cub_histogram_even(const Operands& operands, Mode mode, std::string* call);
std::unique_ptr<VendorRoutine> make_cusparse_spmv_csr(const Operands& operands, Mode mode, std::string* call);

// Versions of the linked libraries, e.g. "cuBLAS 13.1.0"; empty when the library is not built in.
std::string cublas_version();
std::string cusparse_version();
std::string cub_version();

} // namespace kforge::vendor
