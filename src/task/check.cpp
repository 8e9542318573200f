// `kforge task check TASK [--arch sm_90a]` (the command is src/cli/cmd_task.cpp): validates a task
// spec and the kernels it names.
//
// After the spec parses, a shape whose tensors alone need more device memory than the GPU has
// (core/task/memory.hpp) fails the check (exit 1) before anything else runs. Then the reference
// and every seed kernel are screened and compiled with NVRTC for --arch, at every param point a
// search would sweep (core/param_sweep.hpp), in a CompilePool; each kernel's registers, spills and
// compile time are printed. Any kernel that does not compile fails the check (exit 1). The GPU
// self-tests (the reference must pass, the built-in bad candidates must fail) need a GPU; without
// one the command says plainly that they did not run.
#include "task/check.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <thread>

#include <fmt/format.h>

#include "core/param_sweep.hpp"
#include "core/plan_check.hpp"
#include "core/task.hpp"
#include "core/task/memory.hpp"
#include "evaluator/compile/compile.hpp"
#include "evaluator/compile/launch_args.hpp"
#include "evaluator/gpu/devices.hpp"
#include "task/selftest.hpp"
#include "util/error.hpp"
#include "util/limits.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"
#include "util/subprocess.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

struct CompileJob {
    std::string file;                  // e.g. "reference.cu", for the report
    const Plan* plan = nullptr;        // the file's plan, checked against what it compiles to
    CompileRequest request;
    std::optional<Verdict> refused;    // the screen's verdict; then nothing is compiled
    CompileResult result;
};

// One job per param point of one kernel file; the screen runs once per file.
void add_jobs(const Task& screen_task, const KernelFile& file, const std::string& arch, size_t max_points,
              std::vector<CompileJob>& jobs)
{
    std::vector<std::string> kernels = launched_kernels(file.plan);
    std::optional<Verdict> refused = screen_source(screen_task, file.source, kernels);
    std::string name = file.path.lexically_relative(screen_task.spec_path.parent_path()).string();
    if (name.empty() || name.rfind("..", 0) == 0)
        name = file.path.filename().string();
    ParamSweep sweep = sweep_param_points(file.plan, max_points);
    if (sweep.sampled())
        log_info("{}: {}", name, sweep.describe());
    for (const auto& point : sweep.points) {
        CompileJob job;
        job.file = name;
        job.plan = &file.plan;
        job.request.source = file.source;
        job.request.arch = arch;
        job.request.params = point;
        job.request.kernels = kernels;
        job.refused = refused;
        jobs.push_back(std::move(job));
        if (refused)
            break; // one report per refused file is enough
    }
}

void compile_all(CompilePool& pool, std::vector<CompileJob>& jobs)
{
    std::atomic<size_t> next{0};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto work = [&] {
        for (size_t i; (i = next++) < jobs.size();) {
            if (jobs[i].refused)
                continue;
            try {
                jobs[i].result = pool.compile(jobs[i].request);
            } catch (...) {
                std::lock_guard lock(error_mutex);
                error = std::current_exception();
            }
        }
    };
    std::vector<std::thread> threads;
    for (size_t t = 0; t < std::min(pool.workers(), jobs.size()); ++t)
        threads.emplace_back(work);
    for (auto& t : threads)
        t.join();
    if (error)
        std::rethrow_exception(error);
}

std::string indent(const std::string& text, const std::string& prefix)
{
    std::string out;
    for (const auto& line : split(trim(text), '\n'))
        out += (trim(line).empty() ? "" : prefix + line) + "\n";
    return out;
}

// Prints one job's outcome; returns whether it compiled.
bool report_job(const Task& task, const CompileJob& job)
{
    std::string where = job.request.params.empty() ? job.file
                                                   : fmt::format("{} [{}]", job.file, describe_param_point(job.request.params));
    if (job.refused) {
        fmt::print("  {}: refused before compiling ({}):\n{}", where, verdict_name(job.refused->kind),
                   indent(job.refused->message, "      "));
        return false;
    }
    const CompileResult& r = job.result;
    if (!r.ok) {
        fmt::print("  {}: {}:\n{}", where, r.failure == VerdictKind::timeout ? "compile timed out" : "does not compile",
                   indent(r.message, "      "));
        return false;
    }
    if (std::string mismatch = check_launch_arguments(task, *job.plan, r); !mismatch.empty()) {
        fmt::print("  {}: its plan does not fit its kernels (plan_error):\n{}", where, indent(mismatch, "      "));
        return false;
    }
    std::string time = r.cache_hit ? "cached" : fmt::format("{:.2f} s", r.seconds);
    for (const auto& kernel : job.request.kernels) {
        auto it = std::find_if(r.resources.begin(), r.resources.end(), [&](const auto& k) { return k.kernel == kernel; });
        if (it == r.resources.end()) {
            fmt::print("  {}: {}: compiled ({}), no ptxas report\n", where, kernel, time);
            continue;
        }
        if (it->from_cubin) // NVRTC's log had no ptxas report: the CUBIN's own record, without spill counts
            fmt::print("  {}: {}: {} registers, {} B stack, {} B static smem (from the CUBIN, which records no spill "
                       "counts; a stack above 0 B may be spills) ({})\n",
                       where, kernel, it->registers, it->stack_frame_bytes, it->static_smem_bytes, time);
        else
            fmt::print("  {}: {}: {} registers, {} B spill stores, {} B spill loads, {} B stack, {} B static smem ({})\n",
                       where, kernel, it->registers, it->spill_store_bytes, it->spill_load_bytes, it->stack_frame_bytes,
                       it->static_smem_bytes, time);
    }
    return true;
}

