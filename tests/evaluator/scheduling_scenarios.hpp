// Scheduling scenarios on simulated GPUs (evaluator/worker/simulator.hpp) that run the same
// way over GPUs of one process and over another MPI rank's GPU: the GPU evaluator must treat a
// remote GPU as one more slot (test_gpu_scheduling.cpp, test_mpi.cpp).
#pragma once

#include <string>

#include "core/task.hpp"
#include "evaluator/evaluator.hpp"

namespace kforge::test {

// What the workers of the handoff scenario must be started with: KFORGE_SIMULATE_GPU_MS and
// KFORGE_SIMULATE_GPU_COSTS (a screened variant 0.4 s, long enough for a job to compile while a
// sweep runs; a confirmation 4 s and a profile 4 s more).
inline constexpr int k_handoff_unit_ms = 100;
inline constexpr const char* k_handoff_costs = "verify=2,screen=2,confirm=40,profile=40";

// Compiles every kernel and param point the handoff scenario runs into `config.cache_dir`, through
// an evaluator of its own on one simulated GPU whose time units are a millisecond (no MPI, no
// memo shared with the scenario's evaluator). Then the scenario's compiles are cache hits and only
// the simulated GPU times order its jobs: on a loaded machine an NVRTC compile took longer than
// the sweep it was meant to interrupt.
void warm_handoff_compiles(const Task& task, EvaluatorConfig config);

// On `evaluator` with two GPUs of one model (gpu_usage() order: the first, the second) and no job
// yet: the first GPU runs a long confirmation; the second takes a sweep, and between its variants
// an earlier, longer job (no other GPU being idle); a later job waits. CHECKs that the first GPU,
// once free, finished the sweep — its remaining variants and its final step — and delivered it
// before the second came back and before it took the later job.
void check_sweep_handoff(CandidateEvaluator& evaluator);

} // namespace kforge::test
