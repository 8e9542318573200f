// kforge's benchmarks (bench/): programs that measure kforge itself on a GPU and print tables.
// Timed tests are not benchmarks; these are run by hand or by scripts/gpu/checks/bench.sh, and their
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
    // `tasks`: PyTorch columns from bench/torch_baselines.py ("auto": when python3 imports torch;
    // "off"), and its cap on each shape's torch.compile.
    std::string torch = "auto";
    double torch_compile_cap_s = 180;
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

// `tasks`: each bundled task optimised by `kforge optimize --model builtin --time T` into an archive
// under `archive_dir`; per bench shape the reference, vendor, PyTorch (eager and torch.compile,
// bench/torch_baselines.py) and best times, speedups and % of the roofline (measured DRAM
// bandwidth, theoretical compute peak).
Json run_tasks(const BenchOptions& options, const std::vector<std::string>& tasks, const std::string& time_limit,
               const std::string& archive_dir);

// `scale`: `kforge optimize` with 1, 2, 4, 8 GPUs (those present), in one process and, with
// mpirun, one rank per GPU, each row with a fresh CUBIN cache: a fixed-work table (the same
// recorded candidates on every row: search wall time, each GPU's busy share, the speedup over one
// GPU) and a table of the builtin proposer with a fixed budget (bench/scale.cpp).
struct ScaleSettings {
    std::string task = "softmax_f32";
    std::vector<int> gpu_counts = {1, 2, 4, 8};
    int candidates = 16;           // recorded replies each fixed-work row evaluates
    int budget = 40;               // candidates of each builtin row
    std::string replay;            // recorded replies for the fixed-work rows
    std::string mpirun;            // "" leaves the MPI rows out
    std::string archive_dir = "bench-archives/scale";
    double deadline_s = 0;         // > 0: rows that would end later than this many seconds after the
                                   // first began are left out (marked "skipped"); 0: no limit
    std::string shared_cache;      // "": a fresh CUBIN cache per row; else every row uses this one
                                   // (simulated GPUs on a small machine, where NVRTC would dominate)
    std::vector<std::string> optimize_args; // added to every row's `kforge optimize` (experiments:
                                            // --compile-workers N, say); recorded in scale.json
};
// mpirun from the PATH, tests/fixtures/replay/softmax_f32_scale.jsonl (scripts/replay/scale.py).
ScaleSettings default_scale_settings();
// Runs the rows (the fixed-work table, then the builtin one) and returns {"device", ..., "rows"};
// the same object, with the rows done so far, is rewritten to <archive_dir>/scale.json after each
// row, so a run cut short still leaves what it measured.
Json run_scale(const BenchOptions& options, const ScaleSettings& settings);

// `suite`: problems per hour of `kforge suite run` (bundled tasks, builtin proposer, `time` each)
// with 1, 2, 4, 8 GPUs (those present), with the speedup over one GPU and each GPU's busy and held
// shares while problems remained.
struct SuiteBenchSettings {
    std::vector<std::string> tasks = {"axpy_f32",     "softmax_f32",   "layernorm_f32", "rmsnorm_bf16",
                                      "reduce_sum_f32", "transpose_f32", "sgemm_f32",     "hgemm_bf16",
                                      "spmv_csr_f32", "jacobi2d_f32",  "histogram_u8",  "scan_u32"};
    // Problem files or folders (PyTorch programs, task specs) instead of the bundled tasks above,
    // with recorded replies from these folders (DIR/<stem>.jsonl), each problem `copies` times.
    std::vector<std::string> problems;
    std::vector<std::string> replies;
    int copies = 1;
    std::string latency;           // replies served after it ("30s", "20s..90s"); "": at once
    std::vector<int> gpu_counts = {1, 2, 4, 8};
    // How runs share a GPU, one row each per GPU count: "old" (5 runs start up side by side, one
    // searches at a time: --per-gpu 5 --searches-per-gpu 1), "auto" (suite run's default) or N
    // (--per-gpu N, all searching).
    std::vector<std::string> modes = {"old", "auto"};
    int old_problems = 0;          // the old mode runs only the first this many problems (0: all)
    std::string time;              // --time of every problem ("": none, the replies bound it)
    std::string archive_dir = "bench-archives/suite";
};
Json run_suite_bench(const BenchOptions& options, const SuiteBenchSettings& settings);

// PyTorch eager and torch.compile at `task`'s bench shapes (bench/torch_baselines.py, torch.cpp):
// {"available", "reason" (when not), "torch", "device", "shapes": {LABEL: {"eager": row, "compile":
// row}}}, a row being {"ns", "check", "note"} or {"error"}.
Json run_torch_baselines(const BenchOptions& options, const Task& task);
// A torch row's median when it has a usable one (0 for an error or a result failing the task's
// check, with the short reason in `why`).
double torch_time_ns(const Json& row, std::string& why);

// Prints a JSON result section as a Markdown table (to stdout) and returns the Markdown.
std::string fidelity_markdown(const Json& fidelity);
std::string throughput_markdown(const Json& throughput);
std::string tasks_markdown(const Json& tasks);
std::string scale_markdown(const Json& scale);
std::string suite_markdown(const Json& suite);

// Paths and helpers.
std::string default_kforge_binary();
Task load_bundled_task(const BenchOptions& options, const std::string& name);
// The first line of `text`, at most 300 characters (for messages in tables).
std::string first_line_of(const std::string& text);

// Runs argv to completion and returns what it wrote (stdout and stderr, or stdout alone; then
// stderr goes to `stderr_path`, or nowhere when it is empty).
enum class CaptureStream { both, stdout_only };
std::string spawn_capture(const std::vector<std::string>& argv, int& exit_code,
                          CaptureStream streams = CaptureStream::both, const std::string& stderr_path = "");

} // namespace kforge::bench
