// The text view of `kforge inspect`: a summary block, the top candidates with their bench times
// beside the baselines, the failure breakdown, and the optional sections (--failures, --calls,
// --lineage). It reads only the report document, never the archive.
#include <fmt/format.h>

#include "core/task.hpp"
#include "report/inspect_report.hpp"
#include "util/text.hpp"
#include "util/text_table.hpp"

namespace kforge {

std::string format_fitness(const Json& fitness)
{
    return fitness.is_null() ? "-" : fmt::format("{:.2f}x", fitness.get<double>());
}

std::string format_params(const Json& params)
{
    std::vector<std::string> parts;
    for (const auto& [name, value] : params.items())
        parts.push_back(fmt::format("{}={}", name, value.dump()));
    return parts.empty() ? "-" : join(parts, ",");
}

std::string format_dollars(double dollars)
{
    return dollars < 10 ? fmt::format("${:.3f}", dollars) : fmt::format("${:.2f}", dollars);
}

namespace {

using Align = TextTable::Align;

std::string str(const Json& value)
{
    return value.get<std::string>();
}

std::string id_text(const Json& id)
{
    return id.is_null() ? "-" : fmt::format("#{}", id.get<int64_t>());
}

std::string device_text(const Json& device, const Json& run)
{
    std::vector<std::string> parts;
    parts.push_back(device.is_object() && device.contains("name")
                        ? device["name"].get<std::string>()
                        : std::string("unknown device"));
    if (device.is_object() && device.contains("driver_version"))
        parts.push_back("driver " + device["driver_version"].get<std::string>());
    parts.push_back("toolkit " + run["toolkit_version"].get<std::string>());
    parts.push_back("kforge " + run["kforge_version"].get<std::string>());
    parts.push_back(fmt::format("seed {}", run["seed"].dump()));
    return join(parts, ", ");
}

std::string usage_text(const Json& budget)
{
    const Json& llm = budget["llm"];
    std::string text =
        fmt::format("{} candidates, {} LLM calls", budget["candidates"].get<int64_t>(),
                    llm["calls"].get<int64_t>());
    if (llm["failed_calls"].get<int64_t>() > 0)
        text += fmt::format(" ({} failed)", llm["failed_calls"].get<int64_t>());
    text +=
        fmt::format(", {} input + {} output tokens, {} spent", llm["input_tokens"].get<int64_t>(),
                    llm["output_tokens"].get<int64_t>(), format_dollars(llm["cost_usd"].get<double>()));
    if (llm["calls_without_price"].get<int64_t>() > 0)
        text +=
            fmt::format(" (+{} calls of unknown price)", llm["calls_without_price"].get<int64_t>());
    return text;
}

std::string summary_block(const Json& report)
{
    const Json& run = report["run"];
    std::string out;
    auto line = [&](std::string_view key, const std::string& value) {
        out += fmt::format("{:<9} {}\n", key, value);
    };
    line("archive", report["archive"].get<std::string>());
    line("run", fmt::format("{}, {} (started {}, last write {})", run["run_id"].get<std::string>(),
                            run["state"].get<std::string>(),
                            format_local_time(run["started_at"].get<double>()),
                            format_local_time(run["updated_at"].get<double>())));
    line("task", fmt::format("{} (hash {})", run["task"].get<std::string>(),
                             run["task_hash"].get<std::string>()));
    line("device", device_text(run["device"], run));
    line("budget", usage_text(report["budget"]));
    const Json& best = report["best"];
    line("best", best.is_null() ? "no correct candidate yet"
                                : fmt::format("{}, fitness {} over the reference",
                                              id_text(best["id"]), format_fitness(best["fitness"])));
    std::vector<std::string> counts;
    for (int kind = static_cast<int>(VerdictKind::correct); kind >= 0; --kind) { // best rung first
        std::string name(verdict_name(static_cast<VerdictKind>(kind)));
        if (int64_t count = report["verdicts"].value(name, int64_t{0}); count > 0)
            counts.push_back(fmt::format("{} {}", name, count));
    }
    line("verdicts", counts.empty() ? "none yet" : join(counts, ", "));
    if (report.contains("gpu"))
        line("gpu work", gpu_work_text(report["gpu"]));
    return out;
}

std::string top_block(const Json& report)
{
    const Json& labels = report["bench_shapes"];
    std::vector<TextTable::Column> columns{
        {"id", Align::right}, {"fitness", Align::right}, {"verdict"}, {"island", Align::right},
        {"origin"},           {"parent", Align::right},  {"params"}};
    for (const auto& label : labels)
        columns.push_back({label.get<std::string>(), Align::right});
    TextTable table(columns);
    for (const auto& row : report["top"]) {
        std::vector<std::string> cells{
            id_text(row["id"]),        format_fitness(row["fitness"]),
            str(row["verdict"]),       std::to_string(row["island"].get<int>()),
            str(row["origin"]),        id_text(row["parent"]),
            format_params(row["params"])};
        for (const auto& label : labels) {
            const Json& times = row["times_ns"];
            auto key = label.get<std::string>();
            cells.push_back(times.contains(key) ? format_duration_ns(times[key].get<double>())
                                                : "-");
        }
        table.add_row(cells);
    }
    // One row per baseline subject (the reference, vendor libraries), under the candidates.
    std::map<std::string, std::map<std::string, double>> baseline_times;
    for (const auto& baseline : report["baselines"])
        if (baseline["shape_set"] == "bench")
            baseline_times[baseline["subject"].get<std::string>()]
                          [baseline["shape_label"].get<std::string>()] =
                              baseline["median_ns"].get<double>();
    for (const auto& [subject, times] : baseline_times) {
        std::vector<std::string> cells{baseline_label(report["run"].value("reference_kind", std::string("cuda")), subject),
                                       subject == "reference" ? "1.00x" : "", "", "", "baseline", "", ""};
        for (const auto& label : labels) {
            auto it = times.find(label.get<std::string>());
            cells.push_back(it == times.end() ? "-" : format_duration_ns(it->second));
        }
        table.add_row(cells);
    }
    std::string title =
        fmt::format("top candidates ({} of {} correct, median time per bench shape)\n",
                    report["top"].size(), report["verdicts"]["correct"].get<int64_t>());
    return title +
           (report["top"].empty() && baseline_times.empty() ? "  none yet\n" : table.render());
}

std::string failures_block(const Json& failures)
{
    std::string out = fmt::format("failures ({})\n", failures["total"].get<int64_t>());
    TextTable table({{"verdict"}, {"count", Align::right}, {"most common messages"}});
    for (const auto& group : failures["by_verdict"]) {
        bool first = true;
        for (const auto& common : group["common_messages"]) {
            table.add_row({first ? group["verdict"].get<std::string>() : "",
                           first ? std::to_string(group["count"].get<int64_t>()) : "",
                           fmt::format("{}x {} (e.g. #{})", common["count"].get<int64_t>(),
                                       common["message"].get<std::string>(),
                                       common["example"].get<int64_t>())});
            first = false;
        }
    }
    out += table.empty() ? "  none\n" : table.render();
    if (failures.contains("recent")) {
        out += "\nrecent failures (newest first)\n";
        TextTable recent(
            {{"id", Align::right}, {"verdict"}, {"island", Align::right}, {"origin"}, {"message"}});
        for (const auto& row : failures["recent"])
            recent.add_row({id_text(row["id"]), str(row["verdict"]),
                            std::to_string(row["island"].get<int>()), row["origin"],
                            str(row["message"])});
        out += recent.empty() ? "  none\n" : recent.render();
    }
    return out;
}

std::string calls_block(const Json& calls)
{
    std::string out = "LLM usage by model\n";
    TextTable models({{"provider"},
                      {"model"},
                      {"calls", Align::right},
                      {"failed", Align::right},
                      {"input tokens", Align::right},
                      {"output tokens", Align::right},
                      {"cost", Align::right}});
    for (const auto& usage : calls["by_model"])
        models.add_row({str(usage["provider"]), str(usage["model"]),
                        std::to_string(usage["calls"].get<int64_t>()),
                        std::to_string(usage["failed_calls"].get<int64_t>()),
                        std::to_string(usage["input_tokens"].get<int64_t>()),
                        std::to_string(usage["output_tokens"].get<int64_t>()),
                        format_dollars(usage["cost_usd"].get<double>()) +
                            (usage["calls_without_price"].get<int64_t>() > 0 ? " + unknown" : "")});
    out += models.empty() ? "  no calls\n" : models.render();
    out += "\nrecent LLM calls (newest first)\n";
    TextTable recent({{"id", Align::right},
                      {"started"},
                      {"purpose"},
                      {"model"},
                      {"status"},
                      {"in", Align::right},
                      {"out", Align::right},
                      {"cost", Align::right},
                      {"latency", Align::right},
                      {"error"}});
    for (const auto& call : calls["recent"])
        recent.add_row(
            {id_text(call["id"]), format_local_time(call["started_at"].get<double>()),
             str(call["purpose"]),
             call["provider"].get<std::string>() + ":" + call["model"].get<std::string>(),
             str(call["status"]), std::to_string(call["input_tokens"].get<int64_t>()),
             std::to_string(call["output_tokens"].get<int64_t>()),
             call["cost_known"].get<bool>() ? format_dollars(call["cost_usd"].get<double>()) : "?",
             fmt::format("{:.1f} s", call["latency_s"].get<double>()), str(call["error"])});
    out += recent.empty() ? "  no calls\n" : recent.render();
    return out;
}

std::string lineage_block(const Json& lineage)
{
    std::string out = fmt::format("lineage of {} (newest first)\n", id_text(lineage[0]["id"]));
    TextTable table({{"id", Align::right},
                     {"generation", Align::right},
                     {"island", Align::right},
                     {"origin"},
                     {"verdict"},
                     {"fitness", Align::right},
                     {"params"},
                     {"plan"},
                     {"note"}});
    for (const auto& row : lineage)
        table.add_row({id_text(row["id"]), std::to_string(row["generation"].get<int>()),
                       std::to_string(row["island"].get<int>()), str(row["origin"]),
                       str(row["verdict"]), format_fitness(row["fitness"]),
                       format_params(row["params"]), plan_summary_text(row.value("plan", Json())),
                       str(row["note"])});
    out += table.render();
    // Each plan's steps under the table, so the chain reads as what was planned and what it did.
    for (const auto& row : lineage) {
        const Json& plan = row.value("plan", Json());
        if (plan.is_null() || plan["status"] == "failed")
            continue;
        out += fmt::format("  plan of {}: {}\n", id_text(row["id"]), plan_summary_text(plan));
        for (size_t i = 0; i < plan["steps"].size(); ++i)
            out += fmt::format("    {}. {}\n", i + 1, plan["steps"][i].get<std::string>());
    }
    return out;
}

} // namespace

std::string render_inspect_text(const Json& report)
{
    // Sections are joined, never built as "\n" + block: GCC 12 at -O2/-O3 warns about the insert
    // at position 0 that `const char* + string&&` makes (-Wrestrict, a known false positive).
    std::vector<std::string> sections;
    if (report.contains("damaged")) {
        std::string block = "DAMAGED ARCHIVE: what follows is what could still be read\n";
        for (const auto& problem : report["damaged"])
            block += "  " + problem.get<std::string>() + "\n";
        sections.push_back(block);
    }
    sections.insert(sections.end(), {summary_block(report), top_block(report), failures_block(report["failures"])});
    if (std::string flagged = render_flagged_text(report.value("flagged", Json::array())); !flagged.empty())
        sections.push_back(flagged);
    sections.push_back(render_gpus_text(report["gpus"]));
    if (report.contains("grid"))
        sections.push_back(render_grid_text(report["grid"]));
    if (report.contains("techniques") && report["techniques"]["plans"].get<int64_t>() > 0)
        sections.push_back(render_techniques_text(report["techniques"]));
    if (report.contains("lineage"))
        sections.push_back(lineage_block(report["lineage"]));
    if (report.contains("calls"))
        sections.push_back(calls_block(report["calls"]));
    return join(sections, "\n");
}

} // namespace kforge
