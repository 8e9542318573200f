// `kforge_bench scale`: how the search's GPU work spreads over more GPUs.
//
// Two tables, each row the real command a user runs (`kforge optimize TASK --gpus N`, or under
// `mpirun --enable-recovery --bind-to none -n N` with one rank per GPU), read back from its --json
// summary, each in a folder of its own with a fresh CUBIN cache (XDG_CACHE_HOME), so that no row
// finds the compiles of another. (With --scale-shared-cache every row uses one cache, filled by an
// unrecorded warm-up run of each table first: for simulated GPUs on a machine of few cores, where
// NVRTC and not the GPUs would set the pace.) Each row logs at debug level into its optimize.log,
// so scripts/timeline.py can show what each GPU ran when.
//
// Fixed work. The same candidates on every row: recorded replies (--model replay:FILE, by default
// tests/fixtures/replay/softmax_f32_scale.jsonl from scripts/replay/scale.py): distinct,
// correct kernels with 6 to 8 param points each, no faults and no hangs, and nothing else asked of
// a model (no repairs, tunes, lessons or strategy rewrites), asked one at a time so that each
// island gets the same candidates on every row. The candidates are near-copies of four kernels, so
// they tie; which ones are confirmed (a confirmation costs ~25 screened variants) would be decided
// by timing noise if the search confirmed ties (it needs a 1% lead: loop/record.cpp). A row reports the search's wall time
// (the summary's elapsed_s: from the first item to the last record; the GPU workers' start and
// their baseline timings come before it) and the whole command's, each GPU's busy share, and the
// speedup of the search wall over the one-GPU row. A row whose recorded verdicts differ from the
// one-GPU row's did not do the same work, and says so.
//
// Builtin. The builtin proposer with a fixed budget of candidates, also with fresh caches. Its
// choices follow the measured times, so two rows need not evaluate the same kernels: a second
// table, for what a user without a model sees.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <unistd.h>

#include "bench/bench.hpp"
#include "evaluator/gpu/devices.hpp"
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
    std::string table;      // "fixed" or "builtin"
    std::string launch;     // "one process" or "mpirun"
    int gpus = 1;
    bool warmup = false;    // fills the shared CUBIN cache; not a row of the table
};

std::string row_name(const ScaleRun& run)
{
    if (run.warmup)
        return run.table + "-warmup";
    return fmt::format("{}-{}-{}gpu", run.table, run.launch == "mpirun" ? "mpi" : "local", run.gpus);
}

