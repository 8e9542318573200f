// `kforge_bench tasks`: the bundled task suite, optimised by the built-in offline proposer.
//
// For each task this runs the real command a user runs, `kforge optimize TASK --model builtin
// --time T`, into an archive of its own, then reads the archive back with `kforge inspect --json`.
// So the table measures kforge end to end, with nothing benchmark-only in the loop. Per bench
// shape it gives the reference and vendor-library times (timed in the same worker as the
// candidates, to the confirmation standard), PyTorch eager and torch.compile on the same shapes
// (torch.cpp; L2 flushed per sample, as kforge does), the best kernel's time, the speedups (over
// the reference, and over the strongest of vendor, eager and compiled torch), and the best
// kernel's share of the roofline: max(bytes / measured DRAM bandwidth, flops / compute peak) over
// its time, where the bandwidth is a device-to-device copy the worker measured in that run and the
// compute peak is the theoretical FP32 / tensor peak of the device.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <filesystem>

#include <fmt/format.h>

#include "bench/bench.hpp"
#include "evaluator/worker/roofline.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge::bench {

namespace {

// The fastest confirmed baseline time of `subject` at each bench shape.
std::map<std::string, double> baseline_times(const Json& report, const std::string& subject)
{
    std::map<std::string, double> times;
    for (const auto& b : report.at("baselines")) {
        if (b.at("shape_set") != "bench" || b.at("subject") != subject)
            continue;
        times[b.at("shape_label").get<std::string>()] = b.at("median_ns").get<double>();
    }
    return times;
}

std::vector<std::string> vendor_subjects(const Json& report)
{
    std::vector<std::string> names;
    for (const auto& b : report.at("baselines")) {
        std::string subject = b.at("subject");
        if (subject != "reference" && std::find(names.begin(), names.end(), subject) == names.end())
            names.push_back(subject);
    }
    return names;
}

const Shape* find_shape(const Task& task, const std::string& label)
{
    for (const auto& shape : task.bench)
        if (shape.label == label)
            return &shape;
    return nullptr;
}

Json optional_number(double value) { return value > 0 ? Json(value) : Json(); }

// One task: optimise, inspect, and turn the archive into rows.
Json bench_task(const BenchOptions& options, const std::string& name, const std::string& time_limit,
                const std::filesystem::path& archive_dir)
{
    Task task = load_bundled_task(options, name);
    auto archive = archive_dir / (name + ".kforge");
    std::filesystem::remove(archive);
    Json result = {{"task", name}, {"archive", archive.string()}, {"rows", Json::array()}};

    int rc = 0;
    auto started = std::chrono::steady_clock::now();
    std::string log = spawn_capture({options.kforge, "optimize", (std::filesystem::path(options.tasks_dir) / (name + ".json")).string(),
                                     "--model", "builtin", "--time", time_limit, "--seed", "1", "--no-knowledge",
                                     "--progress", "lines", "-o", archive.string()},
                                    rc, CaptureStream::both);
    result["optimize_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    write_file_atomic(archive_dir / (name + ".log"), log);
    if (rc != 0 && !std::filesystem::exists(archive)) {
        result["error"] = fmt::format("kforge optimize exited {}; see {}", rc, (archive_dir / (name + ".log")).string());
        return result;
    }
    result["optimize_exit"] = rc;
    log_info("bench tasks: PyTorch baselines of {}", name);
    result["torch"] = run_torch_baselines(options, task);
    const Json torch_shapes = result["torch"].value("shapes", Json::object());

    std::string text = spawn_capture({options.kforge, "inspect", archive.string(), "--json", "--top", "1"}, rc,
                                     CaptureStream::stdout_only);
    if (rc != 0) {
        result["error"] = fmt::format("kforge inspect exited {}: {}", rc, first_line_of(text));
        return result;
    }
    Json report = Json::parse(text);
    result["candidates"] = report.at("budget").at("candidates");
    result["verdicts"] = report.at("verdicts");
    if (report.at("top").empty()) {
        result["error"] = "no correct candidate in the archive";
        return result;
    }
    const Json& best = report.at("top").at(0);
    result["best_id"] = best.at("id");
    result["best_fitness"] = best.at("fitness");

    DevicePeaks peaks = DevicePeaks::from_json(report.at("run").at("device").value("peaks", Json::object()));
    result["device"] = report.at("run").at("device").value("name", "?");
    result["measured_dram_gb_per_s"] = peaks.measured_dram_bytes_per_s / 1e9;
    auto reference = baseline_times(report, "reference");
    auto vendors = vendor_subjects(report);
    std::map<std::string, std::map<std::string, double>> vendor_times;
    for (const auto& v : vendors)
        vendor_times[v] = baseline_times(report, v);

    for (const auto& [label, best_ns_json] : best.at("times_ns").items()) {
        double best_ns = best_ns_json.get<double>();
        Json row = {{"shape", label}, {"best_ns", best_ns}, {"reference_ns", optional_number(reference[label])}};
        // The fastest vendor routine at this shape is the bar to beat.
        double vendor_ns = 0;
        std::string vendor_name;
        for (const auto& v : vendors) {
            auto it = vendor_times[v].find(label);
            if (it != vendor_times[v].end() && (vendor_ns == 0 || it->second < vendor_ns)) {
                vendor_ns = it->second;
                vendor_name = v;
            }
        }
        row["vendor"] = vendor_name;
        row["vendor_ns"] = optional_number(vendor_ns);
        row["speedup_vs_reference"] = reference[label] > 0 ? Json(reference[label] / best_ns) : Json();
        row["speedup_vs_vendor"] = vendor_ns > 0 ? Json(vendor_ns / best_ns) : Json();
        // The bar a user already has: the fastest of the vendor library, torch eager, torch.compile.
        double rival_ns = vendor_ns;
        std::string rival = vendor_name;
        const Json torch_row = torch_shapes.value(label, Json::object());
        for (const char* mode : {"eager", "compile"}) {
            std::string why;
            double ns = torch_time_ns(torch_row.value(mode, Json::object()), why);
            row[fmt::format("torch_{}_ns", mode)] = optional_number(ns);
            if (!why.empty())
                row[fmt::format("torch_{}_why", mode)] = why;
            if (ns > 0 && (rival_ns == 0 || ns < rival_ns)) {
                rival_ns = ns;
                rival = fmt::format("torch {}", mode);
            }
        }
        row["strongest_rival"] = rival;
        row["speedup_vs_strongest"] = rival_ns > 0 ? Json(rival_ns / best_ns) : Json();
        if (const Shape* shape = find_shape(task, label); shape && peaks.measured_dram_bytes_per_s > 0) {
            RooflinePoint point = roofline_at(task, *shape, peaks);
            double memory_ns = point.bytes / peaks.measured_dram_bytes_per_s * 1e9;
            row["roofline_ns"] = point.measured_roofline_ns;
            row["bound"] = memory_ns >= point.measured_roofline_ns * 0.999 ? "memory" : "compute";
            row["percent_of_roofline"] = 100.0 * point.measured_roofline_ns / best_ns;
            if (vendor_ns > 0)
                row["vendor_percent_of_roofline"] = 100.0 * point.measured_roofline_ns / vendor_ns;
        }
        result["rows"].push_back(row);
    }
    return result;
}

std::string percent_or_dash(const Json& row, const char* key)
{
    return row.contains(key) && row.at(key).is_number() ? fmt::format("{:.0f}%", row.at(key).get<double>()) : "—";
}

std::string time_or_dash(const Json& value)
{
    return value.is_number() ? format_duration_ns(value.get<double>()) : "—";
}

std::string ratio_or_dash(const Json& value)
{
    return value.is_number() ? fmt::format("{:.2f}×", value.get<double>()) : "—";
}

// A torch column: the time, or why there is none (a compile that failed or ran out of time).
std::string torch_cell(const Json& row, const char* mode)
{
    Json ns = row.value(fmt::format("torch_{}_ns", mode), Json());
    if (ns.is_number())
        return time_or_dash(ns);
    std::string why = row.value(fmt::format("torch_{}_why", mode), std::string("—"));
    return why.size() > 60 ? why.substr(0, 57) + "..." : why;
}

} // namespace

Json run_tasks(const BenchOptions& options, const std::vector<std::string>& tasks, const std::string& time_limit,
               const std::string& archive_dir)
{
    std::filesystem::create_directories(archive_dir);
    Json result = {{"time_per_task", time_limit}, {"tasks", Json::array()}};
    for (const auto& name : tasks) {
        log_info("bench tasks: optimising {} for {}", name, time_limit);
        Json one = bench_task(options, name, time_limit, archive_dir);
        if (one.contains("error"))
            log_warn("bench tasks: {}: {}", name, one.at("error").get<std::string>());
        if (one.contains("device"))
            result["device"] = one.at("device");
        result["tasks"].push_back(std::move(one));
    }
    return result;
}

std::string tasks_markdown(const Json& tasks)
{
    std::string md = fmt::format(
        "`kforge optimize TASK --model builtin --time {}` per task (seed 1); all times are medians timed by kforge in "
        "the same worker. % roofline = roofline floor / time, the floor being max(bytes / measured DRAM bandwidth, "
        "flops / theoretical compute peak); the bandwidth is a device-to-device copy measured in the run, which a "
        "read-mostly kernel (reduce, axpy, histogram) can beat, hence figures above 100%. In brackets: the vendor "
        "library's own % of roofline.\n\n",
        tasks.value("time_per_task", "?"));
    md += "| task | shape | reference | vendor | torch eager | torch.compile | best found | vs reference | vs strongest "
          "(of vendor, torch) | % roofline (vendor) | bound | candidates |\n"
          "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|---:|\n";
    std::vector<std::string> torch_notes;
    for (const auto& t : tasks.at("tasks")) {
        std::string name = t.at("task");
        const Json torch = t.value("torch", Json::object());
        if (!torch.empty() && !torch.value("available", false))
            torch_notes.push_back(fmt::format("{}: {}", name, torch.value("reason", std::string("?"))));
        if (t.contains("error")) {
            md += fmt::format("| {} | — | — | — | — | — | — | — | — | — | — | failed: {} |\n", name,
                              t.at("error").get<std::string>());
            continue;
        }
        for (const auto& row : t.at("rows")) {
            std::string vendor = row.at("vendor").get<std::string>();
            std::string rival = row.value("strongest_rival", std::string());
            md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {}{} | {} ({}) | {} | {} |\n", name,
                              row.at("shape").get<std::string>(), time_or_dash(row.at("reference_ns")),
                              vendor.empty() ? "—" : fmt::format("{} {}", vendor, time_or_dash(row.at("vendor_ns"))),
                              torch_cell(row, "eager"), torch_cell(row, "compile"), time_or_dash(row.at("best_ns")),
                              ratio_or_dash(row.at("speedup_vs_reference")),
                              ratio_or_dash(row.value("speedup_vs_strongest", Json())),
                              rival.empty() ? "" : " (" + rival + ")", percent_or_dash(row, "percent_of_roofline"),
                              percent_or_dash(row, "vendor_percent_of_roofline"), row.value("bound", "?"),
                              t.at("candidates").get<int64_t>());
        }
    }
    if (!torch_notes.empty())
        md += "\nPyTorch columns skipped: " + join(torch_notes, "; ") + ".\n";
    return md;
}

} // namespace kforge::bench
