// kforge's benchmarks (bench/): programs that measure kforge itself on a GPU and print tables.
// Timed tests are not benchmarks; these are run by hand or by scripts/gpu-bench.sh, and their
// results are committed under bench/results/.
#pragma once

#include <string>
#include <vector>

#include "core/task.hpp"
#include "util/json_reader.hpp"

namespace kforge::bench {

struct BenchOptions {
    std::string kforge;        // the kforge binary that serves as worker (default: beside this one)
    std::string tasks_dir;     // the bundled tasks (default: KFORGE_HOME/tasks)
    std::string cache_dir;     // CUBIN cache for the evaluator (default: a fresh temporary folder)
};

// `replay`: runs a kernel file's plan on every bench shape `runs` times, flushing L2 before each
// run, without CUPTI, so an external profiler (Nsight Compute) can time the same launches.
int run_replay(const BenchOptions& options, const std::string& task_path, const std::string& file, int runs);

// `fidelity`: kforge's confirmed medians of each task's reference, repeated `repeats` times, against
// Nsight Compute's gpu__time_duration.sum of the same kernels. Returns the results as JSON.
Json run_fidelity(const BenchOptions& options, const std::vector<std::string>& tasks, int repeats,
                  const std::string& ncu);

// `throughput`: full evaluations (compile + verify + time) per minute, with the split by stage.
Json run_throughput(const BenchOptions& options, const std::string& task, int candidates);

// Prints a JSON result section as a Markdown table (to stdout) and returns the Markdown.
std::string fidelity_markdown(const Json& fidelity);
std::string throughput_markdown(const Json& throughput);

// Paths and helpers.
std::string default_kforge_binary();
Task load_bundled_task(const BenchOptions& options, const std::string& name);
std::string spawn_capture(const std::vector<std::string>& argv, int& exit_code);

} // namespace kforge::bench
