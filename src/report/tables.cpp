// The tables of the HTML report: the best candidate per shape against every baseline, its lineage,
// the top candidates, LLM usage per model, and the GPUs. Each reads the gathered ReportData only;
// every cell is escaped where it becomes markup.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/task.hpp"
#include "report/inspect_report.hpp"
#include "report/page.hpp"
#include "search/progress.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

using Align = TextTable::Align;

constexpr size_t k_lineage_ends = 12; // a long lineage shows this many at each end

std::string id_link(int64_t id)
{
    return fmt::format("#{}", id);
}

std::string percent(double fraction)
{
    return fmt::format("{:.1f}%", 100 * fraction);
}

std::string verdict_badge(const std::string& verdict)
{
    return fmt::format(R"(<span class="badge v-{0}">{0}</span>)", html_escape(verdict));
}

// One shape of the best: the candidate's own timing and the baselines' medians by subject.
struct ShapeRow
{
    std::string shape_set;
    std::string label;
    Measurement best;
    std::map<std::string, double> baseline_ns; // by subject
};

// A confirmed measurement replaces a quick screen of the same shape; never the other way round.
void keep_better(std::optional<Measurement>& slot, const Measurement& m)
{
    if (!slot || m.confirmed || !slot->confirmed)
        slot = m;
}

std::vector<ShapeRow> shape_rows(const ReportData& data, std::vector<std::string>& subjects)
{
    std::vector<ShapeRow> rows;
    auto row_for = [&rows](const std::string& set, const std::string& label) -> ShapeRow* {
        for (auto& row : rows)
            if (row.shape_set == set && row.label == label)
                return &row;
        return nullptr;
    };
    auto note_subject = [&subjects](const std::string& subject) {
        if (std::find(subjects.begin(), subjects.end(), subject) == subjects.end())
            subjects.push_back(subject);
    };
    subjects = {"reference"};
    std::map<std::pair<std::string, std::string>, std::optional<Measurement>> best;
    std::map<std::pair<std::string, std::string>, std::map<std::string, std::optional<Measurement>>>
        interleaved;
    for (const auto& m : data.best->evaluation.measurements) {
        auto key = std::make_pair(m.shape_set, m.shape_label);
        if (m.subject == "candidate") {
            if (!best[key])
                rows.push_back({m.shape_set, m.shape_label, m, {}});
            keep_better(best[key], m);
        } else {
            keep_better(interleaved[key][m.subject], m);
        }
    }
    for (auto& row : rows)
        row.best = *best[{row.shape_set, row.label}];
    // The run's baselines, then the ones timed beside the best (same clocks) where there are any.
    for (const auto& b : data.inspect["baselines"]) {
        ShapeRow* row = row_for(b["shape_set"].get<std::string>(), b["shape_label"].get<std::string>());
        if (!row)
            continue;
        auto subject = b["subject"].get<std::string>();
        row->baseline_ns[subject] = b["median_ns"].get<double>();
        note_subject(subject);
    }
    for (const auto& [key, by_subject] : interleaved)
        if (ShapeRow* row = row_for(key.first, key.second))
            for (const auto& [subject, m] : by_subject) {
                row->baseline_ns[subject] = m->median_ns;
                note_subject(subject);
            }
    return rows;
}

} // namespace

std::string html_table(const std::vector<TextTable::Column>& columns,
                       const std::vector<std::vector<std::string>>& rows, std::string_view css_class)
{
    std::string out = fmt::format(R"(<div class="scroll"><table class="{}"><thead><tr>)", css_class);
    for (const auto& column : columns)
        out += fmt::format("<th{}>{}</th>", column.align == Align::right ? R"( class="num")" : "",
                           html_escape(column.header));
    out += "</tr></thead><tbody>";
    for (const auto& row : rows) {
        out += "<tr>";
        for (size_t i = 0; i < row.size() && i < columns.size(); ++i)
            out += fmt::format("<td{}>{}</td>",
                               columns[i].align == Align::right ? R"( class="num")" : "", row[i]);
        out += "</tr>";
    }
    return out + "</tbody></table></div>";
}

