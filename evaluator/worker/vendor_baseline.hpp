// Vendor-library baselines (cuBLAS, CUB, cuSPARSE) for the GPU worker, from libkforge_vendor.so.
//
// The routines live in a shared library of their own, built with nvcc (vendor/kforge_vendor.h),
// so that kforge starts without cuBLAS, cuSPARSE or a driver. The GPU worker loads it here, once,
// after the driver is up: from $KFORGE_VENDOR_LIB when set, else beside the running binary. A
// missing library, one from another build (ABI version), or one that lacks a routine is never an
// exception: the baseline is unavailable and reason()/problem() says why, for the run to report.
//
// Use, on the worker's thread with its primary context current:
//   const VendorLibrary& library = VendorLibrary::shared();
//   VendorBaseline baseline = library.prepare("cublas_sgemm", bind_vendor_operands(task, shape, addresses));
//   if (!baseline.ready()) -> report baseline.problem()
//   per run: reset outputs; baseline.stage(stream); [flush]; baseline.run(stream)   (both only enqueue)
// A prepared baseline keeps the buffers' addresses and sizes (not their contents): prepare again
// when the shape, and with it the buffers, changes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <cuda.h>

#include "core/task.hpp"
#include "util/dynlib.hpp"

namespace kforge {

// The operands of a routine, by the task's names: tensors at their device addresses, and the
// shape's size symbols and the task's scalar arguments as values.
struct VendorBindings {
    struct Tensor {
        std::string name;
        uint64_t device_ptr = 0;     // CUdeviceptr
        DType dtype = DType::f32;
        uint64_t count = 0;          // elements
    };
    struct Value {
        std::string name;
        int64_t int_value = 0;
        double real_value = 0;
    };
    std::vector<Tensor> tensors;
    std::vector<Value> values;
};

// Bindings for `task` at `shape`: every tensor argument at its address in `addresses` (a missing
// one throws Error(runtime): the caller's bug), every scalar argument evaluated as a plan passes it
// (floats to real_value, integers to both fields), and every size symbol not shadowed by a scalar
// of the same name.
VendorBindings bind_vendor_operands(const Task& task, const Shape& shape,
                                    const std::map<std::string, uint64_t, std::less<>>& addresses);

class VendorLibrary;

// One prepared routine; releases the library's state when destroyed (unless the context is lost,
// see cuda_driver.hpp). Move-only.
class VendorBaseline
{
public:
    VendorBaseline() = default;
    ~VendorBaseline();
    VendorBaseline(VendorBaseline&& other) noexcept;
    VendorBaseline& operator=(VendorBaseline&& other) noexcept;
    VendorBaseline(const VendorBaseline&) = delete;
    VendorBaseline& operator=(const VendorBaseline&) = delete;

    bool ready() const { return m_state != nullptr; }
    const std::string& routine() const { return m_routine; }
    // Why prepare failed ("" when ready): the library is unavailable, the task lacks an operand
    // the routine needs, or a library call failed.
    const std::string& problem() const { return m_problem; }
    // Enqueue the unmeasured preparation of a run (kforge_vendor.h: saxpy copies y into z, spmv
    // zeroes y) and the routine itself. Each returns "" or the library's error message.
    std::string stage(CUstream stream) const;
    std::string run(CUstream stream) const;

private:
    friend class VendorLibrary;
    using EnqueueFn = int (*)(void* state, void* stream, char* error, size_t error_len);
    std::string enqueue(EnqueueFn entry, CUstream stream) const;
    void release();

    const VendorLibrary* m_library = nullptr;
    void* m_state = nullptr;
    std::string m_routine;
    std::string m_problem;
};

// The library-step entry points (vendor_step_api.hpp); this header stays free of the vendor's C
// interface, which only the worker's own files see.
struct VendorStepApi;

class VendorLibrary
{
public:
    // The library of this process, loaded on first use from vendor_library_path() and never
    // unloaded (the CUDA runtime inside it keeps state until exit). Thread-safe.
    static const VendorLibrary& shared();
    // Loads the library at `path`; never throws.
    explicit VendorLibrary(const std::filesystem::path& path);
    // Same, accepting only a library of interface version `required_abi_version` (kforge wants
    // KFORGE_VENDOR_ABI_VERSION; tests ask for another to see the refusal).
    VendorLibrary(const std::filesystem::path& path, int required_abi_version);
    ~VendorLibrary();
    VendorLibrary(const VendorLibrary&) = delete;
    VendorLibrary& operator=(const VendorLibrary&) = delete;

    bool available() const { return m_reason.empty(); }
    // Why the library cannot be used ("" when it can): not found (and why this build lacks it),
    // not loadable (e.g. cuBLAS missing on this machine), or from another kforge (ABI version).
    const std::string& reason() const { return m_reason; }
    const std::filesystem::path& path() const { return m_path; }
    // "cuBLAS 13.1.0, cuSPARSE 12.6.3, CUB 3.0.1, CUDA runtime 13.0 (static)"; "" when unavailable.
    std::string versions() const;
    // Every routine name the library knows, available in this build or not.
    std::vector<std::string> routine_names() const;
    // "" when `routine` can be prepared; otherwise why not.
    std::string routine_status(const std::string& routine) const;
    // "" when `bindings` hold every operand `routine` needs, with the right dtypes and sizes;
    // otherwise the problem, naming the operand. Touches no GPU (usable in `kforge task check`).
    std::string check(const std::string& routine, const VendorBindings& bindings) const;
    // The library calls `routine` would make on `bindings` (kforge_vendor_describe): every size,
    // leading dimension, transpose flag and operand name. Touches no GPU. Fails like check().
    struct Call {
        bool ok = false;
        std::string text;            // the calls when ok, else the problem
    };
    Call describe(const std::string& routine, const VendorBindings& bindings) const;
    // Prepares `routine` on `bindings` in the current context; never throws for the library's
    // failures (see VendorBaseline::problem()).
    VendorBaseline prepare(const std::string& routine, const VendorBindings& bindings) const;

    struct SelfTest {
        bool passed = false;
        std::string report;          // "cublas_sgemm: 4 problems ok (...)" or the first failure
    };
    // The library's own check of `routine` on small problems (needs a GPU; for tests).
    SelfTest selftest(const std::string& routine) const;
    // The library steps' entry points; every one is set when available().
    const VendorStepApi& steps() const { return *m_steps; }

private:
    friend class VendorBaseline;
    struct Functions; // the library's entry points (vendor_baseline.cpp)

    std::filesystem::path m_path;
    std::unique_ptr<DynamicLibrary> m_library;
    std::unique_ptr<Functions> m_fn;
    std::unique_ptr<VendorStepApi> m_steps;
    std::string m_reason;
};

// $KFORGE_VENDOR_LIB when set, else libkforge_vendor.so in the folder of the running binary.
std::filesystem::path vendor_library_path();
// Why this build of kforge produced no libkforge_vendor.so (from configure); "" when it did.
std::string vendor_library_build_note();

} // namespace kforge
