// `kforge model report`: the model's time by region before and after, what each region's search
// found, the end-to-end times and the share no replaced region covers (Amdahl's part), as text,
// JSON or a self-contained HTML page in the report's style. Read-only; every number comes from the
// folder's documents (model.json, winners.json, assembled.json) and the suite's archives.
#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "model/documents.hpp"
#include "model/end_to_end.hpp"
#include "model/model.hpp"
#include "model/python.hpp"
#include "report/page.hpp"
#include "suite/results.hpp"
#include "util/error.hpp"
#include "util/text.hpp"
#include "util/text_table.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

struct RegionLine {
    std::string id, state, verdict, outcome;
    int64_t count = 1, candidates = 0;
    double before_s = 0, share = 0;
    std::optional<double> eager, compile, after_s;
    bool replaced = false;
};

struct ModelSummary {
    std::string model, folder;
    bool measured = false;
    Json timing, assembled;
    std::vector<RegionLine> regions;
    double share_replaced = 0, share_kept = 0, share_outside = 0;
};

// Whether assemble's check found that `problem`'s operator made the compiled model slower, so the
// assembled model leaves that region to Inductor under torch.compile.
bool left_to_inductor(const Json& assembled, const std::string& problem)
{
    if (!assembled.is_object() || !assembled.contains("under_compile") || !assembled["under_compile"].is_object())
        return false;
    const Json& kept = assembled["under_compile"].value("kept", Json());
    if (!kept.is_array())
        return false;
    for (const auto& k : kept)
        if (k.is_string() && k.get<std::string>() == problem)
            return false;
    return true;
}

ModelSummary summarize(const fs::path& folder)
{
    ModelSummary s;
    Json doc = read_model_document(folder, ModelDocument::model, "run `kforge model extract` or `optimize` first");
    s.folder = folder.string();
    s.model = doc.value("model", "?");
    s.measured = doc.value("measured", false);
    s.timing = doc.value("timing", Json());
    std::error_code ec;
    if (fs::exists(folder / "assembled.json", ec))
        s.assembled = read_model_document(folder, ModelDocument::assembled, "");
    std::map<std::string, std::string> outcomes;
    if (fs::exists(folder / "winners.json", ec)) {
        Json winners = read_model_document(folder, ModelDocument::winners, "");
        for (const auto& c : winners["considered"])
            outcomes[c.value("problem", "")] = c.value("outcome", "");
    }
    std::optional<SuiteFolder> suite;
    std::optional<SuiteManifest> manifest;
    if (fs::exists(folder / "suite" / "suite.json", ec)) {
        suite.emplace(folder / "suite", false);
        manifest = suite->read();
    }
    double covered = 0;
    for (const auto& row : doc["regions"]) {
        RegionLine line;
        line.id = row.value("id", "?");
        line.count = row.value("count", int64_t{1});
        line.before_s = row.value(s.measured ? "time_s" : "estimate_s", 0.0);
        line.share = row.value("share", 0.0);
        covered += line.share;
        line.state = row.contains("problem") ? "extracted" : "left: " + row.value("why_not", std::string());
        const SuiteProblem* problem = manifest ? manifest->find(line.id) : nullptr;
        if (problem) {
            ProblemResult r = read_problem_result(*suite, *problem, epoch_now());
            line.state = std::string(problem_state_name(r.state));
            line.verdict = r.verdict;
            line.candidates = r.candidates;
            line.eager = r.vs_reference;
            line.compile = r.vs_compile;
        }
        auto found = outcomes.find(line.id);
        line.outcome = found != outcomes.end() ? found->second : "";
        line.replaced = line.outcome == "replaced";
        if (line.replaced && left_to_inductor(s.assembled, line.id))
            line.outcome = "replaced; under torch.compile left to Inductor";
        if (line.replaced && line.eager && *line.eager > 0)
            line.after_s = line.before_s / *line.eager;
        (line.replaced ? s.share_replaced : s.share_kept) += line.share;
        s.regions.push_back(line);
    }
    s.share_outside = s.measured ? std::max(0.0, 1 - covered) : 0;
    return s;
}

std::string x_text(const std::optional<double>& v)
{
    return v ? fmt::format("{:.2f}x", *v) : "-";
}

std::string time_text(const std::optional<double>& seconds)
{
    return seconds ? format_duration_ns(*seconds * 1e9) : "-";
}

std::vector<TextTable::Column> region_columns(bool measured)
{
    return {{"region"},
            {"count", TextTable::Align::right},
            {measured ? "before" : "estimate", TextTable::Align::right},
            {"share", TextTable::Align::right},
            {"search"},
            {"vs eager", TextTable::Align::right},
            {"vs compile", TextTable::Align::right},
            {"after", TextTable::Align::right},
            {"assembled"}};
}

std::vector<std::string> region_cells(const RegionLine& r)
{
    std::string search = r.verdict.empty() ? r.state : fmt::format("{}, {} ({} candidate{})", r.state, r.verdict,
                                                                     r.candidates, r.candidates == 1 ? "" : "s");
    return {r.id, std::to_string(r.count), format_duration_ns(r.before_s * 1e9), fmt::format("{:.1f}%", 100 * r.share),
            search, x_text(r.eager), x_text(r.compile), time_text(r.after_s),
            r.outcome.empty() ? "-" : r.outcome};
}

// The regions' time after assembly, summed: the kernels' where a region was replaced, the region's
// own where it was kept (measured folders only: an estimate says nothing of a forward's time).
std::optional<double> regions_after_s(const ModelSummary& s)
{
    if (!s.measured)
        return std::nullopt;
    double total = 0;
    for (const auto& r : s.regions)
        total += r.replaced && r.after_s ? *r.after_s : r.before_s;
    return total;
}

