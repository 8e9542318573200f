// kforge's own device kernels (kernels/*.cuh, kernels/internal.cu), compiled with NVRTC when the GPU
// worker starts: input generation, byte patterns, checksums, output comparison, clock probes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "evaluator/worker/context.hpp"
#include "evaluator/worker/kernels/compare.cuh"
#include "evaluator/worker/kernels/generate.cuh"

namespace kforge {

// The embedded source (generated at build time from kernels/).
extern const char* const k_internal_kernels_source;

struct CompareOutcome {
    uint64_t mismatches = 0;
    uint64_t first_index = 0;     // valid when mismatches > 0
    uint64_t not_finite = 0;
    double max_abs_error = 0;
};

class InternalKernels
{
public:
    // Compiles (or loads from `cache_dir`) the internal kernels for `facts.arch()`.
    InternalKernels(const GpuContext& context, const std::filesystem::path& cache_dir);

    void generate(CUdeviceptr out, uint64_t count, const KfGenParams& params) const;
    void fill_pattern(CUdeviceptr data, uint64_t bytes, uint64_t seed) const;
    // Synchronous: waits for the stream.
    uint64_t checksum(CUdeviceptr data, uint64_t bytes) const;
    CompareOutcome compare(CUdeviceptr got, CUdeviceptr expected, uint64_t count, int dtype, bool exact,
                           double atol, double rtol) const;
    // Sum and maximum of |x| over finite elements.
    std::pair<double, double> abs_stats(CUdeviceptr data, uint64_t count, int dtype) const;
    // Asynchronous: reads `bytes` of `data` so L2 holds only clean lines of it (an L2 flush).
    void flush_read(CUdeviceptr data, uint64_t bytes) const;
    // Asynchronous: writes (clock64, globaltimer) of SM 0 into two u64 at `slot`.
    void clock_probe(CUdeviceptr slot) const;

    double compile_seconds() const { return m_compile_seconds; }

private:
    void launch_grid_stride(CUfunction f, uint64_t count, void** args) const;

    const GpuContext& m_context;
    Module m_module;
    CUfunction m_generate, m_fill, m_checksum, m_compare, m_abs_stats, m_clock, m_flush_read;
    DeviceMemory m_result;        // scratch for reductions
    double m_compile_seconds = 0;
};

} // namespace kforge
