// kforge_bench: `replay`, `fidelity`, `throughput`, `tasks`, `scale`, and `all` (which writes
// bench/results/).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/bench.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::bench;

namespace {

std::string today()
{
    std::time_t now = std::time(nullptr);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%d", std::localtime(&now));
    return buffer;
}

// Sections of `update` replace those of `base`, except the task table, whose tasks are replaced
// one by one.
Json merge_results(Json base, const Json& update)
{
    for (const auto& [name, section] : update.items()) {
        if (name != "tasks" || !base.contains("tasks")) {
            base[name] = section;
            continue;
        }
        Json& tasks = base["tasks"]["tasks"];
        for (const auto& task : section.at("tasks")) {
            auto same = std::find_if(tasks.begin(), tasks.end(), [&](const Json& t) { return t.at("task") == task.at("task"); });
            if (same != tasks.end())
                *same = task;
            else
                tasks.push_back(task);
        }
        for (const auto& [key, value] : section.items())
            if (key != "tasks")
                base["tasks"][key] = value;
    }
    return base;
}

std::string results_markdown(const Json& json)
{
    std::string body;
    if (json.contains("throughput"))
        body += "\n## Evaluator throughput\n\n" + throughput_markdown(json.at("throughput"));
    if (json.contains("fidelity"))
        body += "\n## Timing fidelity against Nsight Compute\n\n" + fidelity_markdown(json.at("fidelity"));
    if (json.contains("tasks"))
        body += "\n## Task suite, builtin proposer\n\n" + tasks_markdown(json.at("tasks"));
    if (json.contains("scale"))
        body += "\n## Scaling with the number of GPUs\n\n" + scale_markdown(json.at("scale"));
    if (json.contains("suite"))
        body += "\n## Suites: problems per hour against the number of GPUs\n\n" + suite_markdown(json.at("suite"));
    return body;
}

} // namespace

