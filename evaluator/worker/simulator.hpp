// A stand-in GPU for machines without one (CI, tests, trying the multi-GPU and MPI machinery).
//
// With KFORGE_SIMULATE_GPUS set, `kforge __worker gpu` serves the worker protocol
// (worker_protocol.hpp) without touching CUDA: "devices" lists the simulated GPUs that
// CUDA_VISIBLE_DEVICES leaves visible, read as the CUDA driver reads it (indices, as SLURM sets
// them for `--gres=gpu:N`, or UUIDs, as the GPU evaluator pins each worker), "device" describes the
// first of them, and the rest answers with verdicts and times derived from the CUBIN and the param
// point alone, so the same candidate gets the same verdict and the same times on every simulated
// GPU, in every process and every run. Everything above the worker is the real thing: the GPU
// evaluator, its scheduler, the pipes, the MPI service, worker respawns.
//
//   KFORGE_SIMULATE_GPUS=3                three identical GPUs
//   KFORGE_SIMULATE_GPUS=sim-a,sim-a,sim-b  three GPUs named so (two models: --gpus must choose)
//   KFORGE_SIMULATE_GPU_MS=20             milliseconds a screened variant takes (default 20)
//   KFORGE_SIMULATE_GPU_SETUP_MS=0        milliseconds a worker's setup spends off the GPU first (a
//                                         real one's context, compiles, PyTorch reference process)
//
// Time is spent in proportion to what a request asks, as on a real GPU: verifying the test shapes
// and a quick or sweep timing take half the unit each (a screened variant: one unit); a
// confirmation timing, which interleaves the reference, one and a half; a profile one; the
// held-out shapes half. So a confirmation with its profile costs 2.5 screened variants, and the
// scheduling of confirmations and held-out checks shows in a simulated run as it would on GPUs.
// Those are the default costs; on a real GPU a confirmation is far dearer than a screened variant
// (an H200 spends ~0.17 s screening a softmax variant and ~4 s confirming one, 0.5 s of kernel time
// per shape for the candidate and the reference each), so KFORGE_SIMULATE_GPU_COSTS replaces any of
// them, in units:
//
//   KFORGE_SIMULATE_GPU_COSTS=verify=0.5,screen=0.5,confirm=24,profile=4,held_out=1,baselines=12
//
// (verify: the test shapes; screen: a sweep or quick timing; confirm: a confirmation timing;
// profile; held_out; baselines: timing the reference when a GPU starts). confirm_spread (default 0)
// makes a confirmation's length a property of the kernel, as on a GPU, where it runs until the
// spread is small: its units are confirm x (1 + confirm_spread x f), f in [0, 1) from the variant's
// hash (on an H200 the softmax seeds' confirmations took 5.0 s and 8.1 s, the same in every run).
//
// Real timings are noisy, and a search whose candidates tie (the fixed work of `kforge_bench scale`:
// copies of four kernels) decides by noise which ones to confirm. Two more variables bring that in:
//
//   KFORGE_SIMULATE_GPU_NOISE=0.01        each reported time off by up to 1% (a confirmation-level
//                                          timing, the GPU's baselines included, by a quarter of it);
//                                          drawn afresh in every worker, so runs differ as on GPUs
//   KFORGE_SIMULATE_GPU_LANDSCAPE=plan    verdicts and speeds from the plan and params alone, not
//                                          the CUBIN: candidates that differ only in their code tie
//
// The landscape: per variant h = hash(CUBIN, params); h % 100 < 5 is incorrect, 5 and 6 fault
// with a sticky error (the worker asks to be replaced, as after a real illegal address), the rest
// is correct with a speedup between 0.5x and 1.5x over a reference timed at 1.6x the roofline
// floor. A simulated GPU has no vendor libraries and no hardware counters.
//
// A simulated GPU is shared like a real one (worker/share.hpp): with a "gpu_share_dir" in the setup,
// the time it spends "on the GPU" (the setup's probe, baselines, variants) is spent holding the
// measuring lock and is logged, so the sharing of a suite's runs is exercised and checked in CI.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "evaluator/worker/device_facts.hpp"

namespace kforge {

inline constexpr const char* k_simulate_gpus_env = "KFORGE_SIMULATE_GPUS";
inline constexpr const char* k_simulate_gpu_ms_env = "KFORGE_SIMULATE_GPU_MS";
inline constexpr const char* k_simulate_gpu_setup_ms_env = "KFORGE_SIMULATE_GPU_SETUP_MS";
inline constexpr const char* k_simulate_gpu_costs_env = "KFORGE_SIMULATE_GPU_COSTS";

// What each phase of a request costs a simulated GPU, in units of KFORGE_SIMULATE_GPU_MS.
struct SimulatedCosts {
    double verify = 0.5;    // the test shapes
    double screen = 0.5;    // a sweep or quick timing
    double confirm = 1.5;   // a confirmation timing (the reference interleaved)
    double profile = 1.0;
    double held_out = 0.5;
    double baselines = 2.5; // timing the reference as a GPU starts
    double confirm_spread = 0; // a confirmation: confirm x (1 + confirm_spread x [0, 1) per kernel)
};

inline constexpr const char* k_simulate_gpu_noise_env = "KFORGE_SIMULATE_GPU_NOISE";
inline constexpr const char* k_simulate_gpu_landscape_env = "KFORGE_SIMULATE_GPU_LANDSCAPE";

// The defaults with the `name=units` pairs of `spec` (KFORGE_SIMULATE_GPU_COSTS) applied. Throws
// Error(usage) naming the variable for an unknown name or a value that is not a number from 0 to
// 1000.
SimulatedCosts parse_simulated_costs(const std::string& spec);

// KFORGE_SIMULATE_GPU_NOISE: "" is 0; otherwise a number from 0 to 0.5. Throws Error(usage).
double parse_simulated_noise(const std::string& spec);

// True when KFORGE_SIMULATE_GPUS is set and not empty.
bool simulated_gpus_requested();

// The simulated devices a KFORGE_SIMULATE_GPUS value describes, before CUDA_VISIBLE_DEVICES:
// Hopper-like facts, the given names (or "kforge simulated GPU"), UUIDs fixed by position.
// Throws Error(usage) for a count that is not 1 to 64.
std::vector<DeviceFacts> simulated_devices(const std::string& spec);

// The devices of `machine` (simulated GPUs in PCI bus order, the order kforge's workers ask the
// driver for) that a CUDA program sees under CUDA_VISIBLE_DEVICES=`mask` (nullopt: unset),
// renumbered from 0 in the order the value names them, read as the driver documents it: each
// comma-separated entry is an index of the machine or a GPU UUID (or a prefix of exactly one); the
// first entry that names no device ("-1", "NoDevFiles", an index past the end) or one already
// named ends the list, so an empty value shows none. A value naming GPUs by UUID, none of them
// simulated (the real GPUs of the machine the tests run on), is ignored: every simulated GPU is
// shown, so simulated runs behave the same on every machine.
std::vector<DeviceFacts> cuda_visible_devices(const std::vector<DeviceFacts>& machine, const std::optional<std::string>& mask);

// The body of `kforge __worker gpu` when simulating.
int run_simulated_gpu_worker();

} // namespace kforge
