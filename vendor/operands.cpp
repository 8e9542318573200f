// Operand lookup, device buffers, failures and the context check shared by every routine.
//
// Operands copies the caller's bindings at once (the C interface lets the caller free its arrays
// after prepare) and answers lookups by the task's argument names, failing with a message that
// names the routine, the operand and what was expected, so a task whose arguments do not fit a
// baseline says exactly why.
#include <algorithm>
#include <climits>
#include <cstring>
#include <utility>

#include <cuda.h>
#include <fmt/format.h>

#include "vendor_routine.hpp"

namespace kforge::vendor {

void fail(Status status, const std::string& message) { throw VendorFailure(status, message); }

void fail_cuda_call(const char* call, const char* file, int line, const std::string& why)
{
    fail(Status::library_error, fmt::format("{} failed at {}:{}: {}", call, file, line, why));
}

void copy_text(const std::string& text, char* out, size_t out_len)
{
    if (!out || out_len == 0)
        return;
    size_t n = std::min(text.size(), out_len - 1);
    std::memcpy(out, text.data(), n);
    out[n] = '\0';
}

std::string cudart_error_text(cudaError_t result)
{
    return fmt::format("{} ({})", cudaGetErrorName(result), cudaGetErrorString(result));
}

Operands::Operands(std::string routine, const KforgeVendorBindings* bindings) : m_routine(std::move(routine))
{
    if (!bindings)
        return;
    for (size_t i = 0; i < bindings->tensor_count; ++i) {
        const KforgeVendorTensor& t = bindings->tensors[i];
        m_tensors.push_back(Tensor{t.name ? t.name : "", t.dtype ? t.dtype : "", t.device_ptr, t.count});
    }
    for (size_t i = 0; i < bindings->value_count; ++i) {
        const KforgeVendorValue& v = bindings->values[i];
        m_values.push_back(Value{v.name ? v.name : "", v.int_value, v.real_value});
    }
}

TensorOperand Operands::tensor(const std::string& name, const std::string& dtype, uint64_t count) const
{
    for (const auto& t : m_tensors) {
        if (t.name != name)
            continue;
        if (t.dtype != dtype)
            fail(Status::bad_bindings,
                 fmt::format("{}: tensor '{}' is {}, the routine needs {}", m_routine, name, t.dtype, dtype));
        if (count != 0 && t.count != count)
            fail(Status::bad_bindings, fmt::format("{}: tensor '{}' has {} elements where the sizes give {}",
                                                   m_routine, name, t.count, count));
        if (t.ptr == 0 || t.count == 0)
            fail(Status::bad_bindings, fmt::format("{}: tensor '{}' is empty or has no address", m_routine, name));
        return TensorOperand{name, reinterpret_cast<void*>(static_cast<uintptr_t>(t.ptr)), t.count};
    }
    fail(Status::bad_bindings, fmt::format("{}: the task has no tensor '{}' ({} expected)", m_routine, name, dtype));
}

bool Operands::has_value(const std::string& name) const
{
    for (const auto& v : m_values)
        if (v.name == name)
            return true;
    return false;
}

const Operands::Value& Operands::value(const std::string& name) const
{
    for (const auto& v : m_values)
        if (v.name == name)
            return v;
    fail(Status::bad_bindings, fmt::format("{}: the task has no size or scalar '{}'", m_routine, name));
}

int64_t Operands::integer(const std::string& name) const { return value(name).int_value; }

double Operands::real(const std::string& name) const { return value(name).real_value; }

int Operands::positive_int(const std::string& name, int64_t value) const
{
    if (value <= 0 || value > INT_MAX)
        fail(Status::bad_bindings,
             fmt::format("{}: {} = {} is outside what the library takes (1 .. 2^31 - 1)", m_routine, name, value));
    return static_cast<int>(value);
}

DeviceBuffer::DeviceBuffer(size_t bytes) : m_bytes(bytes)
{
    KF_CUDART_CHECK(cudaMalloc(&m_ptr, bytes == 0 ? 1 : bytes));
}

DeviceBuffer::~DeviceBuffer()
{
    if (m_ptr)
        cudaFree(m_ptr);
}

namespace {

template <typename Fn>
Fn driver_entry(const char* symbol)
{
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    KF_CUDART_CHECK(cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !fn)
        fail(Status::library_error, fmt::format("the NVIDIA driver has no {}", symbol));
    return reinterpret_cast<Fn>(fn);
}

} // namespace

void* current_cuda_context()
{
    auto get_current = driver_entry<CUresult (*)(CUcontext*)>("cuCtxGetCurrent");
    CUcontext current = nullptr;
    if (get_current(&current) != CUDA_SUCCESS)
        return nullptr;
    return current;
}

void attach_to_primary_context()
{
    // The runtime adopts the context current on this thread (the worker's), or makes device 0's
    // primary context current when there is none.
    KF_CUDART_CHECK(cudaFree(nullptr));
    auto get_current = driver_entry<CUresult (*)(CUcontext*)>("cuCtxGetCurrent");
    auto get_device = driver_entry<CUresult (*)(CUdevice*)>("cuCtxGetDevice");
    auto retain = driver_entry<CUresult (*)(CUcontext*, CUdevice)>("cuDevicePrimaryCtxRetain");
    auto release = driver_entry<CUresult (*)(CUdevice)>("cuDevicePrimaryCtxRelease");
    CUcontext current = nullptr, primary = nullptr;
    CUdevice device = 0;
    if (get_current(&current) != CUDA_SUCCESS || !current || get_device(&device) != CUDA_SUCCESS)
        fail(Status::library_error, "the CUDA runtime initialised, yet no context is current on this thread");
    if (retain(&primary, device) != CUDA_SUCCESS)
        fail(Status::library_error, "cuDevicePrimaryCtxRetain failed for the current device");
    release(device);
    if (primary != current)
        fail(Status::library_error,
             "the current CUDA context is not the device's primary context: the CUDA runtime, cuBLAS and "
             "cuSPARSE would not share the caller's buffers and stream (make the primary context current)");
}

} // namespace kforge::vendor
