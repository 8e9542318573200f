// `kforge_bench scale`: how search throughput grows with the number of GPUs.
//
// For each proposer (the builtin one, and the replay provider serving recorded model replies) and
// each GPU count that the machine has (1, 2, 4, 8 by default), this runs the real command a user
// runs — `kforge optimize TASK --gpus N` — and reads its --json summary: candidates recorded in the
// session over the session's wall time, each GPU's busy share, and the speedup over one GPU. When
// mpirun is on the PATH it runs the same with one MPI rank per GPU (`mpirun --enable-recovery
// --bind-to none -n N kforge optimize ... --gpus N`: rank 0 drives GPU 0, rank k GPU k).
//
// The builtin runs are limited by time (every count gets the same wall time); the replay runs by
// the recorded replies (each candidate after the task's seeds takes one), so they are short and
// their throughput includes the fixture's deliberate hangs, which cost a launch deadline each.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <unistd.h>

#include "bench/bench.hpp"
#include "evaluator/gpu_devices.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"
#include "util/text.hpp"

namespace kforge::bench {
namespace {

namespace fs = std::filesystem;

std::string find_on_path(const std::string& program)
{
    const char* path = std::getenv("PATH");
    for (const auto& dir : split(path ? path : "", ':')) {
        fs::path candidate = fs::path(dir) / program;
        if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0)
            return candidate.string();
    }
    return "";
}

size_t count_lines(const fs::path& path)
{
    std::ifstream in(path);
    size_t lines = 0;
    for (std::string line; std::getline(in, line);)
        lines += !trim(line).empty();
    return lines;
}

struct ScaleRun {
    std::string proposer;   // "builtin" or "replay"
    std::string launch;     // "one process" or "mpirun"
    int gpus = 1;
};

// One optimize run; its row of the table.
Json run_one(const BenchOptions& options, const ScaleSettings& settings, const ScaleRun& run, const fs::path& dir)
{
    std::string name = fmt::format("{}-{}-{}gpu", run.proposer, run.launch == "mpirun" ? "mpi" : "local", run.gpus);
    fs::path archive = dir / (name + ".kforge");
    fs::remove(archive);
    std::vector<std::string> argv;
    if (run.launch == "mpirun") {
        argv = {"env"};
        if (::getuid() == 0)
            argv.insert(argv.end(), {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"});
        argv.insert(argv.end(), {settings.mpirun, "--enable-recovery", "--bind-to", "none", "-n", std::to_string(run.gpus)});
    }
    Task task = load_bundled_task(options, settings.task);
    argv.insert(argv.end(), {options.kforge, "optimize", (fs::path(options.tasks_dir) / (settings.task + ".json")).string(),
                             "--gpus", std::to_string(run.gpus), "--seed", "1", "--no-knowledge", "--progress", "lines",
                             "--json", "-o", archive.string()});
    if (run.proposer == "builtin") {
        argv.insert(argv.end(), {"--model", "builtin", "--time", settings.time, "--budget", "100000"});
    } else {
        size_t budget = 1 + task.seeds.size() + count_lines(settings.replay);
        argv.insert(argv.end(), {"--model", "replay:" + settings.replay, "--budget", std::to_string(budget)});
    }
    log_info("scale: {} on {} GPU{} ({})", run.proposer, run.gpus, run.gpus == 1 ? "" : "s", run.launch);
    int rc = 0;
    std::string text = spawn_capture(argv, rc, CaptureStream::stdout_only, (dir / (name + ".log")).string());
    Json row{{"proposer", run.proposer}, {"launch", run.launch}, {"gpus", run.gpus}, {"archive", archive.string()},
             {"exit", rc}};
    Json summary;
    try {
        summary = Json::parse(text.substr(std::min(text.find('{'), text.size())));
    } catch (const std::exception&) {
        row["error"] = fmt::format("no summary from kforge optimize (exit {}); see {}", rc, (dir / (name + ".log")).string());
        return row;
    }
    double elapsed = summary.at("elapsed_s").get<double>();
    int64_t candidates = summary.at("candidates").at("this_session").get<int64_t>();
    row["candidates"] = candidates;
    row["elapsed_s"] = elapsed;
    row["candidates_per_minute"] = elapsed > 0 ? 60.0 * static_cast<double>(candidates) / elapsed : 0.0;
    row["stop"] = summary.at("stop").at("reason");
    Json busy = Json::array();
    for (const auto& gpu : summary.at("gpus"))
        busy.push_back(Json{{"gpu", gpu.at("label")}, {"busy", gpu.at("busy")}, {"candidates", gpu.at("candidates")},
                            {"evaluations", gpu.at("evaluations")}, {"lost", gpu.at("lost")}});
    row["per_gpu"] = busy;
    return row;
}

std::string busy_text(const Json& row)
{
    std::vector<std::string> parts;
    for (const auto& gpu : row.value("per_gpu", Json::array()))
        parts.push_back(fmt::format("{} {:.0f}%", gpu.at("gpu").get<std::string>(), 100 * gpu.at("busy").get<double>()));
    return parts.empty() ? "-" : join(parts, ", ");
}

} // namespace

Json run_scale(const BenchOptions& options, const ScaleSettings& settings)
{
    fs::path dir = settings.archive_dir;
    fs::create_directories(dir);
    std::vector<VisibleGpu> visible = list_visible_gpus(options.kforge);
    std::vector<int> counts;
    for (int n : settings.gpu_counts)
        if (n >= 1 && static_cast<size_t>(n) <= visible.size())
            counts.push_back(n);
    if (counts.empty())
        counts.push_back(1);
    std::vector<std::string> launches{"one process"};
    if (!settings.mpirun.empty())
        launches.push_back("mpirun");
    else
        log_warn("scale: no mpirun on the PATH; the MPI rows are left out");

    Json rows = Json::array();
    for (const std::string proposer : {"builtin", "replay"})
        for (const auto& launch : launches) {
            double one_gpu = 0;
            for (int n : counts) {
                Json row = run_one(options, settings, ScaleRun{proposer, launch, n}, dir);
                double cpm = row.value("candidates_per_minute", 0.0);
                if (n == 1)
                    one_gpu = cpm;
                row["speedup"] = one_gpu > 0 ? Json(cpm / one_gpu) : Json();
                rows.push_back(row);
            }
        }
    return Json{{"device", visible.front().facts.name},
                {"gpus_visible", visible.size()},
                {"task", settings.task},
                {"time", settings.time},
                {"replay", settings.replay},
                {"mpi", settings.mpirun.empty() ? "" : settings.mpirun},
                {"rows", rows}};
}

std::string scale_markdown(const Json& scale)
{
    std::string md = fmt::format(
        "{} on {} ({} GPU{} visible); builtin runs {} each, replay runs until the recorded replies are used.\n\n"
        "| proposer | launch | GPUs | candidates | wall | candidates / min | speedup | GPU busy |\n"
        "|---|---|---:|---:|---:|---:|---:|---|\n",
        scale.at("task").get<std::string>(), scale.at("device").get<std::string>(), scale.at("gpus_visible").get<int>(),
        scale.at("gpus_visible").get<int>() == 1 ? "" : "s", scale.at("time").get<std::string>());
    for (const auto& row : scale.at("rows")) {
        if (row.contains("error")) {
            md += fmt::format("| {} | {} | {} | - | - | - | - | {} |\n", row.at("proposer").get<std::string>(),
                              row.at("launch").get<std::string>(), row.at("gpus").get<int>(), row.at("error").get<std::string>());
            continue;
        }
        md += fmt::format("| {} | {} | {} | {} | {:.0f} s | **{:.1f}** | {} | {} |\n", row.at("proposer").get<std::string>(),
                          row.at("launch").get<std::string>(), row.at("gpus").get<int>(), row.at("candidates").get<int64_t>(),
                          row.at("elapsed_s").get<double>(), row.at("candidates_per_minute").get<double>(),
                          row.at("speedup").is_null() ? "-" : fmt::format("{:.2f}x", row.at("speedup").get<double>()),
                          busy_text(row));
    }
    return md;
}

ScaleSettings default_scale_settings()
{
    ScaleSettings settings;
    settings.mpirun = find_on_path("mpirun");
    settings.replay = (resource_dir() / "tests" / "fixtures" / "replay" / "softmax_f32.jsonl").string();
    return settings;
}

} // namespace kforge::bench
