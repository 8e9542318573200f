// How many runs `kforge suite run --per-gpu auto` (the default) keeps on one GPU at once.
//
// Why more than one: every run on a GPU searches at once (no search turns by default), and a search
// spends most of its time waiting for its model: with `parallel` calls in flight, a latency L and
// g GPU-seconds of measuring per candidate, each call slot thinks for L and then has its candidate
// measured for g. A run also spends time starting up (its processes, torch, torch.compile, its
// baselines), mostly off the GPU. So one run keeps its GPU busy only a share d of its life, and by
// Little's law the GPU would be busy S * d of the time with S runs on it. That is a bound: the runs
// form a closed system (a run waiting for the GPU does not start its next call meanwhile), and their
// GPU work comes in bursts (a round of replies arrives at once), so at an offered load S * d of 1 the
// GPU is measured well short of busy (on one H200, 30 s replies: ten runs at d = 9% kept it 77% busy
// after the start). auto offers k_offered_load, past what the GPU can serve, so that a queue
// usually waits for it; the waits cost a run none of its --time.
//
// d is measured, not guessed: the GPU's measuring log holds every second a run measured (its set-up
// and baselines, and each candidate's g), and the suite knows each run's time on the GPU, so
//
//     d = seconds measured / (run-seconds on the GPU - seconds waited for the measuring lock)
//
// (waiting for the lock is time a run would not have spent alone). The model's latency and the GPU
// time per candidate enter through it, and are reported beside it. Until the first candidates are
// measured and, when runs ask a model, its first reply has come, a prior stands in. The result is
// bounded by memory: each run holds a GPU worker's and, for a PyTorch program, a reference
// process's CUDA context plus the task's tensors on the GPU, and a reference process (torch
// imported) in host memory (runner_lanes.cpp checks both before starting a run).
#pragma once

#include <cstdint>
#include <string>

namespace kforge {

// Most runs per GPU that auto picks, and the numbers before anything is measured: a run whose
// model answers at once (the builtin proposer, replies replayed without a latency) keeps a GPU busy
// much of its search; one whose model thinks for 20-120 s a call, a few percent.
inline constexpr int k_most_auto_runs_per_gpu = 16;
inline constexpr int k_prior_runs_per_gpu = 4;
// A model's first reply takes a minute or more to come (a run's start-up, then its latency), and
// a run that asks a model thinking 20-120 s a call keeps a GPU a few percent busy (measured on one
// H200: 8.6% at 30 s, 1.1 GPU-s a candidate), so until the first reply the runs fill the GPU as
// memory allows; those above the estimate finish, and no more start until there is room.
inline constexpr int k_prior_model_runs_per_gpu = k_most_auto_runs_per_gpu;
// The load auto offers a GPU: S = ceil(k_offered_load / d).
inline constexpr double k_offered_load = 1.4;

// What the suite's runs did on its GPUs so far (summed over the GPUs of this process).
struct SuiteDemand {
    bool models = false;         // some run asks a language model (its latency is unknown before its first reply)
    int64_t model_calls = 0;     // language-model calls (the builtin proposer's are not)
    double model_latency_s = 0;  // their latency, summed
    int64_t candidates = 0;      // candidates measured
    double candidate_s = 0;      // seconds measured for candidates (the measuring log's "variant" holds)
    double other_s = 0;          // seconds measured for set-ups, baselines and program checks
    double waited_s = 0;         // seconds waited for the measuring lock
    double run_s = 0;            // run-seconds on the GPUs (the sum of the runs' times there)
};

struct RunsPerGpu {
    int runs = k_prior_runs_per_gpu;
    bool measured = false; // from what the runs measured (false: a prior)
    std::string why; // "a run kept the GPU busy 6% of its time (model 30.0 s/call, 1.10 GPU-s/candidate, ...)"
};

// The runs per GPU that offer it k_offered_load, from `demand` (see above), at least 1 and at
// most k_most_auto_runs_per_gpu; the prior before any candidate is measured, or while runs ask a
// model and none of its replies has come.
RunsPerGpu estimate_runs_per_gpu(const SuiteDemand& demand);

// Device bytes one run takes on its GPU: its processes' CUDA contexts and the task's tensors at its
// largest shape (`task_bytes`), with the reference's copies of them for a PyTorch program.
uint64_t run_gpu_bytes(bool torch_program, uint64_t task_bytes);
// Host bytes one run takes: its controller, compile workers and GPU worker, and for a PyTorch
// program the reference process with torch imported.
uint64_t run_host_bytes(bool torch_program);

} // namespace kforge