std::string render_shape_table(const ReportData& data)
{
    if (!data.best)
        return R"(<p class="empty-note">No correct candidate yet, so no timings to show.</p>)";
    std::vector<std::string> subjects;
    std::vector<ShapeRow> rows = shape_rows(data, subjects);
    std::vector<TextTable::Column> columns{{"shape set"},
                                           {"shape"},
                                           {"best median", Align::right},
                                           {"IQR", Align::right},
                                           {"samples", Align::right},
                                           {"timing"}};
    std::string kind = data.inspect["run"].value("reference_kind", std::string("cuda"));
    for (const auto& subject : subjects) {
        columns.push_back({baseline_label(kind, subject), Align::right});
        columns.push_back({"vs " + baseline_label(kind, subject), Align::right});
    }
    columns.push_back({"roofline floor", Align::right});
    columns.push_back({"% of roofline", Align::right});
    std::vector<std::vector<std::string>> cells;
    for (const auto& row : rows) {
        const Measurement& m = row.best;
        std::vector<std::string> line{
            html_escape(row.shape_set), html_escape(row.label),
            format_duration_ns(m.median_ns),
            fmt::format("{} ({})", format_duration_ns(m.q3_ns - m.q1_ns),
                        m.median_ns > 0 ? percent((m.q3_ns - m.q1_ns) / m.median_ns) : "-"),
            std::to_string(m.samples), m.confirmed ? "confirmed" : "screen"};
        for (const auto& subject : subjects) {
            auto it = row.baseline_ns.find(subject);
            bool known = it != row.baseline_ns.end() && it->second > 0 && m.median_ns > 0;
            line.push_back(known ? format_duration_ns(it->second) : "-");
            line.push_back(known ? fmt::format(R"(<b>{:.2f}x</b>)", it->second / m.median_ns) : "-");
        }
        bool floor_known = m.roofline_ns > 0 && m.median_ns > 0;
        line.push_back(floor_known ? format_duration_ns(m.roofline_ns) : "-");
        std::string fraction = floor_known ? percent(m.roofline_ns / m.median_ns) : "-";
        if (m.below_roofline)
            fraction += R"( <span class="warn" title="faster than the roofline floor: flagged and re-verified">below floor</span>)";
        line.push_back(fraction);
        cells.push_back(std::move(line));
    }
    return html_table(columns, cells, "data") +
           R"(<p class="caption">Medians of the best candidate; a confirmed timing replaces the quick )"
           R"(screen. Baselines timed interleaved with the best are used where the archive holds )"
           R"(them, otherwise the run's baseline timings. "% of roofline" is the device's floor time )"
           R"(for the shape (memory or compute bound) over the median.</p>)";
}

std::string render_lineage(const ReportData& data)
{
    if (!data.inspect.contains("lineage"))
        return "";
    const Json& chain = data.inspect["lineage"]; // the best first, the oldest ancestor last
    std::vector<TextTable::Column> columns{{"id", Align::right}, {"generation", Align::right},
                                           {"island", Align::right}, {"origin"},
                                           {"verdict"}, {"fitness", Align::right},
                                           {"params"}, {"plan"}, {"note"}};
    std::vector<std::vector<std::string>> rows;
    size_t n = chain.size();
    for (size_t k = 0; k < n; ++k) {
        size_t i = n - 1 - k; // oldest first: the page reads top to bottom
        if (n > 2 * k_lineage_ends && k == k_lineage_ends) {
            rows.push_back({"", "", "", "", "", "",
                            fmt::format("<i>{} more ancestors</i>", n - 2 * k_lineage_ends), "", ""});
            k = n - k_lineage_ends - 1;
            continue;
        }
        const Json& row = chain[i];
        rows.push_back({id_link(row["id"].get<int64_t>()),
                        std::to_string(row["generation"].get<int>()),
                        std::to_string(row["island"].get<int>()),
                        html_escape(row["origin"].get<std::string>()),
                        verdict_badge(row["verdict"].get<std::string>()),
                        html_escape(format_fitness(row["fitness"])),
                        html_escape(format_params(row["params"])),
                        html_escape(plan_summary_text(row.value("plan", Json()))),
                        html_escape(row["note"].get<std::string>())});
    }
    return fmt::format(R"(<h3>Lineage of the best ({} candidates from the oldest ancestor to the best)</h3>)",
                       n) +
           html_table(columns, rows, "data lineage");
}

