// Timing a plan on the GPU (DESIGN.md §6.3): the method every reported number comes from.
//
// One sample = flush L2 (a memset of a buffer several times the L2 size), reset the outputs (poison
// or restore), an SM-clock probe, the plan's launches, a second probe. The sample's time is the
// span of the plan's kernels from the CUPTI activity records: first start to last end, so launch
// gaps inside a multi-kernel plan count, host overheads do not. Records are matched to samples by
// order (the worker is the only launcher, on one stream) and their count is checked against the plan:
// an extra or missing kernel invalidates the measurement. Samples whose SM clock fell below 75% of
// nominal are dropped (nvbench's rule). Sampling stops by the settings' rule: a sample count and
// time budget for the quick screen; for confirmation, a relative spread under 0.5% over at least
// 0.5 s of kernel time, or a cap. Several subjects (candidate, reference) are interleaved sample by
// sample so that clock and thermal drift affect them alike.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "evaluator/worker/context.hpp"
#include "evaluator/worker/internal.hpp"

namespace kforge {

struct TimingSettings {
    int warmup_runs = 3;
    double warmup_seconds = 0.01;     // at least this much wall time of warm-up
    int min_samples = 10;
    int max_samples = 40;
    double target_kernel_seconds = 0.05; // stop once this much kernel time is measured (and min met)
    double max_rel_stdev = 0;         // > 0: also require the relative stdev below this
    double wall_cap_seconds = 1.0;
    double throttle_fraction = 0.75;
};

// The three standards: per param point in a sweep, the quick screen of a candidate, confirmation.
TimingSettings sweep_timing();
TimingSettings quick_timing();
TimingSettings confirm_timing();

// One thing to time: how to enqueue one run and which kernels that run launches, in order.
struct TimingSubject {
    std::string label;
    std::function<void()> reset;            // enqueue output reset (poison/restore), outside the timed span
    std::function<void()> launch;           // enqueue the plan's launches
    // Expected CUPTI records per run, in order. Empty for a library call (a vendor baseline): then
    // whatever kernels it launches between the sample's probes count.
    std::vector<std::string> kernel_names;
    // Library steps among the plan's launches (docs/library-steps.md): each launches kernels of the
    // library's choosing, at least one. The first sample fixes how many the run launches, and every
    // later sample must launch exactly as many.
    int library_steps = 0;
};

struct SampleStats {
    std::vector<double> kept_ns;
    int discarded = 0;       // throttled samples
    double median_ns = 0, q1_ns = 0, q3_ns = 0, min_ns = 0, mean_ns = 0, rel_stdev = 0;
    double mean_clock_mhz = 0;
    std::string problem;     // non-empty: the measurement is invalid (hidden kernels, dropped records)
};

class Timer
{
public:
    // `flush_bytes` of device memory is allocated once for L2 flushes.
    Timer(const GpuContext& context, const InternalKernels& kernels, size_t flush_bytes);

    // Times every subject, interleaved. Throws CudaError on a fault; returns a problem string in the
    // stats when the run timed out (then `timed_out` is set) or records do not match.
    // Enqueues one L2 flush (the same one every timing sample starts with).
    void enqueue_flush() const;
    size_t flush_bytes() const { return m_flush.bytes(); }

    std::vector<SampleStats> measure(const std::vector<TimingSubject>& subjects, const TimingSettings& settings,
                                     std::chrono::milliseconds run_deadline, bool& timed_out);

private:
    const GpuContext& m_context;
    const InternalKernels& m_kernels;
    DeviceMemory m_flush;
    DeviceMemory m_probe_slots;
};

// Median, quartiles and spread of a sample set (sorted copy).
SampleStats summarize_samples(std::vector<double> samples);

} // namespace kforge
