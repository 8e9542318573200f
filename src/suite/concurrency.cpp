// The runs per GPU of `suite run --per-gpu auto`; concurrency.hpp says why and how.
#include "suite/concurrency.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace kforge {
namespace {

constexpr uint64_t k_gib = uint64_t{1} << 30;

} // namespace

RunsPerGpu estimate_runs_per_gpu(const SuiteDemand& demand, int parallel)
{
    RunsPerGpu out;
    if (demand.candidates < k_candidates_for_estimate || demand.gpu_busy_s <= 0) {
        out.why = fmt::format("{} before {} candidates are measured", k_prior_runs_per_gpu, k_candidates_for_estimate);
        return out;
    }
    if (demand.models && demand.model_calls == 0) {
        out.why = fmt::format("{} before the model's first reply", k_prior_runs_per_gpu);
        return out;
    }
    double latency = demand.model_calls > 0 ? demand.model_latency_s / static_cast<double>(demand.model_calls) : 0.0;
    double gpu = demand.gpu_busy_s / static_cast<double>(demand.candidates);
    double one_run = std::min(1.0, std::max(1, parallel) * gpu / (latency + gpu)); // its GPU's busy share
    double searching = k_target_busy / one_run;
    // Each run searches only part of its life; without a run that ended, one more place lets the
    // next run start up while the others search.
    double life = 1.0;
    double extra = 1.0;
    if (demand.ended_runs > 0 && demand.search_s > 0) {
        life = (demand.startup_s + demand.search_s) / demand.search_s;
        extra = 0.0;
    }
    double wanted = std::ceil(searching * life - 1e-9) + extra;
    out.runs = static_cast<int>(std::clamp(wanted, 1.0, static_cast<double>(k_most_auto_runs_per_gpu)));
    out.why = fmt::format("model {:.1f} s/call, {:.2f} GPU-s/candidate, {} call{} in flight: one search keeps the GPU "
                          "{:.0f}% busy, so {:.1f} searching{}",
                          latency, gpu, parallel, parallel == 1 ? "" : "s", 100 * one_run, searching,
                          extra > 0 ? ", and one starting up"
                                    : fmt::format(", searching {:.0f}% of a run's life", 100 / life));
    return out;
}

uint64_t run_gpu_bytes(bool torch_program, uint64_t task_bytes)
{
    // A CUDA context takes about half a GiB on Hopper; torch's adds its caching allocator's pools.
    return torch_program ? 3 * k_gib / 2 + 3 * task_bytes : k_gib / 2 + 2 * task_bytes;
}

uint64_t run_host_bytes(bool torch_program)
{
    return torch_program ? 5 * k_gib / 2 : k_gib / 2;
}

} // namespace kforge