std::vector<std::string> end_to_end_lines(const ModelSummary& s)
{
    std::vector<std::string> lines;
    const Json& a = s.assembled;
    std::vector<std::string> times = forward_time_lines(a, regions_after_s(s));
    if (!times.empty()) {
        lines = times;
    } else if (a.is_object()) {
        lines.push_back("no end-to-end times: the assembled model was checked without a GPU");
    } else {
        lines.push_back("not assembled yet (`kforge model assemble DIR`)");
    }
    if (a.is_object())
        lines.push_back(fmt::format("the assembled model {} the original on fresh inputs{}",
                                    a.value("matches", false) ? "matches" : "DOES NOT MATCH",
                                    a.value("mode", "") == "reference" ? " (regions' own operators: wiring only)" : ""));
    lines.push_back(fmt::format("time in replaced regions {:.1f}%, in regions left as they were {:.1f}%, outside every "
                                "region {:.1f}%{}",
                                100 * s.share_replaced, 100 * s.share_kept, 100 * s.share_outside,
                                s.measured ? "" : " (estimated)"));
    return lines;
}

std::string render_text(const ModelSummary& s)
{
    std::string out = fmt::format("model {} ({})\n", s.model, s.folder);
    for (const auto& line : end_to_end_lines(s))
        out += "  " + line + "\n";
    TextTable table(region_columns(s.measured));
    for (const auto& r : s.regions)
        table.add_row(region_cells(r));
    return out + table.render();
}

Json render_json(const ModelSummary& s)
{
    Json regions = Json::array();
    for (const auto& r : s.regions)
        regions.push_back({{"id", r.id},
                           {"count", r.count},
                           {"before_s", r.before_s},
                           {"share", r.share},
                           {"state", r.state},
                           {"verdict", r.verdict},
                           {"candidates", r.candidates},
                           {"speedup_eager", r.eager ? Json(*r.eager) : Json()},
                           {"speedup_compile", r.compile ? Json(*r.compile) : Json()},
                           {"after_s", r.after_s ? Json(*r.after_s) : Json()},
                           {"outcome", r.outcome}});
    return {{"model", s.model},       {"folder", s.folder},
            {"measured", s.measured}, {"timing", s.timing},
            {"assembled", s.assembled}, {"regions", regions},
            {"forward_times", forward_times_json(s.assembled, regions_after_s(s))},
            {"share_replaced", s.share_replaced}, {"share_kept", s.share_kept},
            {"share_outside", s.share_outside}};
}

// One horizontal bar: the model's time split into replaced regions, regions kept, and the rest.
std::string time_bar(const ModelSummary& s)
{
    struct Part {
        double share;
        const char *colour, *label;
    };
    Part parts[] = {{s.share_replaced, "#2da44e", "replaced by kforge"},
                    {s.share_kept, "#8c959f", "regions left as they were"},
                    {s.share_outside, "#d0d7de", "outside every region"}};
    std::string svg = R"(<svg xmlns="http://www.w3.org/2000/svg" width="640" height="64" role="img">)";
    double x = 0;
    int legend = 0;
    for (const auto& p : parts) {
        double w = 620 * std::max(0.0, p.share);
        svg += fmt::format(R"(<rect x="{:.1f}" y="4" width="{:.1f}" height="24" fill="{}"/>)", 10 + x, w, p.colour);
        svg += fmt::format(R"(<rect x="{}" y="40" width="10" height="10" fill="{}"/><text x="{}" y="49" )"
                           R"(font-size="11">{} {:.1f}%</text>)",
                           10 + legend * 210, p.colour, 24 + legend * 210, p.label, 100 * p.share);
        x += w;
        ++legend;
    }
    return svg + "</svg>";
}

std::string render_html(const ModelSummary& s)
{
    std::string title = "kforge model: " + fs::path(s.model).filename().string();
    std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + html_escape(title) +
                       "</title><style>" + std::string(report_style_sheet()) + "</style></head><body><main>\n";
    html += "<h1>" + html_escape(title) + "</h1>\n<p>" + html_escape(s.model) + "</p>\n";
    html += "<section><h2>End to end</h2><ul>";
    for (const auto& line : end_to_end_lines(s))
        html += "<li>" + html_escape(line) + "</li>";
    html += "</ul>" + time_bar(s) + "</section>\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : s.regions) {
        std::vector<std::string> cells = region_cells(r);
        for (auto& c : cells)
            c = html_escape(c);
        rows.push_back(cells);
    }
    html += "<section><h2>Regions</h2>" + html_table(region_columns(s.measured), rows, "regions") +
            "<p>before: each region alone on the GPU, times its count (or an estimate without a GPU); after: before "
            "over the search's speedup against torch eager on that region; a region is replaced when its best kernel "
            "beats both torch eager and torch.compile there.</p></section>\n";
    return html + "</main></body></html>\n";
}

} // namespace

int run_model_report(const ModelReportOptions& options)
{
    ModelSummary s = summarize(fs::absolute(options.folder));
    if (!options.output.empty()) {
        std::error_code ec;
        fs::path parent = fs::path(options.output).parent_path();
        if (!parent.empty())
            fs::create_directories(parent, ec); // as `kforge report -o` does; a failure shows on the write
        write_file_atomic(options.output, render_html(s));
        std::fputs(fmt::format("wrote {}\n", options.output).c_str(), stdout);
        return 0;
    }
    std::fputs((options.json ? render_json(s).dump(1) + "\n" : render_text(s)).c_str(), stdout);
    return 0;
}

} // namespace kforge