int main(int argc, char** argv)
{
    CLI::App app{"kforge_bench: measure kforge's evaluator on a GPU", "kforge_bench"};
    app.require_subcommand(1);
    BenchOptions options;
    options.kforge = default_kforge_binary();
    options.tasks_dir = (resource_dir() / "tasks").string();
    app.add_option("--kforge", options.kforge, "the kforge binary (workers)")->capture_default_str();
    app.add_option("--tasks", options.tasks_dir, "folder of task specs")->capture_default_str();
    app.add_option("--cache", options.cache_dir, "CUBIN cache folder (default: a fresh temporary one)");
    app.add_option("--torch", options.torch, "tasks: PyTorch eager/torch.compile columns (auto: when python3 imports torch)")
        ->check(CLI::IsMember({"auto", "off"}))->capture_default_str();
    app.add_option("--torch-compile-cap", options.torch_compile_cap_s, "tasks: seconds for each shape's torch.compile")
        ->capture_default_str();

    std::string task_path, file;
    int runs = 30;
    auto* replay = app.add_subcommand("replay", "launch a kernel's plan on every bench shape, for an external profiler");
    replay->add_option("--task", task_path)->required();
    replay->add_option("--file", file, "kernel file (default: the task's reference)");
    replay->add_option("--runs", runs)->capture_default_str();

    std::vector<std::string> fidelity_tasks = {"softmax_f32", "axpy_f32", "transpose_f32", "layernorm_f32"};
    int repeats = 10;
    std::string ncu = "ncu";
    auto* fidelity = app.add_subcommand("fidelity", "kforge's medians against Nsight Compute's, and their repeatability");
    fidelity->add_option("--task", fidelity_tasks)->capture_default_str();
    fidelity->add_option("--repeats", repeats)->capture_default_str();
    fidelity->add_option("--ncu", ncu)->capture_default_str();

    std::string throughput_task = "softmax_f32";
    int candidates = 60;
    auto* throughput = app.add_subcommand("throughput", "full evaluations per minute, with the split by stage");
    throughput->add_option("--task", throughput_task)->capture_default_str();
    throughput->add_option("--candidates", candidates)->capture_default_str();

    std::vector<std::string> suite = {"axpy_f32",      "softmax_f32", "layernorm_f32", "rmsnorm_bf16",
                                      "reduce_sum_f32", "transpose_f32", "sgemm_f32",   "hgemm_bf16",
                                      "spmv_csr_f32",  "jacobi2d_f32", "histogram_u8", "scan_u32",
                                      "gelu_bf16"};
    std::string task_time = "5m";
    std::string archive_dir = "bench-archives";
    auto* tasks = app.add_subcommand("tasks", "each task optimised by the builtin proposer: reference, vendor and best times");
    tasks->add_option("--task", suite)->capture_default_str();
    tasks->add_option("--time", task_time, "wall time of each task's optimize run")->capture_default_str();
    tasks->add_option("--archives", archive_dir, "folder for the runs' archives and logs")->capture_default_str();

    ScaleSettings scale_settings = default_scale_settings();
    auto add_scale_options = [&](CLI::App* cmd) {
        cmd->add_option("--gpu-counts", scale_settings.gpu_counts, "GPU counts to measure (those present)")->capture_default_str();
        cmd->add_option("--scale-candidates", scale_settings.candidates,
                        "recorded candidates each fixed-work row evaluates")->capture_default_str();
        cmd->add_option("--scale-budget", scale_settings.budget, "candidates of each builtin row")->capture_default_str();
        cmd->add_option("--replay", scale_settings.replay, "recorded replies for the fixed-work rows")->capture_default_str();
        cmd->add_option("--mpirun", scale_settings.mpirun, "mpirun for the one-rank-per-GPU rows (\"\": none)")->capture_default_str();
        cmd->add_option("--scale-shared-cache", scale_settings.shared_cache,
                        "one CUBIN cache for every row, warmed by the first (default: a fresh one per row); for "
                        "simulated GPUs on a machine whose few cores would make NVRTC the bottleneck");
        cmd->add_option("--scale-optimize-arg", scale_settings.optimize_args,
                        "an argument added to every row's kforge optimize (repeat; e.g. --scale-optimize-arg=--compile-workers "
                        "--scale-optimize-arg=16)");
        cmd->add_option("--scale-deadline", scale_settings.deadline_s,
                        "seconds: rows expected to end later are left out (0: no limit)")
            ->check(CLI::NonNegativeNumber)
            ->capture_default_str();
    };
    auto* scale = app.add_subcommand("scale", "fixed work and a builtin budget against the number of GPUs, in one process "
                                              "and under mpirun");
    add_scale_options(scale);
    scale->add_option("--archives", scale_settings.archive_dir, "folder for the runs' archives and logs")->capture_default_str();

    SuiteBenchSettings suite_settings;
    auto* suite_cmd = app.add_subcommand("suite", "problems per hour of `kforge suite run` against the number of GPUs, "
                                                  "how runs share a GPU and the model's latency");
    suite_cmd->add_option("--suite-task", suite_settings.tasks, "bundled tasks of the suite (builtin proposer)")
        ->capture_default_str();
    suite_cmd->add_option("--problems", suite_settings.problems, "problem files or folders of .py programs, instead "
                                                                 "of the bundled tasks (with --replies)");
    suite_cmd->add_option("--replies", suite_settings.replies, "folders of recorded replies, DIR/<stem>.jsonl");
    suite_cmd->add_option("--copies", suite_settings.copies, "each problem this many times, under its own name")
        ->check(CLI::Range(1, 50));
    suite_cmd->add_option("--latency", suite_settings.latency, "replies served after this (30s, 20s..90s)");
    suite_cmd->add_option("--suite-time", suite_settings.time, "--time of each problem (default: 30s for the "
                                                               "bundled tasks, none with replies)");
    suite_cmd->add_option("--gpu-counts", suite_settings.gpu_counts, "GPU counts to measure (those present)")
        ->capture_default_str();
    suite_cmd->add_option("--modes", suite_settings.modes, "how runs share a GPU, a row each: old (one search per "
                                                           "GPU at a time), auto (the default), N (--per-gpu N)")
        ->capture_default_str();
    suite_cmd->add_option("--old-problems", suite_settings.old_problems, "the old mode runs only the first this many "
                                                                         "problems (0: all)");
    suite_cmd->add_option("--archives", suite_settings.archive_dir, "folder for the suite folders and logs")
        ->capture_default_str();

    std::string out_dir = "bench/results";
    std::vector<std::string> sections = {"throughput", "fidelity", "tasks"};
    auto* all = app.add_subcommand("all", "throughput, fidelity and the task table; writes <out>/<gpu>-<date>.md and .json");
    all->add_option("--out", out_dir)->capture_default_str();
    all->add_option("--ncu", ncu)->capture_default_str();
    all->add_option("--section", sections, "which sections to run (scale, suite: on request)")
        ->check(CLI::IsMember({"throughput", "fidelity", "tasks", "scale", "suite"}))
        ->capture_default_str();
    add_scale_options(all);
    all->add_option("--suite-time", suite_settings.time, "suite: --time of each problem")->capture_default_str();
    all->add_option("--time", task_time, "wall time of each task's optimize run")->capture_default_str();
    all->add_option("--task", suite, "tasks of the task table")->capture_default_str();

    CLI11_PARSE(app, argc, argv);
    try {
        std::filesystem::path temp;
        if (options.cache_dir.empty()) {
            temp = std::filesystem::temp_directory_path() / fmt::format("kforge-bench-cache-{}", ::getpid());
            options.cache_dir = temp.string();
        }
        int rc = 0;
        if (*replay) {
            rc = run_replay(options, task_path, file, runs);
        } else if (*fidelity) {
            Json result = run_fidelity(options, fidelity_tasks, repeats, ncu);
            fmt::print("{}", fidelity_markdown(result));
        } else if (*throughput) {
            Json result = run_throughput(options, throughput_task, candidates);
            fmt::print("{}", throughput_markdown(result));
        } else if (*tasks) {
            Json result = run_tasks(options, suite, task_time, archive_dir);
            fmt::print("{}", tasks_markdown(result));
        } else if (*scale) {
            Json result = run_scale(options, scale_settings);
            fmt::print("{}", scale_markdown(result));
        } else if (*suite_cmd) {
            Json result = run_suite_bench(options, suite_settings);
            // Beside the folders the rows ran in, the whole result (each row's per-problem results).
            write_file_atomic(std::filesystem::path(suite_settings.archive_dir) / "suite-bench.json", result.dump(2));
            fmt::print("{}", suite_markdown(result));
        } else if (*all) {
            auto wanted = [&](const char* name) { return std::find(sections.begin(), sections.end(), name) != sections.end(); };
            Json json = Json::object();
            if (wanted("throughput"))
                json["throughput"] = run_throughput(options, throughput_task, candidates);
            if (wanted("fidelity"))
                json["fidelity"] = run_fidelity(options, fidelity_tasks, repeats, ncu);
            if (wanted("tasks"))
                json["tasks"] = run_tasks(options, suite, task_time, (std::filesystem::path(out_dir) / "archives").string());
            if (wanted("scale")) {
                scale_settings.archive_dir = (std::filesystem::path(out_dir) / "archives" / "scale").string();
                json["scale"] = run_scale(options, scale_settings);
            }
            if (wanted("suite")) {
                suite_settings.archive_dir = (std::filesystem::path(out_dir) / "archives" / "suite").string();
                json["suite"] = run_suite_bench(options, suite_settings);
            }
            std::string device = "gpu";
            for (const auto& section : json)
                if (section.contains("device"))
                    device = section.at("device").get<std::string>();
            std::string gpu = device;
            for (char& c : gpu)
                c = std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
            // Sections run on the same GPU model the same day join the results already written
            // there, so a suite longer than one sitting can be run in parts (--section, --task).
            auto json_path = std::filesystem::path(out_dir) / fmt::format("{}-{}.json", gpu, today());
            if (std::filesystem::exists(json_path))
                json = merge_results(Json::parse(read_file(json_path)), json);
            std::string md = fmt::format("# kforge benchmarks, {}, {}\n{}", device, today(), results_markdown(json));
            std::filesystem::create_directories(out_dir);
            write_file_atomic(std::filesystem::path(out_dir) / fmt::format("{}-{}.md", gpu, today()), md);
            write_file_atomic(json_path, json.dump(2));
            fmt::print("{}", md);
        }
        if (!temp.empty())
            std::filesystem::remove_all(temp);
        return rc;
    } catch (const Error& e) {
        log_error("{}", e.what());
        return exit_code_of(e.kind());
    }
}
