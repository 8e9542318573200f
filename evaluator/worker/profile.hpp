// Hardware metrics of one plan run with the CUPTI range profiler (CUDA 13: Profiler Host API +
// Range Profiler), for new elites and bests (DESIGN.md §6.4).
//
// One user range spans the whole plan (all its launches), replayed by kforge itself (user replay):
// before every pass the outputs are reset and L2 is flushed, so each pass sees the same cold start
// as a timing sample. Activity tracing is paused meanwhile, because profiling perturbs timing and the
// two should never overlap. Without counter permission (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) the
// profiler reports why and the evaluation carries on without metrics.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "evaluator/worker/context.hpp"

namespace kforge {

// The metrics kforge collects, with the short names used in prompts and reports.
const std::vector<std::pair<std::string, std::string>>& profiled_metrics();

class RangeProfiler
{
public:
    explicit RangeProfiler(const GpuContext& context);
    ~RangeProfiler();
    RangeProfiler(const RangeProfiler&) = delete;
    RangeProfiler& operator=(const RangeProfiler&) = delete;

    // "" when counters can be read; otherwise why not (set up once, at construction).
    const std::string& problem() const { return m_problem; }

    // Profiles the work enqueued by `launch`, calling `prepare` (reset outputs, flush L2; enqueued
    // outside the range) before every pass. Returns short metric name -> value; empty with `problem`
    // set when profiling failed.
    std::map<std::string, double> profile(const std::function<void()>& prepare, const std::function<void()>& launch,
                                          std::string& problem);

private:
    const GpuContext& m_context;
    std::string m_problem;
    std::string m_chip;
    std::vector<uint8_t> m_availability;
    std::vector<uint8_t> m_config;
    void* m_host = nullptr; // CUpti_Profiler_Host_Object*
    size_t m_passes = 0;
};

} // namespace kforge
