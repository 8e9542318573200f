// The runs per GPU of `suite run --per-gpu auto`; concurrency.hpp says why and how.
#include "suite/concurrency.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace kforge {
namespace {

constexpr uint64_t k_gib = uint64_t{1} << 30;

} // namespace

RunsPerGpu estimate_runs_per_gpu(const SuiteDemand& demand)
{
    RunsPerGpu out;
    if (demand.models && demand.model_calls == 0) {
        out.runs = k_prior_model_runs_per_gpu;
        out.why = fmt::format("{} before the model's first reply", out.runs);
        return out;
    }
    if (demand.candidates == 0 || demand.candidate_s <= 0) {
        out.runs = demand.models ? k_prior_model_runs_per_gpu : k_prior_runs_per_gpu;
        out.why = fmt::format("{} before the first candidates are measured", out.runs);
        return out;
    }
    out.measured = true;
    double own_time = std::max(1.0, demand.run_s - demand.waited_s);
    double one_run = std::min(1.0, (demand.candidate_s + demand.other_s) / own_time);
    double wanted = std::ceil(k_offered_load / one_run - 1e-9);
    out.runs = static_cast<int>(std::clamp(wanted, 1.0, static_cast<double>(k_most_auto_runs_per_gpu)));
    std::string model =
        demand.model_calls > 0
            ? fmt::format("model {:.1f} s/call, ", demand.model_latency_s / static_cast<double>(demand.model_calls))
            : std::string(demand.models ? "" : "no model, ");
    out.why = fmt::format("a run keeps the GPU busy {:.1f}% of its time ({}{:.2f} GPU-s/candidate, {:.0f} GPU-s of "
                          "set-up and baselines over {:.0f} run-seconds): {:.1f} runs offer it {:.1f} times what it serves",
                          100 * one_run, model, demand.candidate_s / static_cast<double>(demand.candidates),
                          demand.other_s, own_time, k_offered_load / one_run, k_offered_load);
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
