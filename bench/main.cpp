// kforge_bench: `replay`, `fidelity`, `throughput`, and `all` (which writes bench/results/).
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

    std::string out_dir = "bench/results";
    auto* all = app.add_subcommand("all", "throughput and fidelity; writes <out>/<gpu>-<date>.md and .json");
    all->add_option("--out", out_dir)->capture_default_str();
    all->add_option("--ncu", ncu)->capture_default_str();

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
        } else if (*all) {
            Json t = run_throughput(options, throughput_task, candidates);
            Json f = run_fidelity(options, fidelity_tasks, repeats, ncu);
            std::string gpu = t.value("device", "gpu");
            for (char& c : gpu)
                c = std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
            std::string md = fmt::format("# kforge benchmarks, {}, {}\n\n## Evaluator throughput\n\n{}\n## Timing fidelity "
                                         "against Nsight Compute\n\n{}",
                                         t.value("device", "?"), today(), throughput_markdown(t), fidelity_markdown(f));
            std::filesystem::create_directories(out_dir);
            write_file_atomic(std::filesystem::path(out_dir) / fmt::format("{}-{}.md", gpu, today()), md);
            write_file_atomic(std::filesystem::path(out_dir) / fmt::format("{}-{}.json", gpu, today()),
                              Json{{"throughput", t}, {"fidelity", f}}.dump(2));
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
