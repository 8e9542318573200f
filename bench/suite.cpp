// `kforge_bench suite`: problems per hour of `kforge suite run` against the number of GPUs, how
// runs share each GPU, and how long the model takes to answer.
//
// For each GPU count the machine has (1, 2, 4, 8 by default) and each mode (how runs share a GPU:
// "old", five runs starting up side by side but one searching at a time, the behaviour before
// searches shared a GPU; "auto", suite run's default; or N runs all searching), this runs the real
// command a user runs — `kforge suite run PROBLEMS -o DIR --gpus N ... --json` — into a fresh suite
// folder, and reads back its --json output. The problems are the bundled tasks with the builtin
// proposer, or given files with recorded replies (`--replies`), served after a model-like latency
// (`--latency 30s`: `replay:DIR/?latency=30s`), each problem `--copies` times under its own name so
// that a suite can be long enough to reach its steady state. Per row: the problems done, the wall
// time measured from outside (imports, start-ups and the tail where fewer problems than GPUs remain
// all count), problems per hour, the speedup over the first row, each GPU's busy share (the union
// of its runs' measuring) and held share while problems remained, the GPU-seconds measured per
// problem (every hold of the measuring lock: set-up, baselines, candidates), the most runs a GPU
// held, and the fast_p table. Rows are compared problem by problem: the same verdicts, and the
// spread of the speedups between rows (it should be noise). On simulated GPUs
// (KFORGE_SIMULATE_GPUS, with KFORGE_SIMULATE_GPU_SETUP_MS for a start-up) it shows what sharing a
// GPU does to its busy share without one.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "bench/bench.hpp"
#include "evaluator/gpu/devices.hpp"
#include "evaluator/worker/share.hpp"
#include "suite/gpu_use.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge::bench {
namespace {

namespace fs = std::filesystem;

struct SuiteInputs {
    std::vector<std::string> problems; // the PATH arguments
    std::string model;                 // the --model value
};

// The bundled tasks with the builtin proposer, or the given problems, each `copies` times, with one
// folder of replies gathered from every --replies folder (a copy answers with its original's).
SuiteInputs prepare_inputs(const BenchOptions& options, const SuiteBenchSettings& settings)
{
    SuiteInputs in;
    if (settings.problems.empty()) {
        for (const auto& task : settings.tasks)
            in.problems.push_back((fs::path(options.tasks_dir) / (task + ".json")).string());
        in.model = "builtin";
        return in;
    }
    fs::path work = fs::path(settings.archive_dir) / "inputs";
    fs::remove_all(work);
    fs::create_directories(work / "problems");
    fs::create_directories(work / "replies");
    std::vector<fs::path> files;
    for (const auto& given : settings.problems) {
        if (fs::is_directory(given)) {
            std::vector<fs::path> inside;
            for (const auto& entry : fs::directory_iterator(given))
                if (entry.is_regular_file() && entry.path().extension() == ".py")
                    inside.push_back(entry.path());
            std::sort(inside.begin(), inside.end());
            files.insert(files.end(), inside.begin(), inside.end());
        } else {
            files.emplace_back(given);
        }
    }
    for (const auto& file : files) {
        std::string stem = file.stem().string();
        fs::path replies;
        for (const auto& dir : settings.replies)
            if (fs::is_regular_file(fs::path(dir) / (stem + ".jsonl")))
                replies = fs::path(dir) / (stem + ".jsonl");
        if (replies.empty()) {
            log_warn("suite bench: {} has no replies in the --replies folders; left out", file.string());
            continue;
        }
        for (int copy = 1; copy <= std::max(1, settings.copies); ++copy) {
            std::string name = copy == 1 ? stem : fmt::format("{}_c{}", stem, copy);
            fs::copy_file(file, work / "problems" / (name + file.extension().string()));
            fs::copy_file(replies, work / "replies" / (name + ".jsonl"));
        }
    }
    for (const auto& entry : fs::directory_iterator(work / "problems"))
        in.problems.push_back(entry.path().string());
    std::sort(in.problems.begin(), in.problems.end());
    if (in.problems.empty())
        fail(ErrorKind::usage, "suite bench: none of the --problems has replies in the --replies folders");
    in.model = "replay:" + fs::absolute(work / "replies").string() + "/" +
               (settings.latency.empty() ? "" : "?latency=" + settings.latency);
    return in;
}

// The holds of the measuring locks of the suite's GPUs: seconds measured in all, and the GPUs' busy
// share over [from, to] (the union of each GPU's holds, averaged over the GPUs).
struct Measured {
    double total_s = 0;
    double busy_share = 0;
};
Measured measured(const fs::path& suite, double from, double to)
{
    Measured m;
    int gpus = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(suite / "gpus", ec)) {
        if (entry.path().extension() != ".measuring")
            continue;
        std::vector<std::pair<double, double>> holds;
        for (const auto& line : split(read_file(entry.path()), '\n'))
            if (auto hold = parse_measuring_hold(line)) {
                m.total_s += std::max(0.0, hold->end_s - hold->begin_s);
                holds.emplace_back(hold->begin_s, hold->end_s);
            }
        ++gpus;
        if (to > from)
            m.busy_share += covered_seconds(holds, from, to) / (to - from);
    }
    m.busy_share /= std::max(1, gpus);
    return m;
}

