// How many runs `kforge suite run --per-gpu auto` (the default) keeps on one GPU at once.
//
// Why more than one: every run on a GPU searches at once (no search turns by default), and a search
// spends most of its time waiting for its model. With `parallel` calls in flight, a model latency L
// and G GPU-seconds of measuring per candidate, one searching run keeps its GPU busy a share
//
//     d = parallel * G / (L + G)
//
// of the time (each of its call slots thinks L, then its candidate is measured for G), so the GPU
// needs target / d searching runs to be busy `target` of the time. A run also spends time starting
// up (its processes, torch, torch.compile, baselines) before it searches, so by Little's law the
// runs on the GPU must be that many times (start-up + search) / search. Both numbers are measured
// by the suite's own runs (their archives: calls and their latency, candidates and the GPU time
// they took; and how long the runs that ended spent starting and searching); until the first
// candidates are measured, a prior stands in. The result is bounded by memory: each run holds a
// GPU worker's and, for a PyTorch program, a reference process's CUDA context plus the task's
// tensors on the GPU, and a reference process (torch imported) in host memory.
#pragma once

#include <cstdint>
#include <string>

namespace kforge {

// Most runs per GPU that auto picks, and the number before anything is measured.
inline constexpr int k_most_auto_runs_per_gpu = 16;
inline constexpr int k_prior_runs_per_gpu = 4;
// The busy share auto aims at while problems remain.
inline constexpr double k_target_busy = 0.9;

// What the suite's runs measured so far (summed over the runs of this process, ended and running).
struct SuiteDemand {
    bool models = false;         // some run asks a language model (its latency is not known before its first reply)
    int64_t model_calls = 0;     // language-model calls (the builtin proposer's are not)
    double model_latency_s = 0;  // their latency, summed
    int64_t candidates = 0;      // candidates measured on a GPU
    double gpu_busy_s = 0;       // the GPU time those took (measuring, lock waits excluded)
    int ended_runs = 0;          // runs that ended, with:
    double startup_s = 0;        //   their time from start until their search began, summed
    double search_s = 0;         //   their search time, summed
};

struct RunsPerGpu {
    int runs = k_prior_runs_per_gpu;
    std::string why; // "model 31.2 s/call, 1.4 GPU-s/candidate, 4 calls in flight: ..."
};

// Candidates measured before the estimate replaces the prior.
inline constexpr int64_t k_candidates_for_estimate = 4;

// The runs per GPU that keep it `k_target_busy` busy, from `demand` (see above), at least 1 and at
// most k_most_auto_runs_per_gpu; the prior while fewer than k_candidates_for_estimate candidates
// are measured, or while runs ask a model and none of its replies has come.
RunsPerGpu estimate_runs_per_gpu(const SuiteDemand& demand, int parallel);

// Device bytes one run takes on its GPU: its processes' CUDA contexts and the task's tensors at its
// largest shape (`task_bytes`), with the reference's copies of them for a PyTorch program.
uint64_t run_gpu_bytes(bool torch_program, uint64_t task_bytes);
// Host bytes one run takes: its controller, compile workers and GPU worker, and for a PyTorch
// program the reference process with torch imported.
uint64_t run_host_bytes(bool torch_program);

} // namespace kforge