std::string render_top_table(const ReportData& data)
{
    const Json& report = data.inspect;
    const Json& labels = report["bench_shapes"];
    std::vector<TextTable::Column> columns{{"id", Align::right}, {"fitness", Align::right},
                                           {"island", Align::right}, {"generation", Align::right},
                                           {"origin"}, {"parent", Align::right}, {"params"}};
    for (const auto& label : labels)
        columns.push_back({label.get<std::string>(), Align::right});
    columns.push_back({"note"});
    std::vector<std::vector<std::string>> rows;
    for (const auto& row : report["top"]) {
        std::vector<std::string> line{
            id_link(row["id"].get<int64_t>()), html_escape(format_fitness(row["fitness"])),
            std::to_string(row["island"].get<int>()), std::to_string(row["generation"].get<int>()),
            html_escape(row["origin"].get<std::string>()),
            row["parent"].is_null() ? "-" : id_link(row["parent"].get<int64_t>()),
            html_escape(format_params(row["params"]))};
        for (const auto& label : labels) {
            auto key = label.get<std::string>();
            line.push_back(row["times_ns"].contains(key)
                               ? format_duration_ns(row["times_ns"][key].get<double>())
                               : "-");
        }
        line.push_back(html_escape(row["note"].get<std::string>()));
        rows.push_back(std::move(line));
    }
    if (rows.empty())
        return R"(<p class="empty-note">No correct candidate yet.</p>)";
    int64_t correct = report["verdicts"]["correct"].get<int64_t>();
    std::string more = correct > static_cast<int64_t>(rows.size())
                           ? fmt::format(R"(<p class="caption">{} more correct candidates not shown.</p>)",
                                         correct - static_cast<int64_t>(rows.size()))
                           : "";
    return html_table(columns, rows, "data") + more;
}

std::string render_costs(const ReportData& data)
{
    const Json& calls = data.inspect["calls"];
    std::vector<TextTable::Column> columns{{"provider"},
                                           {"model"},
                                           {"calls", Align::right},
                                           {"failed", Align::right},
                                           {"input tokens", Align::right},
                                           {"cached input", Align::right},
                                           {"output tokens", Align::right},
                                           {"cost", Align::right},
                                           {"mean latency", Align::right}};
    auto usage_row = [](const Json& usage, const std::string& provider, const std::string& model) {
        int64_t count = usage["calls"].get<int64_t>();
        std::string cost = format_dollars(usage["cost_usd"].get<double>());
        if (int64_t unknown = usage["calls_without_price"].get<int64_t>(); unknown > 0)
            cost += fmt::format(" + {} unpriced", unknown);
        return std::vector<std::string>{
            provider, model, group_digits(count), group_digits(usage["failed_calls"].get<int64_t>()),
            group_digits(usage["input_tokens"].get<int64_t>()),
            group_digits(usage["cached_input_tokens"].get<int64_t>()),
            group_digits(usage["output_tokens"].get<int64_t>()), cost,
            count > 0 ? fmt::format("{:.1f} s", usage["latency_s"].get<double>() / count) : "-"};
    };
    std::vector<std::vector<std::string>> rows;
    for (const auto& usage : calls["by_model"])
        if (usage["provider"] != "builtin") // the builtin proposer's records are not model calls
            rows.push_back(usage_row(usage, html_escape(usage["provider"].get<std::string>()),
                                     html_escape(usage["model"].get<std::string>())));
    if (rows.empty())
        return R"(<p class="empty-note">No LLM calls: the run used the builtin proposer only.</p>)";
    if (rows.size() > 1)
        rows.push_back(usage_row(data.inspect["budget"]["llm"], "<b>all</b>", ""));
    return html_table(columns, rows, "data");
}

std::string render_gpus(const ReportData& data)
{
    const Json& section = data.inspect["gpus"];
    if (section["gpus"].empty())
        return R"(<p class="empty-note">Not recorded: the archive was written before kforge recorded which GPU )"
               R"(measured what.</p>)";
    std::vector<TextTable::Column> columns{{"GPU"},
                                           {"host"},
                                           {"model"},
                                           {"candidates", Align::right},
                                           {"evaluations", Align::right},
                                           {"busy", Align::right},
                                           {"busy share", Align::right},
                                           {"worker restarts", Align::right},
                                           {"sessions", Align::right},
                                           {"state"}};
    std::vector<std::vector<std::string>> rows;
    for (const auto& gpu : section["gpus"])
        rows.push_back({html_escape(gpu["label"].get<std::string>()), html_escape(gpu["host"].get<std::string>()),
                        html_escape(gpu["name"].get<std::string>()), group_digits(gpu["candidates"].get<int64_t>()),
                        group_digits(gpu["evaluations"].get<int64_t>()), format_elapsed(gpu["busy_s"].get<double>()),
                        percent(gpu["busy"].get<double>()), std::to_string(gpu["restarts"].get<int>()),
                        std::to_string(gpu["sessions"].get<int>()), gpu["lost"].get<bool>() ? "lost" : "served"});
    return html_table(columns, rows, "data") +
           fmt::format(R"(<p class="caption">{} candidates measured on a GPU and {} that no GPU ran (no code, plan or )"
                       R"(compile errors) make the archive's {}; busy time sums every session.</p>)",
                       group_digits(section["candidates_measured"].get<int64_t>()),
                       group_digits(section["candidates_without_gpu"].get<int64_t>()),
                       group_digits(section["candidates_measured"].get<int64_t>() +
                                    section["candidates_without_gpu"].get<int64_t>()));
}

} // namespace kforge
