// `kforge inspect ARCHIVE` (the command is src/cli/cmd_inspect.cpp): what a run did, read-only,
// while it runs or after.
//
// Everything comes from the archive's summary queries (no sources, prompts or replies are loaded
// except where a section asks for them), gathered into one JSON document. --json prints that
// document; otherwise inspect_text.cpp renders it as text.
#include "report/inspect_report.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "core/task.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/text_table.hpp"

namespace kforge {
namespace {

constexpr size_t k_message_chars = 100; // a failure message, shortened to its first line
constexpr size_t k_common_messages = 3; // most common messages shown per verdict
constexpr size_t k_damage_listed = 20;  // malformed JSON values named, at most

Json run_section(const RunInfo& run)
{
    return {{"run_id", run.run_id},
            {"task", run.task_name},
            {"task_hash", run.task_hash},
            {"reference_kind", reference_kind_name(spec_reference_kind(run.task_spec))},
            {"state", run.state},
            {"started_at", run.started_at},
            {"updated_at", run.updated_at},
            {"kforge_version", run.kforge_version},
            {"toolkit_version", run.toolkit_version},
            {"seed", run.seed},
            {"device", run.device},
            {"config", run.config}};
}

Json usage_json(const LlmUsage& usage)
{
    Json json = {{"calls", usage.calls},
                 {"failed_calls", usage.failed_calls},
                 {"input_tokens", usage.input_tokens},
                 {"cached_input_tokens", usage.cached_input_tokens},
                 {"output_tokens", usage.output_tokens},
                 {"cost_usd", usage.cost_usd},
                 {"calls_without_price", usage.calls_without_price},
                 {"latency_s", usage.latency_s}};
    if (!usage.model.empty()) {
        json["provider"] = usage.provider;
        json["model"] = usage.model;
    }
    return json;
}

Json optional_id(const std::optional<int64_t>& id)
{
    return id ? Json(*id) : Json();
}

// Bench medians of the candidate itself, by shape label; a confirmed timing beats a quick screen.
Json bench_times(const std::vector<Measurement>& measurements, std::vector<std::string>& labels)
{
    Json times = Json::object();
    std::map<std::string, bool> confirmed;
    for (const auto& m : measurements) {
        if (m.subject != "candidate" || m.shape_set != "bench")
            continue;
        if (confirmed[m.shape_label] && !m.confirmed)
            continue;
        times[m.shape_label] = m.median_ns;
        confirmed[m.shape_label] = m.confirmed;
        if (std::find(labels.begin(), labels.end(), m.shape_label) == labels.end())
            labels.push_back(m.shape_label);
    }
    return times;
}

Json summary_json(const CandidateSummary& c)
{
    Json params = Json::object();
    for (const auto& [name, value] : c.best_params)
        params[name] = value;
    return {{"id", c.id},
            {"fitness", c.fitness ? Json(*c.fitness) : Json()},
            {"verdict", verdict_name(c.verdict)},
            {"island", c.island},
            {"generation", c.generation},
            {"origin", origin_name(c.origin)},
            {"parent", optional_id(c.parent_id)},
            {"params", params},
            {"note", c.note},
            {"created_at", c.created_at}};
}

// Failures sharing a (shortened) message.
struct MessageGroup
{
    std::string message;
    int64_t count = 0;
    int64_t example = 0; // the oldest candidate with it
};

Json failures_section(const Archive& archive, const std::map<VerdictKind, int64_t>& counts,
                      const InspectOptions& options)
{
    // Group every failure's first line by verdict: the most frequent lines say what keeps failing.
    std::map<VerdictKind, std::map<std::string, MessageGroup>> groups;
    auto all = archive.failures(std::numeric_limits<int64_t>::max(), 4 * k_message_chars);
    for (const auto& failure : all) {
        std::string line = first_line(failure.message, k_message_chars);
        MessageGroup& group = groups[failure.verdict][line];
        group.message = line;
        ++group.count;
        group.example = failure.candidate_id; // failures come newest first
    }
    Json by_verdict = Json::array();
    int64_t total = 0;
    for (const auto& [kind, count] : counts) {
        if (kind == VerdictKind::correct)
            continue;
        total += count;
        std::vector<MessageGroup> common;
        for (const auto& [line, group] : groups[kind])
            common.push_back(group);
        std::stable_sort(common.begin(), common.end(),
                         [](const auto& a, const auto& b) { return a.count > b.count; });
        common.resize(std::min(common.size(), k_common_messages));
        Json messages = Json::array();
        for (const auto& group : common)
            messages.push_back(
                {{"message", group.message}, {"count", group.count}, {"example", group.example}});
        by_verdict.push_back(
            {{"verdict", verdict_name(kind)}, {"count", count}, {"common_messages", messages}});
    }
    std::stable_sort(by_verdict.begin(), by_verdict.end(), [](const Json& a, const Json& b) {
        return a["count"].get<int64_t>() > b["count"].get<int64_t>();
    });
    Json section = {{"total", total}, {"by_verdict", by_verdict}};
    if (options.failures) {
        Json recent = Json::array();
        for (size_t i = 0; i < all.size() && i < options.limit; ++i)
            recent.push_back({{"id", all[i].candidate_id},
                              {"verdict", verdict_name(all[i].verdict)},
                              {"island", all[i].island},
                              {"origin", origin_name(all[i].origin)},
                              {"created_at", all[i].created_at},
                              {"message", first_line(all[i].message, 2 * k_message_chars)}});
        section["recent"] = recent;
    }
    return section;
}

Json calls_section(const Archive& archive, const InspectOptions& options)
{
    Json by_model = Json::array();
    for (const auto& usage : archive.llm_usage_by_model())
        by_model.push_back(usage_json(usage));
    Json recent = Json::array();
    for (const auto& call : archive.llm_calls(options.limit, CallText::omit))
        recent.push_back({{"id", call.id},
                          {"started_at", call.started_at},
                          {"purpose", call_purpose_name(call.purpose)},
                          {"provider", call.provider},
                          {"model", call.model},
                          {"status", call.status},
                          {"error", first_line(call.error, k_message_chars)},
                          {"input_tokens", call.input_tokens},
                          {"output_tokens", call.output_tokens},
                          {"cost_usd", call.cost_usd},
                          {"cost_known", call.cost_known},
                          {"latency_s", call.latency_s},
                          {"retries", call.retries}});
    return {{"by_model", by_model}, {"recent", recent}};
}

// Reads one section of the report; on a damaged archive (a table or column missing) notes the
// problem in `damaged` and stands `fallback`, an empty section of the same shape, in its place, so
// every other section is still read.
template <typename Read>
Json readable(Json& damaged, Json fallback, Read&& read)
{
    try {
        return read();
    } catch (const DamagedArchive& e) {
        std::string problem = e.what();
        if (std::find(damaged.begin(), damaged.end(), Json(problem)) == damaged.end())
            damaged.push_back(problem);
        return fallback;
    }
}

} // namespace

Json build_inspect_report(const Archive& archive, const InspectOptions& options)
{
    Json report;
    Json damaged = Json::array();
    for (const auto& table : archive.missing_tables())
        damaged.push_back(fmt::format("{}: damaged archive: table '{}' is missing", archive.path().string(), table));
    // Malformed JSON anywhere, also where no section below reads: a resume refuses the archive for
    // it, so inspect names it. A section that reads a damaged value then notes the same message.
    for (auto& problem : archive.damaged_json(k_damage_listed))
        damaged.push_back(std::move(problem));
    report["archive"] = archive.path().string();
    RunInfo unreadable_run;
    unreadable_run.state = "unreadable";
    report["run"] = readable(damaged, run_section(unreadable_run), [&] { return run_section(archive.run_info()); });

    Json usage = readable(damaged, usage_json(LlmUsage{}), [&] { return usage_json(archive.llm_usage_total()); });
    Json candidate_count = readable(damaged, Json(0), [&] { return Json(archive.candidate_count()); });
    report["budget"] = {{"candidates", candidate_count}, {"llm", usage}};

    std::map<VerdictKind, int64_t> counts;
    readable(damaged, Json(), [&] {
        counts = archive.verdict_counts();
        return Json();
    });
    Json verdicts = Json::object();
    for (int kind = 0; kind <= static_cast<int>(VerdictKind::correct); ++kind) {
        auto it = counts.find(static_cast<VerdictKind>(kind));
        verdicts[std::string(verdict_name(static_cast<VerdictKind>(kind)))] =
            it == counts.end() ? 0 : it->second;
    }
    report["verdicts"] = verdicts;

    std::vector<std::string> labels;
    report["baselines"] = readable(damaged, Json::array(), [&] {
        Json baselines = Json::array();
        for (const auto& m : archive.baselines()) {
            baselines.push_back({{"subject", m.subject},
                                 {"shape_set", m.shape_set},
                                 {"shape_label", m.shape_label},
                                 {"median_ns", m.median_ns},
                                 {"q1_ns", m.q1_ns},
                                 {"q3_ns", m.q3_ns},
                                 {"samples", m.samples},
                                 {"confirmed", m.confirmed}});
            if (m.shape_set == "bench" &&
                std::find(labels.begin(), labels.end(), m.shape_label) == labels.end())
                labels.push_back(m.shape_label);
        }
        return baselines;
    });

    Json top = readable(damaged, Json::array(), [&] {
        Json rows = Json::array();
        for (const auto& summary : archive.top_candidates(options.top)) {
            Json row = summary_json(summary);
            row["times_ns"] = readable(damaged, Json::object(),
                                       [&] { return bench_times(archive.measurements(summary.id), labels); });
            rows.push_back(row);
        }
        return rows;
    });
    report["best"] =
        top.empty() ? Json() : Json{{"id", top[0]["id"]}, {"fitness", top[0]["fitness"]}};
    report["top"] = top;
    report["bench_shapes"] = labels;
    Json no_failures = {{"total", 0}, {"by_verdict", Json::array()}};
    if (options.failures)
        no_failures["recent"] = Json::array();
    report["failures"] = readable(damaged, no_failures, [&] { return failures_section(archive, counts, options); });
    report["flagged"] = readable(damaged, Json::array(), [&] { return flagged_section(archive); });
    report["gpus"] = readable(damaged,
                              Json{{"gpus", Json::array()}, {"candidates_measured", 0}, {"candidates_without_gpu", 0}},
                              [&] { return gpus_section(archive); });
    if (options.gpu_work)
        if (Json gpu = readable(damaged, Json(), [&] { return gpu_work_section(archive); }); !gpu.is_null())
            report["gpu"] = gpu;
    if (options.calls)
        report["calls"] = readable(damaged, Json{{"by_model", Json::array()}, {"recent", Json::array()}},
                                   [&] { return calls_section(archive, options); });
    if (options.lineage) {
        std::vector<CandidateSummary> chain;
        bool read = !readable(damaged, Json(), [&] {
                         chain = archive.lineage(*options.lineage);
                         return Json(true);
                     }).is_null();
        if (read && chain.empty())
            fail_input("{}: no candidate {} (the archive holds {})", archive.path().string(),
                       *options.lineage, candidate_count.get<int64_t>());
        if (!chain.empty()) {
            Json lineage = Json::array();
            for (const auto& summary : chain) {
                Json row = summary_json(summary);
                row["plan"] = readable(damaged, Json(), [&] {
                    auto plan = archive.candidate_plan(summary.id);
                    return plan ? plan_json(*plan) : Json();
                });
                lineage.push_back(row);
            }
            report["lineage"] = lineage;
            // Parents recorded as each other's ancestors: the walk stopped where the loop closes.
            const auto& last = chain.back();
            if (last.parent_id && std::any_of(chain.begin(), chain.end(),
                                              [&](const CandidateSummary& c) { return c.id == *last.parent_id; }))
                damaged.push_back(fmt::format("{}: damaged archive: the parents of candidate {} loop (#{}'s parent is "
                                              "#{}, already in its lineage)",
                                              archive.path().string(), *options.lineage, last.id, *last.parent_id));
        }
    }
    if (options.grid)
        if (Json grid = readable(damaged, Json(), [&] { return grid_section(archive); }); !grid.is_null())
            report["grid"] = grid;
    if (Json techniques = readable(damaged, Json(), [&] { return techniques_section(archive); }); !techniques.is_null())
        report["techniques"] = techniques;
    if (!damaged.empty())
        report["damaged"] = damaged;
    return report;
}

int run_inspect(const InspectOptions& options)
{
    Archive archive = Archive::open(options.archive_path, OpenMode::read_only);
    // One read transaction: every section describes the same moment of a run that is still writing.
    Json report;
    archive.atomically([&] { report = build_inspect_report(archive, options); });
    if (options.json)
        fmt::print("{}\n", report.dump(2));
    else
        fmt::print("{}", render_inspect_text(report));
    // A damaged archive: what could be read is printed above; the exit code says the input is bad.
    if (report.contains("damaged")) {
        for (const auto& problem : report["damaged"])
            log_error("{}", problem.get<std::string>());
        return k_exit_bad_input;
    }
    return k_exit_ok;
}

} // namespace kforge
