// Runs of the real kforge binary over simulated GPUs (evaluator/worker/simulator.hpp), for the
// multi-GPU and MPI tests: the same short replayed softmax search on one or several GPUs, a way to
// find and kill the GPU workers of a run, and what two archives recorded, to compare them.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace kforge::test {

// The arguments of `kforge optimize` for the replayed softmax run every comparison uses: a fixed
// seed, recorded model replies, one model call at a time (so the replies are served in one order),
// a fixed window of work in flight, a small budget (12 unless given). `archive` is the -o path.
std::vector<std::string> replayed_softmax_args(const std::filesystem::path& archive, int budget = 12);

// The environment of a simulated run: `gpus` simulated GPUs each taking `gpu_ms` per variant, a
// CUBIN cache shared by every run of this test process (so later runs skip NVRTC), no API keys.
std::vector<std::string> simulated_env(const std::string& gpus, int gpu_ms = 20);

// `kforge_args` run with `--log-level debug`, which logs what each proposal's random choices are
// drawn from (see choice_trace).
std::vector<std::string> with_debug_log(const std::vector<std::string>& kforge_args);

// The archive of the replayed softmax run on one simulated GPU, made once per test process (with
// the debug log, kept for one_gpu_reference_choices).
const std::filesystem::path& one_gpu_reference_archive();

// The lines of the one-GPU reference run's debug log that say what each proposal's choices were
// drawn from (RNG state, elites and their cells), for a failed comparison: where two runs' choices
// part shows why.
const std::string& one_gpu_reference_choices();

// What an archive recorded for every candidate, in id order, one line each: source hash, origin,
// island, generation, parent, verdict, fitness (exact) and grid cell. Two runs that made the same
// choices and measured the same numbers have equal lists.
std::vector<std::string> recorded_candidates(const std::filesystem::path& archive);

// The pids of processes whose parent is `parent` and whose command line holds `word` and `kind`
// (e.g. "__worker", "gpu").
std::vector<int> child_processes(int parent, const std::string& word, const std::string& kind);

// Waits (up to `seconds`) until `program`'s stderr contains `text`; false on timeout.
bool wait_for_stderr(const RunningProgram& program, const std::string& text, int seconds);

} // namespace kforge::test
