// Device facts and the RAII owners of the GPU worker.
#include "evaluator/worker/context.hpp"

#include <utility>

#include <fmt/format.h>

namespace kforge {

DeviceFacts read_device_facts(CUdevice device)
{
    const auto& cu = driver();
    DeviceFacts facts;
    char name[256] = {};
    KF_CU_CHECK(cu.cuDeviceGetName(name, sizeof name - 1, device));
    facts.name = name;
    CUuuid uuid;
    KF_CU_CHECK(cu.cuDeviceGetUuid(&uuid, device));
    std::string hex;
    for (int i = 0; i < 16; ++i) {
        hex += fmt::format("{:02x}", static_cast<unsigned char>(uuid.bytes[i]));
        if (i == 3 || i == 5 || i == 7 || i == 9)
            hex += '-';
    }
    facts.uuid = "GPU-" + hex;
    auto attribute = [&](CUdevice_attribute a) {
        int value = 0;
        KF_CU_CHECK(cu.cuDeviceGetAttribute(&value, a, device));
        return value;
    };
    facts.cc_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    facts.cc_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    facts.sm_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    facts.max_threads_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    facts.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    facts.max_smem_per_block_optin = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    facts.smem_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    facts.regs_per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    facts.warp_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    facts.l2_bytes = attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    facts.clock_khz = attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    facts.memory_clock_khz = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    facts.memory_bus_bits = attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    size_t total = 0;
    KF_CU_CHECK(cu.cuDeviceTotalMem(&total, device));
    facts.total_memory = static_cast<int64_t>(total);
    KF_CU_CHECK(cu.cuDriverGetVersion(&facts.driver_version));
    return facts;
}

DeviceMemory::DeviceMemory(size_t bytes) : m_bytes(bytes)
{
    KF_CU_CHECK(driver().cuMemAlloc(&m_ptr, bytes == 0 ? 1 : bytes));
}

DeviceMemory::~DeviceMemory()
{
    // Freeing after a sticky error fails too; the process is about to be replaced, so ignore it.
    if (m_ptr && !context_lost())
        driver().cuMemFree(m_ptr);
}

DeviceMemory::DeviceMemory(DeviceMemory&& other) noexcept
    : m_ptr(std::exchange(other.m_ptr, 0)), m_bytes(std::exchange(other.m_bytes, 0))
{
}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& other) noexcept
{
    if (this != &other) {
        if (m_ptr && !context_lost())
            driver().cuMemFree(m_ptr);
        m_ptr = std::exchange(other.m_ptr, 0);
        m_bytes = std::exchange(other.m_bytes, 0);
    }
    return *this;
}

Module::Module(const std::string& cubin) { KF_CU_CHECK(driver().cuModuleLoadData(&m_module, cubin.data())); }

Module::~Module()
{
    if (m_module && !context_lost())
        driver().cuModuleUnload(m_module);
}

Module::Module(Module&& other) noexcept : m_module(std::exchange(other.m_module, nullptr)) {}

Module& Module::operator=(Module&& other) noexcept
{
    if (this != &other) {
        if (m_module && !context_lost())
            driver().cuModuleUnload(m_module);
        m_module = std::exchange(other.m_module, nullptr);
    }
    return *this;
}

CUfunction Module::function(const std::string& name) const
{
    CUfunction f = nullptr;
    KF_CU_CHECK(driver().cuModuleGetFunction(&f, m_module, name.c_str()));
    return f;
}

GpuContext::GpuContext()
{
    const auto& cu = driver();
    KF_CU_CHECK(cu.cuInit(0));
    KF_CU_CHECK(cu.cuDeviceGet(&m_device, 0));
    KF_CU_CHECK(cu.cuDevicePrimaryCtxRetain(&m_context, m_device));
    KF_CU_CHECK(cu.cuCtxSetCurrent(m_context));
    KF_CU_CHECK(cu.cuStreamCreate(&m_stream, CU_STREAM_NON_BLOCKING));
    // Device-side printf from a candidate must not flood anything: keep its buffer small.
    cu.cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 64 * 1024);
    // A persisting-L2 carve-out would let data survive the flush between timing samples.
    cu.cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0);
    cu.cuCtxResetPersistingL2Cache();
    m_facts = read_device_facts(m_device);
}

GpuContext::~GpuContext()
{
    if (context_lost())
        return;
    const auto& cu = driver();
    if (m_stream)
        cu.cuStreamDestroy(m_stream);
    if (m_context)
        cu.cuDevicePrimaryCtxRelease(m_device);
}

} // namespace kforge