// `kforge optimize` for one row, in `folder` (emptied first): its arguments.
std::vector<std::string> row_command(const BenchOptions& options, const ScaleSettings& settings, const ScaleRun& run,
                                     const Task& task, const fs::path& folder)
{
    fs::path cache = settings.shared_cache.empty() ? folder / "cache" : fs::path(settings.shared_cache);
    std::vector<std::string> argv{"env", "XDG_CACHE_HOME=" + cache.string(), "XDG_DATA_HOME=" + (folder / "data").string()};
    if (run.warmup && std::getenv("KFORGE_SIMULATE_GPUS"))
        argv.push_back("KFORGE_SIMULATE_GPU_MS=0"); // only the compiles matter
    if (run.launch == "mpirun") {
        if (::getuid() == 0)
            argv.insert(argv.end(), {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"});
        argv.insert(argv.end(), {settings.mpirun, "--enable-recovery", "--bind-to", "none", "-n", std::to_string(run.gpus)});
    }
    // Debug lines in optimize.log: each GPU's timeline (scripts/timeline.py shows what ran when).
    argv.insert(argv.end(), {options.kforge, "--log-level", "debug", "optimize",
                             (fs::path(options.tasks_dir) / (settings.task + ".json")).string(),
                             "--gpus", std::to_string(run.gpus), "--seed", "1", "--no-knowledge", "--progress", "lines",
                             "--json", "-o", (folder / "run.kforge").string()});
    if (run.table == "builtin") {
        argv.insert(argv.end(), {"--model", "builtin", "--budget", std::to_string(settings.budget)});
    } else {
        size_t budget = 1 + task.seeds.size() + static_cast<size_t>(settings.candidates);
        // One model call at a time: replies are served in the order asked, so every row gives each
        // island the same candidates (with calls in parallel, which call got which reply varied,
        // and with it which candidates became elites and were confirmed). Recorded replies come at
        // once, so this costs nothing; the window stays what --parallel 4 gives.
        int window = std::max(10, 4 * run.gpus + 2);
        argv.insert(argv.end(), {"--model", "replay:" + settings.replay, "--budget", std::to_string(budget), "--no-tune",
                                 "--no-repair", "--max-lessons", "0", "--meta-every", "1000000", "--parallel", "1",
                                 "--window", std::to_string(window)});
    }
    argv.insert(argv.end(), settings.optimize_args.begin(), settings.optimize_args.end());
    return argv;
}

// One optimize run; its row of the table.
Json run_one(const BenchOptions& options, const ScaleSettings& settings, const ScaleRun& run, const fs::path& dir)
{
    fs::path folder = dir / row_name(run);
    fs::remove_all(folder);
    fs::create_directories(folder);
    Task task = load_bundled_task(options, settings.task);
    if (run.warmup)
        log_info("scale: warming the shared CUBIN cache with the {} work", run.table);
    else
        log_info("scale: {} work on {} GPU{} ({})", run.table, run.gpus, run.gpus == 1 ? "" : "s", run.launch);
    int rc = 0;
    auto started = std::chrono::steady_clock::now();
    std::string text = spawn_capture(row_command(options, settings, run, task, folder), rc, CaptureStream::stdout_only,
                                     (folder / "optimize.log").string());
    double whole_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    Json row{{"table", run.table}, {"launch", run.launch}, {"gpus", run.gpus}, {"folder", folder.string()},
             {"exit", rc}, {"whole_s", whole_s}};
    Json summary;
    try {
        summary = Json::parse(text.substr(std::min(text.find('{'), text.size())));
    } catch (const std::exception&) {
        row["error"] = fmt::format("no summary from kforge optimize (exit {}); see {}", rc, (folder / "optimize.log").string());
        return row;
    }
    double elapsed = summary.at("elapsed_s").get<double>();
    int64_t candidates = summary.at("candidates").at("this_session").get<int64_t>();
    row["candidates"] = candidates;
    row["verdicts"] = summary.at("candidates").at("verdicts");
    row["search_s"] = elapsed;
    row["candidates_per_minute"] = elapsed > 0 ? 60.0 * static_cast<double>(candidates) / elapsed : 0.0;
    row["stop"] = summary.at("stop").at("reason");
    Json busy = Json::array();
    int64_t evaluations = 0;
    for (const auto& gpu : summary.at("gpus")) {
        busy.push_back(Json{{"gpu", gpu.at("label")}, {"busy", gpu.at("busy")}, {"busy_s", gpu.value("busy_s", 0.0)},
                            {"candidates", gpu.at("candidates")}, {"evaluations", gpu.at("evaluations")},
                            {"lost", gpu.at("lost")}});
        evaluations += gpu.at("evaluations").get<int64_t>();
    }
    row["per_gpu"] = busy;
    row["evaluations"] = evaluations;
    return row;
}

std::string busy_text(const Json& row)
{
    std::vector<std::string> parts;
    for (const auto& gpu : row.value("per_gpu", Json::array()))
        parts.push_back(fmt::format("{} {:.0f}%", gpu.at("gpu").get<std::string>(), 100 * gpu.at("busy").get<double>()));
    return parts.empty() ? "-" : join(parts, ", ");
}

// The lowest busy share of the row's GPUs.
double least_busy(const Json& row)
{
    double least = 1;
    for (const auto& gpu : row.value("per_gpu", Json::array()))
        least = std::min(least, gpu.at("busy").get<double>());
    return least;
}

// About how long `run` takes, from the rows already measured: the one-GPU row of its table, its
// start (the whole run less the search) as it was and its search over the GPU count; the builtin
// one-GPU row from the fixed one, per candidate. 0 when nothing is known yet (the first row runs).
double expected_row_s(const ScaleRun& run, const Json& one_gpu, const Json& fixed_one_gpu, const ScaleSettings& settings)
{
    if (run.gpus > 1 && one_gpu.contains("search_s")) {
        double whole = one_gpu.at("whole_s").get<double>(), search = one_gpu.at("search_s").get<double>();
        return whole - search + search / run.gpus;
    }
    if (run.gpus == 1 && run.table == "builtin" && fixed_one_gpu.contains("whole_s") && fixed_one_gpu.contains("candidates")) {
        double per = fixed_one_gpu.at("whole_s").get<double>() /
                     static_cast<double>(std::max<int64_t>(1, fixed_one_gpu.at("candidates").get<int64_t>()));
        return per * settings.budget;
    }
    return 0;
}

} // namespace

Json run_scale(const BenchOptions& options, const ScaleSettings& settings)
{
    fs::path dir = settings.archive_dir;
    fs::create_directories(dir);
    size_t replies = count_lines(settings.replay);
    if (settings.candidates < 1 || static_cast<size_t>(settings.candidates) > replies)
        fail(ErrorKind::usage, "--scale-candidates {}: {} holds {} recorded replies", settings.candidates,
             settings.replay, replies);
    std::vector<VisibleGpu> visible = list_visible_gpus(options.kforge);
    std::vector<int> counts;
    for (int n : settings.gpu_counts)
        if (n >= 1 && static_cast<size_t>(n) <= visible.size())
            counts.push_back(n);
    if (std::find(counts.begin(), counts.end(), 1) == counts.end())
        counts.push_back(1); // the row every speedup is measured against
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    std::vector<std::string> launches{"one process"};
    if (!settings.mpirun.empty())
        launches.push_back("mpirun");
    else
        log_warn("scale: no mpirun on the PATH; the MPI rows are left out");

    Json simulated = Json::object();
    for (const char* name : {"KFORGE_SIMULATE_GPUS", "KFORGE_SIMULATE_GPU_MS", "KFORGE_SIMULATE_GPU_COSTS",
                             "KFORGE_SIMULATE_GPU_NOISE", "KFORGE_SIMULATE_GPU_LANDSCAPE"})
        if (const char* value = std::getenv(name); value && *value)
            simulated[name] = value;
    Json result{{"device", visible.front().facts.name},
                {"simulated", simulated},
                {"shared_cache", !settings.shared_cache.empty()},
                {"gpus_visible", visible.size()},
                {"task", settings.task},
                {"candidates", settings.candidates},
                {"budget", settings.budget},
                {"replay", settings.replay},
                {"mpi", settings.mpirun.empty() ? "" : settings.mpirun},
                {"deadline_s", settings.deadline_s},
                {"optimize_args", settings.optimize_args},
                {"rows", Json::array()}};
    auto started = std::chrono::steady_clock::now();
    Json fixed_one_gpu = Json::object();
    for (const std::string table : {"fixed", "builtin"}) {
        Json one_gpu = Json::object(); // the table's one-GPU row, once measured
        if (!settings.shared_cache.empty()) {
            Json warmup = run_one(options, settings, ScaleRun{table, "one process", 1, true}, dir);
            if (warmup.contains("error"))
                log_warn("scale: the {} warm-up failed: {}", table, warmup.at("error").get<std::string>());
        }
        for (const auto& launch : launches)
            for (int n : counts) {
                if (launch == "mpirun" && n == 1)
                    continue; // one rank is a plain run: the one-process row
                ScaleRun run{table, launch, n};
                double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
                std::string skip = n == 1 ? "" : (one_gpu.value("search_s", 0.0) > 0 ? "" : "no one-GPU row to compare with");
                double expected = expected_row_s(run, one_gpu, fixed_one_gpu, settings);
                if (skip.empty() && settings.deadline_s > 0 && spent + expected > settings.deadline_s)
                    skip = fmt::format("time budget: {:.0f} s spent, about {:.0f} s more expected, --scale-deadline {:.0f} s",
                                       spent, expected, settings.deadline_s);
                if (!skip.empty()) {
                    log_warn("scale: {} left out ({})", row_name(run), skip);
                    result["rows"].push_back(Json{{"table", table}, {"launch", launch}, {"gpus", n}, {"skipped", skip}});
                    write_file_atomic(dir / "scale.json", result.dump(2));
                    continue;
                }
                Json row = run_one(options, settings, run, dir);
                if (n == 1) {
                    one_gpu = row;
                    if (table == "fixed")
                        fixed_one_gpu = row;
                }
                double base = one_gpu.value("search_s", 0.0);
                double search = row.value("search_s", 0.0);
                row["speedup"] = base > 0 && search > 0 ? Json(base / search) : Json();
                row["least_busy"] = least_busy(row);
                if (table == "fixed" && one_gpu.contains("verdicts") && row.value("verdicts", Json()) != one_gpu.value("verdicts", Json()))
                    row["note"] = "recorded verdicts differ from the one-GPU row: not the same work";
                result["rows"].push_back(row);
                write_file_atomic(dir / "scale.json", result.dump(2));
            }
    }
    write_file_atomic(dir / "scale.json", result.dump(2));
    return result;
}

std::string scale_markdown(const Json& scale)
{
    auto table = [&](const std::string& which) {
        std::string md = "| launch | GPUs | candidates | GPU evaluations | search wall | whole run | speedup | GPU busy |\n"
                         "|---|---:|---:|---:|---:|---:|---:|---|\n";
        for (const auto& row : scale.at("rows")) {
            if (row.at("table").get<std::string>() != which)
                continue;
            if (row.contains("skipped")) {
                md += fmt::format("| {} | {} | - | - | - | - | - | left out: {} |\n", row.at("launch").get<std::string>(),
                                  row.at("gpus").get<int>(), row.at("skipped").get<std::string>());
                continue;
            }
            if (row.contains("error")) {
                md += fmt::format("| {} | {} | - | - | - | - | - | {} |\n", row.at("launch").get<std::string>(),
                                  row.at("gpus").get<int>(), row.at("error").get<std::string>());
                continue;
            }
            md += fmt::format("| {} | {} | {} | {} | {:.1f} s | {:.1f} s | **{}** | {}{} |\n",
                              row.at("launch").get<std::string>(), row.at("gpus").get<int>(),
                              row.at("candidates").get<int64_t>(), row.at("evaluations").get<int64_t>(),
                              row.at("search_s").get<double>(), row.at("whole_s").get<double>(),
                              row.at("speedup").is_null() ? "-" : fmt::format("{:.2f}x", row.at("speedup").get<double>()),
                              busy_text(row), row.contains("note") ? " (" + row.at("note").get<std::string>() + ")" : "");
        }
        return md;
    };
    std::string device = scale.at("device").get<std::string>();
    int visible = scale.at("gpus_visible").get<int>();
    std::string simulated;
    Json settings = scale.value("simulated", Json::object()); // held here: items() of a temporary dangles
    for (const auto& [name, value] : settings.items())
        simulated += fmt::format("{}`{}={}`", simulated.empty() ? "" : ", ", name, value.get<std::string>());
    if (!simulated.empty())
        simulated = "SIMULATED GPUs, not measured on hardware: " + simulated + ".\n\n";
    std::string cache = scale.value("shared_cache", false) ? "one CUBIN cache for every row, filled by a warm-up run of each table first"
                                                            : "a fresh CUBIN cache per row";
    return fmt::format("{}{} on {} ({} GPU{} visible), {}. Speedup: the search wall of the "
                       "one-GPU row over this row's (the search wall runs from the first candidate to the last "
                       "record; the whole run adds the GPU workers' start and baseline timing).\n\n"
                       "Fixed work: the same {} recorded candidates on every row (distinct, correct, 6 to 8 param "
                       "points each; {}).\n\n{}\n"
                       "Builtin proposer, a budget of {} candidates (its choices follow the measured times, so rows "
                       "need not evaluate the same kernels).\n\n{}",
                       simulated, scale.at("task").get<std::string>(), device, visible, visible == 1 ? "" : "s", cache,
                       scale.at("candidates").get<int>(), fs::path(scale.at("replay").get<std::string>()).filename().string(),
                       table("fixed"), scale.at("budget").get<int>(), table("builtin"));
}

ScaleSettings default_scale_settings()
{
    ScaleSettings settings;
    settings.mpirun = find_on_path("mpirun");
    settings.replay = (resource_dir() / "tests" / "fixtures" / "replay" / "softmax_f32_scale.jsonl").string();
    return settings;
}

} // namespace kforge::bench