// The device memory the check compares each shape with: the smallest of this machine's GPUs (the
// self-tests may run on any of them), else, without a GPU, the most any GPU kforge knows has.
std::pair<uint64_t, std::string> device_memory_limit()
{
    try {
        std::vector<VisibleGpu> gpus = list_visible_gpus(self_executable());
        const VisibleGpu& smallest = *std::min_element(gpus.begin(), gpus.end(), [](const auto& a, const auto& b) {
            return a.facts.total_memory < b.facts.total_memory;
        });
        auto bytes = static_cast<uint64_t>(std::max<int64_t>(smallest.facts.total_memory, 0));
        return {bytes, fmt::format("GPU {} ({}) has {}", smallest.index, smallest.facts.name,
                                   format_bytes(static_cast<double>(bytes)))};
    } catch (const Error&) {
        return {k_largest_gpu_memory_bytes,
                fmt::format("the largest GPU kforge knows has ({}; there is no GPU here)",
                            format_bytes(static_cast<double>(k_largest_gpu_memory_bytes)))};
    }
}

} // namespace

int run_task_check(const TaskCheckOptions& options)
{
    Task task = load_task(options.task_path);
    fmt::print("{}: valid kforge.task/1 spec '{}' ({})\n", options.task_path, task.name, task.category);
    fmt::print("  args: {}, shapes: {} tests, {} bench, {} held out; reference {}; {} seed kernel(s)\n",
               task.args.size(), task.tests.size(), task.bench.size(), task.held_out.size(),
               task.reference.path.filename().string(), task.seeds.size());

    // A well-formed spec that no GPU here can run is a negative answer (exit 1), like a seed that
    // does not compile: the spec reads fine, the task cannot be used.
    auto [limit, against] = device_memory_limit();
    if (std::vector<ShapeMemory> over = shapes_over_memory(task, limit); !over.empty()) {
        for (const auto& shape : over)
            fmt::print("  {}\n", shape.describe());
        fmt::print("{} shape(s) need more device memory than {}: not runnable; make their sizes smaller in {}\n",
                   over.size(), against, options.task_path);
        return k_exit_negative;
    }

    // The task's forbidden patterns bind candidates, not the task's own reference.
    Task reference_rules = task;
    reference_rules.forbid.clear();
    std::vector<CompileJob> jobs;
    auto max_points = static_cast<size_t>(task.limits.max_param_points);
    if (!task.is_torch())
        add_jobs(reference_rules, task.reference, options.arch, max_points, jobs);
    for (const auto& seed : task.seeds)
        add_jobs(task, seed, options.arch, max_points, jobs);

    CompilePoolConfig config;
    config.cache_dir = cache_dir() / "cubin";
    CompilePool pool(config);
    size_t files = task.seeds.size() + (task.is_torch() ? 0 : 1);
    if (task.is_torch())
        fmt::print("  the reference is the PyTorch program {} (run by the GPU worker's PyTorch process)\n",
                   task.reference.path.filename().string());
    fmt::print("compiling {} kernel file(s), {} compile(s), for {} with NVRTC {} ({} workers):\n", files,
               jobs.size(), options.arch, nvrtc_version(), pool.workers());
    std::fflush(stdout);
    compile_all(pool, jobs);

    size_t failures = 0;
    for (const auto& job : jobs)
        failures += report_job(task, job) ? 0 : 1;
    if (failures == 0)
        fmt::print("all {} compile(s) succeeded\n", jobs.size());
    else
        fmt::print("{} of {} compile(s) failed\n", failures, jobs.size());
    if (failures > 0) {
        fmt::print("GPU self-tests not run: fix the compile errors first\n");
        return k_exit_negative;
    }
    std::fflush(stdout);
    SelfTestOutcome self_tests = run_gpu_self_tests(task);
    if (!self_tests.ran) {
        fmt::print("GPU self-tests skipped ({}): {}; run `kforge task check` on a machine with a GPU\n",
                   task.is_torch() ? "the PyTorch program must pass its own check; all-zeros and copy-of-input "
                                     "candidates must fail"
                                   : "reference must pass; all-zeros, copy-of-input, perturbed and skipped-shape "
                                     "candidates must fail",
                   self_tests.skipped_reason);
        return k_exit_ok;
    }
    fmt::print("GPU self-tests:\n{}", self_tests.table);
    fmt::print("{}\n", self_tests.passed ? "self-tests passed: the reference is correct and every bad candidate is "
                                           "rejected"
                                         : "self-tests FAILED: the spec's checks cannot tell wrong from right");
    return self_tests.passed ? k_exit_ok : k_exit_negative;
}

} // namespace kforge