std::vector<std::string> mode_flags(const std::string& mode)
{
    if (mode == "old")
        return {"--per-gpu", "5", "--searches-per-gpu", "1"};
    if (mode == "auto")
        return {"--per-gpu", "auto"};
    return {"--per-gpu", mode};
}

// One `suite run` on `gpus` GPUs; its row of the table.
Json run_suite_once(const BenchOptions& options, const SuiteBenchSettings& settings, const SuiteInputs& inputs,
                    int gpus, const std::string& mode)
{
    std::string name = fmt::format("suite-{}gpu-{}", gpus, mode);
    fs::path root = fs::path(settings.archive_dir) / name;
    fs::remove_all(root);
    fs::create_directories(root.parent_path());
    std::vector<std::string> problems = inputs.problems;
    if (mode == "old" && settings.old_problems > 0 && static_cast<size_t>(settings.old_problems) < problems.size())
        problems.resize(static_cast<size_t>(settings.old_problems));
    std::string time = settings.time.empty() && inputs.model == "builtin" ? "30s" : settings.time;
    std::vector<std::string> argv{options.kforge, "suite", "run"};
    argv.insert(argv.end(), problems.begin(), problems.end());
    argv.insert(argv.end(), {"-o", root.string(), "--model", inputs.model, "--gpus", std::to_string(gpus),
                             "--no-knowledge", "--progress", "lines", "--json"});
    if (!time.empty())
        argv.insert(argv.end(), {"--time", time});
    for (const auto& flag : mode_flags(mode))
        argv.push_back(flag);
    log_info("suite: {} problems on {} GPU{}, {}", problems.size(), gpus, gpus == 1 ? "" : "s", join(mode_flags(mode), " "));
    int rc = 0;
    auto started = std::chrono::steady_clock::now();
    fs::path log = root.parent_path() / (name + ".log");
    std::string text = spawn_capture(argv, rc, CaptureStream::stdout_only, log.string());
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    Json row{{"gpus", gpus}, {"mode", mode}, {"suite", root.string()}, {"exit", rc}, {"wall_s", wall}};
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
    const Json& record = out.at("run");
    Measured holds = measured(root, record.value("started_at", 0.0), record.value("ended_at", 0.0));
    row["measured_s_per_problem"] = finished > 0 ? holds.total_s / static_cast<double>(finished) : 0.0;
    row["busy_whole_run"] = holds.busy_share;
    row["against"] = summary.at("against");
    row["runs_per_gpu"] = record.value("runs_per_gpu", Json());
    row["auto"] = record.value("auto", Json());
    Json per_gpu = Json::array();
    for (const auto& gpu : record.at("gpus"))
        per_gpu.push_back(Json{{"gpu", gpu.at("label")}, {"busy", gpu.at("busy")}, {"held", gpu.at("held")},
                               {"window_s", gpu.at("window_s")}, {"problems", gpu.at("problems")}});
    row["per_gpu"] = per_gpu;
    Json verdicts = Json::object();
    for (const auto& p : out.at("report").at("problems"))
        verdicts[p.at("id").get<std::string>()] =
            Json{{"verdict", p.at("verdict")}, {"eager", p.at("speedup").at("torch_eager")},
                 {"compile", p.at("speedup").at("torch_compile")}, {"reference", p.at("speedup").at("reference")}};
    row["problem_results"] = verdicts;
    return row;
}

