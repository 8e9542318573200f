// `kforge_bench suite`: problems per hour of `kforge suite run` against the number of GPUs and the
// number of runs sharing each GPU.
//
// For each GPU count the machine has (1, 2, 4, 8 by default) and each --per-gpu value (1 and 5 by
// default: one run per GPU at a time, or suite run's default, the next runs starting up while one
// searches), this runs
// the real command a user runs — `kforge suite run TASK... -o DIR --model builtin --time T --gpus N
// --per-gpu P --json` — on the same bundled tasks into a fresh suite folder, and reads back its
// --json output: the problems done, the wall time measured from outside (imports, startups and the
// tail where fewer problems than GPUs remain all count), problems per hour, the speedup over the
// first row, and each GPU's busy (the union of its runs' measuring) and held shares while problems
// remained. With as many tasks as GPUs or fewer, adding GPUs cannot help: the default list is long
// enough for eight. On simulated GPUs (KFORGE_SIMULATE_GPUS, with KFORGE_SIMULATE_GPU_SETUP_MS for
// a start-up) it shows what sharing a GPU does to its busy share without one.
#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "bench/bench.hpp"
#include "evaluator/gpu_devices.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge::bench {
namespace {

namespace fs = std::filesystem;

// One `suite run` on `gpus` GPUs; its row of the table.
Json run_suite_once(const BenchOptions& options, const SuiteBenchSettings& settings, int gpus, int runs_per_gpu)
{
    std::string name = fmt::format("suite-{}gpu-{}per", gpus, runs_per_gpu);
    fs::path root = fs::path(settings.archive_dir) / name;
    fs::remove_all(root);
    fs::create_directories(root.parent_path());
    std::vector<std::string> argv{options.kforge, "suite", "run"};
    for (const auto& task : settings.tasks)
        argv.push_back((fs::path(options.tasks_dir) / (task + ".json")).string());
    argv.insert(argv.end(), {"-o", root.string(), "--model", "builtin", "--time", settings.time, "--gpus",
                             std::to_string(gpus), "--per-gpu", std::to_string(runs_per_gpu), "--no-knowledge",
                             "--progress", "lines", "--json"});
    log_info("suite: {} tasks on {} GPU{}, {} at once per GPU, {} each", settings.tasks.size(), gpus,
             gpus == 1 ? "" : "s", runs_per_gpu, settings.time);
    int rc = 0;
    auto started = std::chrono::steady_clock::now();
    fs::path log = root.parent_path() / (name + ".log");
    std::string text = spawn_capture(argv, rc, CaptureStream::stdout_only, log.string());
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    Json row{{"gpus", gpus}, {"runs_per_gpu", runs_per_gpu}, {"suite", root.string()}, {"exit", rc}, {"wall_s", wall}};
    Json out;
    try {
        out = Json::parse(text.substr(std::min(text.find('{'), text.size())));
    } catch (const std::exception&) {
        row["error"] = fmt::format("no JSON from kforge suite run (exit {}); see {}", rc, log.string());
        return row;
    }
    const Json& summary = out.at("report").at("summary");
    int64_t finished = summary.at("states").value("finished", int64_t{0});
    row["problems"] = summary.at("problems");
    row["finished"] = finished;
    row["correct"] = summary.at("correct");
    row["problems_per_hour"] = wall > 0 ? 3600.0 * static_cast<double>(finished) / wall : 0.0;
    Json per_gpu = Json::array();
    for (const auto& gpu : out.at("run").at("gpus"))
        per_gpu.push_back(Json{{"gpu", gpu.at("label")}, {"busy", gpu.at("busy")}, {"held", gpu.at("held")},
                               {"problems", gpu.at("problems")}});
    row["per_gpu"] = per_gpu;
    return row;
}

std::string share_text(const Json& row, const char* key)
{
    std::vector<std::string> parts;
    for (const auto& gpu : row.value("per_gpu", Json::array()))
        parts.push_back(fmt::format("{} {:.0f}%", gpu.at("gpu").get<std::string>(), 100 * gpu.at(key).get<double>()));
    return parts.empty() ? "-" : join(parts, ", ");
}

} // namespace

Json run_suite_bench(const BenchOptions& options, const SuiteBenchSettings& settings)
{
    std::vector<VisibleGpu> visible = list_visible_gpus(options.kforge);
    std::vector<int> counts;
    for (int n : settings.gpu_counts)
        if (n >= 1 && static_cast<size_t>(n) <= visible.size())
            counts.push_back(n);
    if (counts.empty())
        counts.push_back(1);
    std::vector<int> sharing = settings.runs_per_gpu.empty() ? std::vector<int>{1} : settings.runs_per_gpu;
    Json rows = Json::array();
    double first = 0;
    for (int n : counts)
        for (int p : sharing) {
            Json row = run_suite_once(options, settings, n, p);
            double rate = row.value("problems_per_hour", 0.0);
            if (rows.empty())
                first = rate;
            row["speedup"] = first > 0 ? Json(rate / first) : Json();
            rows.push_back(row);
        }
    return Json{{"device", visible.front().facts.name},
                {"gpus_visible", visible.size()},
                {"tasks", settings.tasks},
                {"time", settings.time},
                {"rows", rows}};
}

std::string suite_markdown(const Json& suite)
{
    std::string md = fmt::format(
        "`kforge suite run` of {} bundled tasks, builtin proposer, `--time {}` each, on {} ({} GPU{} visible). "
        "Wall time from outside the command; per GPU: the runs at once on it (--per-gpu), and its shares while "
        "problems remained: busy (the union of its runs' measuring) and held (some run had it). Speedup: problems "
        "per hour over the first row.\n\n"
        "| GPUs | per GPU | finished | correct | wall | problems / hour | speedup | GPU busy | GPU held |\n"
        "|---:|---:|---:|---:|---:|---:|---:|---|---|\n",
        suite.at("tasks").size(), suite.at("time").get<std::string>(), suite.at("device").get<std::string>(),
        suite.at("gpus_visible").get<int>(), suite.at("gpus_visible").get<int>() == 1 ? "" : "s");
    for (const auto& row : suite.at("rows")) {
        if (row.contains("error")) {
            md += fmt::format("| {} | {} | - | - | - | - | - | {} | |\n", row.at("gpus").get<int>(),
                              row.value("runs_per_gpu", 1), row.at("error").get<std::string>());
            continue;
        }
        md += fmt::format("| {} | {} | {}/{} | {} | {:.0f} s | **{:.1f}** | {} | {} | {} |\n", row.at("gpus").get<int>(),
                          row.value("runs_per_gpu", 1),
                          row.at("finished").get<int64_t>(), row.at("problems").get<int64_t>(),
                          row.at("correct").get<int64_t>(), row.at("wall_s").get<double>(),
                          row.at("problems_per_hour").get<double>(),
                          row.at("speedup").is_null() ? "-" : fmt::format("{:.2f}x", row.at("speedup").get<double>()),
                          share_text(row, "busy"), share_text(row, "held"));
    }
    return md;
}

} // namespace kforge::bench
