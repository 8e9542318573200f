// The GPU worker's hold on its device: the primary context, one stream, device facts, and RAII
// owners for device memory and modules. Only the GPU worker process includes this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "evaluator/worker/cuda_driver.hpp"
#include "evaluator/worker/device_facts.hpp"
#include "util/json_reader.hpp"

namespace kforge {

// Owns device memory from cuMemAlloc.
class DeviceMemory
{
public:
    DeviceMemory() = default;
    explicit DeviceMemory(size_t bytes);
    ~DeviceMemory();
    DeviceMemory(DeviceMemory&& other) noexcept;
    DeviceMemory& operator=(DeviceMemory&& other) noexcept;
    DeviceMemory(const DeviceMemory&) = delete;
    DeviceMemory& operator=(const DeviceMemory&) = delete;

    CUdeviceptr get() const { return m_ptr; }
    size_t bytes() const { return m_bytes; }

private:
    CUdeviceptr m_ptr = 0;
    size_t m_bytes = 0;
};

// Owns a loaded module.
class Module
{
public:
    Module() = default;
    explicit Module(const std::string& cubin);
    ~Module();
    Module(Module&& other) noexcept;
    Module& operator=(Module&& other) noexcept;
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

    // Throws CudaError when the function is missing.
    CUfunction function(const std::string& name) const;
    bool loaded() const { return m_module != nullptr; }

private:
    CUmodule m_module = nullptr;
};

// The primary context of device 0 (CUDA_VISIBLE_DEVICES picks which physical GPU that is) and the
// worker's one stream.
class GpuContext
{
public:
    GpuContext();   // cuInit, retain the primary context, create the stream; throws CudaError
    ~GpuContext();
    GpuContext(const GpuContext&) = delete;
    GpuContext& operator=(const GpuContext&) = delete;

    const DeviceFacts& facts() const { return m_facts; }
    CUstream stream() const { return m_stream; }
    CUcontext context() const { return m_context; }

private:
    CUdevice m_device = 0;
    CUcontext m_context = nullptr;
    CUstream m_stream = nullptr;
    DeviceFacts m_facts;
};

// Reads the facts of the current context's device.
DeviceFacts read_device_facts(CUdevice device);

} // namespace kforge