std::string share_text(const Json& row, const char* key)
{
    std::vector<std::string> parts;
    for (const auto& gpu : row.value("per_gpu", Json::array()))
        parts.push_back(fmt::format("{} {:.0f}%", gpu.at("gpu").get<std::string>(), 100 * gpu.at(key).get<double>()));
    return parts.empty() ? "-" : join(parts, ", ");
}

// Problem by problem against the first row: verdicts that differ, and the largest ratio between
// the rows' speedups over each baseline (1.00 = the same).
Json compare_rows(const Json& first, const Json& row)
{
    int64_t same = 0, differ = 0;
    double worst = 1.0;
    std::vector<std::string> differing;
    Json a = first.value("problem_results", Json::object());
    Json b = row.value("problem_results", Json::object()); // items() of a temporary would dangle
    for (const auto& [id, result] : b.items()) {
        if (!a.contains(id))
            continue;
        const Json& other = a.at(id);
        if (other.at("verdict") != result.at("verdict")) {
            ++differ;
            differing.push_back(id);
            continue;
        }
        ++same;
        for (const char* key : {"eager", "compile", "reference"})
            if (result.at(key).is_number() && other.at(key).is_number() && other.at(key).get<double>() > 0) {
                double ratio = result.at(key).get<double>() / other.at(key).get<double>();
                worst = std::max(worst, ratio >= 1 ? ratio : 1 / ratio);
            }
    }
    return Json{{"same_verdicts", same}, {"different_verdicts", differ}, {"differing", differing},
                {"largest_speedup_ratio", worst}};
}

std::string fast_text(const Json& against, const char* baseline)
{
    if (!against.contains(baseline) || against.at(baseline).value("problems", int64_t{0}) == 0)
        return "-";
    const Json& b = against.at(baseline);
    const Json& fast = b.at("fast");
    auto share = [&](const char* level) {
        return fast.contains(level) ? fmt::format("{:.0f}%", 100 * fast.at(level).get<double>()) : std::string("-");
    };
    return fmt::format("{} / {} / {} (geomean {})", share("fast_0"), share("fast_1"), share("fast_1.5"),
                       b.at("geomean_speedup").is_number()
                           ? fmt::format("{:.2f}x", b.at("geomean_speedup").get<double>())
                           : std::string("-"));
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
    SuiteInputs inputs = prepare_inputs(options, settings);
    Json rows = Json::array();
    double first = 0;
    for (int n : counts)
        for (const auto& mode : settings.modes) {
            Json row = run_suite_once(options, settings, inputs, n, mode);
            double rate = row.value("problems_per_hour", 0.0);
            if (rows.empty())
                first = rate;
            row["speedup"] = first > 0 ? Json(rate / first) : Json();
            if (!rows.empty() && !row.contains("error") && !rows.front().contains("error"))
                row["against_first_row"] = compare_rows(rows.front(), row);
            rows.push_back(row);
        }
    return Json{{"device", visible.front().facts.name},
                {"gpus_visible", visible.size()},
                {"problems", inputs.problems.size()},
                {"model", inputs.model},
                {"latency", settings.latency},
                {"copies", settings.copies},
                {"old_problems", settings.old_problems},
                {"time", settings.time},
                {"rows", rows}};
}

