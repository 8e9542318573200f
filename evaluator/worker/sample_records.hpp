// Which kernel records belong to which timed sample.
//
// Each timed sample is launched on one stream as: kforge_flush_read, kforge_clock_probe, the
// subject's kernels, kforge_clock_probe (the output reset before it may add internal kernels).
// CUPTI hands records over asynchronously, so a drain can miss records of kernels that already
// finished and the next drain then returns them. Attributing records by count would then shift
// every record by one (a correct kernel reported as launching someone else's kernel). Instead the
// records are matched against that launch pattern from the newest backwards: records older than
// the batch's first flush are late arrivals from an earlier drain and are ignored, and a pattern
// whose end has not arrived yet is "incomplete", so the caller drains again.
#pragma once

#include <cstddef>
#include <vector>

#include "evaluator/worker/cupti_activity.hpp"

namespace kforge {

inline constexpr const char* k_probe_kernel = "kforge_clock_probe";
inline constexpr const char* k_flush_kernel = "kforge_flush_read";

struct SampleSplit {
    bool complete = false;                          // the whole pattern of `samples` runs is present
    std::vector<std::vector<KernelRecord>> samples; // per sample, its kernels between the probes
    size_t outside = 0;                             // non-kforge kernels in the batch outside any bracket
    size_t stale = 0;                               // records older than the batch (ignored)
};

// `records` sorted by start time. Splits the newest `samples` sample patterns out of them.
SampleSplit split_samples(const std::vector<KernelRecord>& records, int samples);

} // namespace kforge
