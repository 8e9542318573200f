// The C entry points of libkforge_vendor.so (kforge_vendor.h) and the table of routines.
//
// The table lists every routine kforge knows (core's known_vendor_baselines()), each with its
// factory or, when the library it needs was missing at build time, the reason it is absent. Every
// entry point catches everything: a VendorFailure becomes its status and message, any other
// exception a library error, so the C interface never unwinds into the caller.
#include <cstring>

#include <fmt/format.h>

#include "steps/step.hpp"
#include "vendor_routine.hpp"

namespace kforge::vendor {
namespace {

struct RoutineEntry {
    const char* name;
    RoutineFactory make;  // nullptr: not in this build
    const char* missing;  // why, when make is nullptr
};

#if KFORGE_VENDOR_HAVE_CUBLAS
#define KF_CUBLAS_ROUTINE(fn) fn, nullptr
#else
#define KF_CUBLAS_ROUTINE(fn) nullptr, "this build of libkforge_vendor.so has no cuBLAS (CUDA::cublas was not found when kforge was configured)"
#endif
#if KFORGE_VENDOR_HAVE_CUSPARSE
#define KF_CUSPARSE_ROUTINE(fn) fn, nullptr
#else
#define KF_CUSPARSE_ROUTINE(fn) nullptr, "this build of libkforge_vendor.so has no cuSPARSE (CUDA::cusparse was not found when kforge was configured)"
#endif

const RoutineEntry k_routines[] = {
    {"cublas_sgemm", KF_CUBLAS_ROUTINE(make_cublas_sgemm)},
    {"cublas_gemm_bf16", KF_CUBLAS_ROUTINE(make_cublas_gemm_bf16)},
    {"cublas_saxpy", KF_CUBLAS_ROUTINE(make_cublas_saxpy)},
    {"cublas_geam_transpose", KF_CUBLAS_ROUTINE(make_cublas_geam_transpose)},
    {"cub_reduce_sum", make_cub_reduce_sum, nullptr},
    {"cub_inclusive_scan", make_cub_inclusive_scan, nullptr},
    {"cub_histogram_even", make_cub_histogram_even, nullptr},
    {"cusparse_spmv_csr", KF_CUSPARSE_ROUTINE(make_cusparse_spmv_csr)},
};

const RoutineEntry* find_routine(const char* name)
{
    for (const auto& entry : k_routines)
        if (name && std::strcmp(entry.name, name) == 0)
            return &entry;
    return nullptr;
}

const RoutineEntry& available_routine(const char* name)
{
    const RoutineEntry* entry = find_routine(name);
    if (!entry)
        fail(Status::unavailable, fmt::format("'{}' is not a vendor baseline this library knows (it knows {})",
                                              name ? name : "(null)", kforge_vendor_routine_names()));
    if (!entry->make)
        fail(Status::unavailable, fmt::format("{}: {}", entry->name, entry->missing));
    return *entry;
}

VendorRoutine& routine_of(void* state)
{
    if (!state)
        fail(Status::bad_bindings, "no prepared state (kforge_vendor_prepare failed or was not called)");
    return *static_cast<VendorRoutine*>(state);
}

} // namespace
} // namespace kforge::vendor

using namespace kforge::vendor;

extern "C" {

int kforge_vendor_abi_version(void) { return KFORGE_VENDOR_ABI_VERSION; }

const char* kforge_vendor_routine_names(void)
{
    static const std::string names = [] {
        std::string joined;
        // Appended piece by piece: `"," + std::string(...)` draws a bogus -Wrestrict from GCC 12 at -O3.
        for (const auto& entry : k_routines) {
            if (!joined.empty())
                joined += ',';
            joined += entry.name;
        }
        return joined;
    }();
    return names.c_str();
}

int kforge_vendor_routine_status(const char* name, char* reason, size_t reason_len)
{
    return guarded(reason, reason_len, [&] { available_routine(name); });
}

const char* kforge_vendor_versions(void)
{
    static const std::string versions = [] {
        std::string text;
#if KFORGE_VENDOR_HAVE_CUBLAS
        text += cublas_version() + ", ";
#endif
#if KFORGE_VENDOR_HAVE_CUSPARSE
        text += cusparse_version() + ", ";
#endif
        for (const std::string& library : {cublaslt_version(), cudnn_build_version()})
            if (!library.empty())
                text += library + ", ";
        text += cub_version();
        text += fmt::format(", CUDA runtime {}.{} (static)", CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
        return text;
    }();
    return versions.c_str();
}

int kforge_vendor_prepare(const char* name, const KforgeVendorBindings* bindings, void** state, char* error,
                          size_t error_len)
{
    if (state)
        *state = nullptr;
    return guarded(error, error_len, [&] {
        if (!state)
            fail(Status::bad_bindings, "kforge_vendor_prepare needs somewhere to put the state");
        const RoutineEntry& entry = available_routine(name);
        *state = entry.make(Operands(entry.name, bindings), Mode::prepare, nullptr).release();
    });
}

int kforge_vendor_check(const char* name, const KforgeVendorBindings* bindings, char* error, size_t error_len)
{
    return guarded(error, error_len, [&] {
        const RoutineEntry& entry = available_routine(name);
        entry.make(Operands(entry.name, bindings), Mode::check, nullptr);
    });
}

int kforge_vendor_describe(const char* name, const KforgeVendorBindings* bindings, char* call, size_t call_len)
{
    std::string text;
    int status = guarded(call, call_len, [&] {
        const RoutineEntry& entry = available_routine(name);
        entry.make(Operands(entry.name, bindings), Mode::check, &text);
    });
    if (status == KFORGE_VENDOR_OK)
        copy_text(text, call, call_len);
    return status;
}

int kforge_vendor_stage(void* state, void* cu_stream, char* error, size_t error_len)
{
    return guarded(error, error_len, [&] { routine_of(state).stage(static_cast<cudaStream_t>(cu_stream)); });
}

int kforge_vendor_run(void* state, void* cu_stream, char* error, size_t error_len)
{
    return guarded(error, error_len, [&] { routine_of(state).run(static_cast<cudaStream_t>(cu_stream)); });
}

void kforge_vendor_release(void* state) { delete static_cast<VendorRoutine*>(state); }

} // extern "C"