std::string suite_markdown(const Json& suite)
{
    std::string latency = suite.value("latency", std::string());
    std::string md = fmt::format(
        "`kforge suite run` of {} problems (`--model {}`{}), on {} ({} GPU{} visible). Modes: old = `--per-gpu 5 "
        "--searches-per-gpu 1` (runs start up side by side, one searches at a time: the behaviour before), auto = "
        "the default (every run searches; runs per GPU from the model's latency and the GPU time per candidate), N = "
        "`--per-gpu N`. Wall time from outside the command; per GPU its shares while problems remained: busy (the "
        "union of its runs' measuring) and held (some run had it). Measured: every hold of the measuring lock "
        "(set-up, baselines, candidates) per finished problem. Speedup: problems per hour over the first row.\n\n"
        "| GPUs | mode | runs/GPU | finished | correct | wall | problems / hour | speedup | GPU busy | GPU held | "
        "busy, whole run | GPU-s measured / problem |\n"
        "|---:|---|---:|---:|---:|---:|---:|---:|---|---|---:|---:|\n",
        suite.at("problems").get<size_t>(), suite.value("model", std::string("builtin")),
        latency.empty() ? "" : ", replies served after " + latency, suite.at("device").get<std::string>(),
        suite.at("gpus_visible").get<int>(), suite.at("gpus_visible").get<int>() == 1 ? "" : "s");
    for (const auto& row : suite.at("rows")) {
        if (row.contains("error")) {
            md += fmt::format("| {} | {} | - | - | - | - | - | - | {} | | | |\n", row.at("gpus").get<int>(),
                              row.value("mode", std::string()), row.at("error").get<std::string>());
            continue;
        }
        md += fmt::format("| {} | {} | {} | {}/{} | {} | {:.0f} s | **{:.1f}** | {} | {} | {} | {:.0f}% | {:.1f} |\n",
                          row.at("gpus").get<int>(), row.value("mode", std::string()),
                          row.value("runs_per_gpu", Json()).is_number() ? row.at("runs_per_gpu").dump() : "-",
                          row.at("finished").get<int64_t>(), row.at("problems").get<int64_t>(),
                          row.at("correct").get<int64_t>(), row.at("wall_s").get<double>(),
                          row.at("problems_per_hour").get<double>(),
                          row.at("speedup").is_null() ? "-" : fmt::format("{:.2f}x", row.at("speedup").get<double>()),
                          share_text(row, "busy"), share_text(row, "held"), 100 * row.value("busy_whole_run", 0.0),
                          row.value("measured_s_per_problem", 0.0));
    }
    md += "\nfast_0 / fast_1 / fast_1.5 of each row (and the geometric-mean speedup), against each baseline; and "
          "problem by problem against the first row: verdicts that differ, and the largest ratio between the two "
          "rows' speedups of one problem.\n\n"
          "| GPUs | mode | vs torch eager | vs torch.compile | vs reference | same verdicts | speedups differ by "
          "at most |\n|---:|---|---|---|---|---|---:|\n";
    for (const auto& row : suite.at("rows")) {
        if (row.contains("error"))
            continue;
        const Json& against = row.at("against");
        std::string same = "-", spread = "-";
        if (row.contains("against_first_row")) {
            const Json& c = row.at("against_first_row");
            same = fmt::format("{} of {}", c.at("same_verdicts").get<int64_t>(),
                               c.at("same_verdicts").get<int64_t>() + c.at("different_verdicts").get<int64_t>());
            if (c.at("different_verdicts").get<int64_t>() > 0)
                same += " (" + join(c.at("differing").get<std::vector<std::string>>(), ", ") + ")";
            spread = fmt::format("{:.1f}%", 100 * (c.at("largest_speedup_ratio").get<double>() - 1));
        }
        md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", row.at("gpus").get<int>(),
                          row.value("mode", std::string()), fast_text(against, "torch_eager"),
                          fast_text(against, "torch_compile"), fast_text(against, "reference"), same, spread);
    }
    return md;
}

} // namespace kforge::bench
