// Kernel durations from CUPTI activity records (DESIGN.md §6.3).
//
// Every kernel the worker launches produces a CONCURRENT_KERNEL record carrying the GPU's own start
// and end timestamps: the kernel's runtime, without launch gaps or event resolution. The records also
// show how many kernels really ran, which exposes hidden work. CUPTI's callbacks are process-wide,
// so there is one tracer per process; the GPU worker is single-threaded and the only launcher.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kforge {

struct KernelRecord {
    std::string name;
    uint64_t start_ns = 0;
    uint64_t end_ns = 0;
    uint32_t stream_id = 0;
    uint32_t correlation_id = 0;
    uint32_t registers = 0;
    uint32_t local_bytes_per_thread = 0;
    int32_t static_smem = 0;
    int32_t dynamic_smem = 0;
    bool device_launched = false;
};

class ActivityTracer
{
public:
    // Registers the buffer callbacks and enables CONCURRENT_KERNEL records. Returns "" or why CUPTI
    // could not be set up.
    static std::string start();
    // Flushes CUPTI and returns the kernel records completed since the last drain, ordered by start
    // time. The caller must have synchronized the stream first (flushing does not synchronize).
    static std::vector<KernelRecord> drain();
    // Records CUPTI reported as dropped since start (buffers full); a nonzero count invalidates a
    // measurement.
    static uint64_t dropped();
};

} // namespace kforge
