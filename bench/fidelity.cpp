// `kforge_bench fidelity`: are kforge's times the times Nsight Compute reports?
//
// For each task, the reference kernel is evaluated `repeats` times by the real evaluator to the
// confirmation standard (each a separate job: fresh load, fresh verification, fresh timing), and the
// same kernel is replayed under `ncu --metrics gpu__time_duration.sum --cache-control all
// --clock-control none` (caches flushed, clocks as they are: the conditions kforge measures in).
// Reported per bench shape: kforge's median of medians, the spread of the repeats (max/min - 1),
// Nsight Compute's median, and the difference.
#include <algorithm>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "bench/bench.hpp"
#include "evaluator/evaluator.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/subprocess.hpp"
#include "util/text.hpp"

namespace kforge::bench {
namespace {

double median(std::vector<double> values)
{
    if (values.empty())
        return 0;
    std::sort(values.begin(), values.end());
    size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Splits one CSV line (ncu quotes every field).
std::vector<std::string> csv_fields(const std::string& line)
{
    std::vector<std::string> fields;
    std::string field;
    bool quoted = false;
    for (char c : line) {
        if (c == '"')
            quoted = !quoted;
        else if (c == ',' && !quoted) {
            fields.push_back(field);
            field.clear();
        } else
            field += c;
    }
    fields.push_back(field);
    return fields;
}

double to_ns(double value, const std::string& unit)
{
    if (unit == "nsecond" || unit == "ns")
        return value;
    if (unit == "usecond" || unit == "us")
        return value * 1e3;
    if (unit == "msecond" || unit == "ms")
        return value * 1e6;
    if (unit == "second" || unit == "s")
        return value * 1e9;
    return value;
}

// Nsight Compute's durations of every launch, in launch order.
std::vector<double> ncu_durations(const std::string& output)
{
    std::vector<double> durations;
    std::istringstream lines(output);
    std::string line;
    int unit_col = -1, value_col = -1, metric_col = -1;
    while (std::getline(lines, line)) {
        if (line.empty() || line[0] != '"')
            continue;
        auto fields = csv_fields(line);
        if (unit_col < 0) {
            for (size_t i = 0; i < fields.size(); ++i) {
                if (fields[i] == "Metric Unit")
                    unit_col = static_cast<int>(i);
                if (fields[i] == "Metric Value")
                    value_col = static_cast<int>(i);
                if (fields[i] == "Metric Name")
                    metric_col = static_cast<int>(i);
            }
            continue;
        }
        if (value_col < 0 || static_cast<int>(fields.size()) <= value_col || fields[metric_col] != "gpu__time_duration.sum")
            continue;
        std::string value = replace_all(fields[value_col], ",", "");
        durations.push_back(to_ns(std::stod(value), fields[unit_col]));
    }
    return durations;
}

} // namespace

Json run_fidelity(const BenchOptions& options, const std::vector<std::string>& tasks, int repeats, const std::string& ncu)
{
    constexpr int k_replay_runs = 30;
    Json rows = Json::array();
    for (const auto& name : tasks) {
        Task task = load_bundled_task(options, name);
        EvaluatorConfig config;
        config.worker_executable = options.kforge;
        config.cache_dir = options.cache_dir;
        config.run_secret = 0x66696465;
        config.reuse_measurements = false; // the point is timing the same kernel again
        auto evaluator = make_gpu_evaluator(task, config);
        for (int i = 0; i < repeats; ++i) {
            EvalJob job;
            job.ticket = static_cast<uint64_t>(i);
            job.source = task.reference.source;
            job.options.confirm = true;
            job.options.task_code = true;
            evaluator->submit(job);
        }
        std::map<std::string, std::vector<double>> kforge_medians;
        int done = 0;
        while (done < repeats) {
            for (auto& result : evaluator->collect(std::chrono::seconds(5))) {
                ++done;
                if (!result.evaluation.verdict.is_correct())
                    fail_runtime("{}: the reference evaluated as {}: {}", name, verdict_name(result.evaluation.verdict.kind),
                                 result.evaluation.verdict.message);
                for (const auto& m : result.evaluation.measurements)
                    if (m.subject == "candidate")
                        kforge_medians[m.shape_label].push_back(m.median_ns);
            }
        }
        evaluator.reset();

        int exit_code = 0;
        std::vector<std::string> argv = {ncu, "--csv", "--metrics", "gpu__time_duration.sum", "--cache-control", "all",
                                         "--clock-control", "none"};
        std::string names;
        for (const auto& launch : task.reference.plan.launches)
            names += (names.empty() ? "" : "|") + launch.kernel;
        argv.insert(argv.end(), {"-k", "regex:^(" + names + ")$", self_executable()});
        argv.insert(argv.end(), {"replay", "--task", (std::filesystem::path(options.tasks_dir) / (name + ".json")).string(),
                                 "--runs", std::to_string(k_replay_runs)});
        std::string output = spawn_capture(argv, exit_code);
        std::vector<double> durations = ncu_durations(output);
        size_t per_run = task.reference.plan.launches.size();
        size_t expected = task.bench.size() * k_replay_runs * per_run;
        if (exit_code != 0 || durations.size() != expected)
            fail_runtime("{}: ncu exited {} with {} kernel durations (expected {}):\n{}", name, exit_code, durations.size(),
                         expected, truncate_text(output, 3000));
        for (size_t s = 0; s < task.bench.size(); ++s) {
            std::vector<double> plan_ns;
            for (size_t r = 0; r < static_cast<size_t>(k_replay_runs); ++r) {
                double sum = 0;
                for (size_t k = 0; k < per_run; ++k)
                    sum += durations[(s * k_replay_runs + r) * per_run + k];
                plan_ns.push_back(sum);
            }
            const auto& ours = kforge_medians[task.bench[s].label];
            double kforge_ns = median(ours);
            double ncu_ns = median(plan_ns);
            double spread = ours.empty() ? 0 : *std::max_element(ours.begin(), ours.end()) / *std::min_element(ours.begin(), ours.end()) - 1;
            rows.push_back(Json{{"task", name},
                                {"shape", task.bench[s].label},
                                {"kforge_median_ns", kforge_ns},
                                {"kforge_repeats", ours.size()},
                                {"kforge_spread", spread},
                                {"ncu_median_ns", ncu_ns},
                                {"ncu_runs", plan_ns.size()},
                                {"difference", ncu_ns > 0 ? kforge_ns / ncu_ns - 1 : 0}});
        }
    }
    return Json{{"rows", rows}, {"repeats", repeats}};
}

std::string fidelity_markdown(const Json& fidelity)
{
    std::string md = "| task | shape | kforge median | spread of repeats | ncu median | kforge vs ncu |\n|---|---|---:|---:|---:|---:|\n";
    for (const auto& row : fidelity.at("rows"))
        md += fmt::format("| {} | {} | {} | {:.2f}% ({} runs) | {} | {:+.2f}% |\n", row.at("task").get<std::string>(),
                          row.at("shape").get<std::string>(), format_duration_ns(row.at("kforge_median_ns").get<double>()),
                          100 * row.at("kforge_spread").get<double>(), row.at("kforge_repeats").get<int>(),
                          format_duration_ns(row.at("ncu_median_ns").get<double>()), 100 * row.at("difference").get<double>());
    return md;
}

} // namespace kforge::bench
