// The evaluator as the search and the CLI see it: submit candidates, collect evaluations.
//
// Behind this interface the real evaluator runs a pipeline: screening and plan validation in the
// controller, NVRTC compiles in a CompilePool (one per param point, in parallel), and a GPU worker
// process that loads, verifies, times, profiles and describes. Jobs overlap: while the GPU worker
// times one candidate, others compile. A candidate that faults, hangs or crashes its worker costs a
// worker respawn and yields a verdict; it never throws out of collect().
//
// Two implementations exist: the GPU evaluator (make_gpu_evaluator) and, in tests, a fake with a
// known fitness landscape that lets the search be tested without a GPU.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/candidate.hpp"
#include "core/records.hpp"
#include "core/task.hpp"
#include "evaluator/gpu_selection.hpp"
#include "evaluator/worker/vendor_status.hpp"
#include "util/json_reader.hpp"

namespace kforge {

class MpiWorld;

struct EvalOptions {
    // Timing standard: quick screen (a few dozen samples, ~0.1 s per shape at most) or confirmation
    // (nvbench-like stopping on relative spread; for elites and bests).
    bool confirm = false;
    bool held_out = false;          // also verify on the task's held-out shapes
    bool profile = false;           // CUPTI range-profiler metrics (new elites and bests)
    std::optional<ParamPoint> only_params; // evaluate one param point instead of the sweep
    // The source is built from the task's own reference (self-tests): the task's forbidden
    // patterns bind candidates, not the task's code.
    bool task_code = false;
    // The GPU this job prefers (a confirmation prefers the one its screen ran on): it takes the job
    // when idle; while it is busy, any idle GPU of the same model does (GPUs of one model stand in
    // for each other, and the job is measured whole where it runs); a GPU of another model only when
    // none of this model serves. Any GPU when unset.
    std::optional<GpuIdentity> gpu;
};

struct EvalJob {
    uint64_t ticket = 0;            // the caller's id, echoed in the result
    // The caller's name for the source (the search passes its archive hash); results reused from
    // this job's measurements cite it, with the ticket (metrics "runs", measurement_memo.hpp).
    std::string label;
    std::string source;
    EvalOptions options;
};

struct EvalResult {
    uint64_t ticket = 0;
    Evaluation evaluation;
};

class CandidateEvaluator
{
public:
    virtual ~CandidateEvaluator() = default;
    // Queues a job and returns at once. Waiting jobs are taken lowest ticket first (and the GPU
    // evaluator runs a lower-ticket job between the variants of a sweep), so a caller that needs
    // results in order numbers its jobs in that order.
    virtual void submit(EvalJob job) = 0;
    // Returns the jobs finished so far, waiting up to `wait` for at least one when none is ready.
    virtual std::vector<EvalResult> collect(std::chrono::milliseconds wait) = 0;
    // The caller no longer needs job `ticket`: it is dropped if no GPU has taken it yet (it then
    // never comes back); one already running still finishes and is returned. A ticket unknown or
    // already collected is ignored.
    virtual void withdraw(uint64_t ticket) { (void)ticket; }
    // Jobs submitted and not yet collected.
    virtual size_t pending() const = 0;
    // Share of the GPUs' wall time (since each started) during which their workers were evaluating.
    virtual double gpu_busy_fraction() const = 0;
    // Per GPU of this session: busy and wall time, evaluations, restarts, whether it was lost.
    // Empty for an evaluator without GPUs (the tests' fake).
    virtual std::vector<GpuUsage> gpu_usage() const { return {}; }
    // Device, driver, toolkit and settings, for the archive's run record.
    virtual Json environment() const = 0;
    // Baseline timings (reference, vendor libraries) per bench shape, measured in this session.
    virtual std::vector<Measurement> baselines() const = 0;
    // The task's vendor baselines and whether each was timed (empty when the task names none).
    virtual std::vector<VendorBaselineStatus> vendor_baselines() const { return {}; }
    // What it is busy with, for progress lines ("compiling 12 variants, 3 jobs waiting for the
    // GPU"); "" when idle or unknown.
    virtual std::string activity() const { return ""; }
    // Tasks whose reference is a PyTorch program: the program's own outputs (in its dtypes)
    // against the expected ones under the task's check, on the shape sets named ("tests", "bench",
    // "held_out"), on one GPU: "" when it passes everywhere, else the first failure. Call it while
    // no job is pending. Throws Error(runtime) when the check cannot run.
    virtual std::string check_program(const std::vector<std::string>& sets) = 0;
};

struct EvaluatorConfig {
    std::string arch;               // empty: the device's (sm_90a on Hopper)
    size_t compile_workers = 0;     // 0: from the core count
    std::filesystem::path cache_dir; // CUBIN cache; empty: none
    uint64_t run_secret = 0;        // mixed into every input seed; never shown to a model
    std::chrono::milliseconds compile_deadline{60000};
    std::chrono::milliseconds launch_deadline{10000}; // one plan run on one shape
    bool time_vendor_baselines = true; // false: every vendor baseline is reported as switched off
    std::string worker_executable;  // the kforge binary for workers; empty: this very binary
    GpuSelection gpus;              // --gpus: which of each host's GPUs (gpu_selection.hpp)
    // Under MPI, rank 0's world: this host's share of GPUs plus those the other ranks' evaluation
    // services offer (gpu/remote.hpp). Null on one host.
    MpiWorld* mpi = nullptr;
    // Reuse what earlier runs of the same (binary, plan, params) point established instead of
    // running it on the GPU again (measurement_memo.hpp); false re-measures every run.
    bool reuse_measurements = true;
    // Compile the task's reference and seeds while the GPUs start (a search's first jobs: its
    // records wait for them); off for commands that evaluate other kernels, which would only pay.
    bool prefetch_task_kernels = false;
    // A GPU shared with other runs (`kforge suite run --per-gpu N`, evaluator/worker/share.hpp):
    // the folder of its locks. Workers then measure holding the GPU's measuring lock. Only with one
    // GPU (two sessions holding each other's search turns would wait for ever): more is
    // Error(usage). Empty: the GPUs are this session's alone.
    std::filesystem::path gpu_share_dir;
    // On a shared GPU: at most this many runs search on it at once; the slot waits after its
    // baselines for one of the GPU's `gpu_searches` search turns and holds it until the session
    // ends. 0: no turns, every run sharing the GPU searches (the default).
    int gpu_searches = 0;
};

// Starts the compile pool and one GPU worker per selected GPU (each times its own baselines).
// Throws Error(runtime) with "no NVIDIA driver/GPU found ..." when there is no usable device, and
// Error(usage) when --gpus names devices the host lacks or mixes GPU models.
std::unique_ptr<CandidateEvaluator> make_gpu_evaluator(const Task& task, const EvaluatorConfig& config);

} // namespace kforge
