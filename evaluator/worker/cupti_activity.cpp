// CUPTI activity buffers: 8-byte aligned 8 MiB buffers handed to CUPTI, parsed when returned.
#include "evaluator/worker/cupti_activity.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include <cupti.h>
#include <fmt/format.h>

namespace kforge {
namespace {

constexpr size_t k_buffer_bytes = 8 * 1024 * 1024;

std::mutex g_mutex;
std::vector<KernelRecord> g_records;
uint64_t g_dropped = 0;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records)
{
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, k_buffer_bytes));
    *size = *buffer ? k_buffer_bytes : 0;
    *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_size)
{
    std::vector<KernelRecord> parsed;
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
        if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
            continue;
        auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        KernelRecord out;
        out.name = kernel->name ? kernel->name : "";
        out.start_ns = kernel->start;
        out.end_ns = kernel->end;
        out.stream_id = kernel->streamId;
        out.correlation_id = kernel->correlationId;
        out.registers = kernel->registersPerThread;
        out.local_bytes_per_thread = kernel->localMemoryPerThread;
        out.static_smem = kernel->staticSharedMemory;
        out.dynamic_smem = kernel->dynamicSharedMemory;
        out.device_launched = kernel->isDeviceLaunched != 0;
        parsed.push_back(std::move(out));
    }
    std::free(buffer);
    std::lock_guard lock(g_mutex);
    g_records.insert(g_records.end(), parsed.begin(), parsed.end());
}

std::string cupti_error(CUptiResult result)
{
    const char* text = nullptr;
    cuptiGetResultString(result, &text);
    return text ? text : fmt::format("CUPTI error {}", static_cast<int>(result));
}

} // namespace

std::string ActivityTracer::start()
{
    if (CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS)
        return "cuptiActivityRegisterCallbacks: " + cupti_error(r);
    // CONCURRENT_KERNEL keeps kernels concurrent; the plain KERNEL kind would serialise them.
    if (CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); r != CUPTI_SUCCESS)
        return "cuptiActivityEnable(CONCURRENT_KERNEL): " + cupti_error(r);
    return "";
}

std::vector<KernelRecord> ActivityTracer::drain()
{
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::vector<KernelRecord> out;
    {
        std::lock_guard lock(g_mutex);
        out.swap(g_records);
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped > 0) {
        std::lock_guard lock(g_mutex);
        g_dropped += dropped;
    }
    std::sort(out.begin(), out.end(), [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
    return out;
}

uint64_t ActivityTracer::dropped()
{
    std::lock_guard lock(g_mutex);
    return g_dropped;
}

} // namespace kforge
