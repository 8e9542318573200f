// The HTML report's page: the style sheet, the headline numbers, the order of the sections, the
// verdict breakdown, the run's provenance and the best kernel's source. The sections with plots,
// grids and tables come from the files named in page.hpp.
//
// The page is one file with nothing to fetch: inline CSS, inline SVG, no scripts, system fonts.
// It reads top-down the way a performance engineer asks: how good is the best, how did the search
// get there and at what cost, where in the design space are the elites, what does the best do on
// each shape, what failed, and finally the code itself.
#include <algorithm>

#include <fmt/format.h>

#include "evaluator/describe.hpp"
#include "report/inspect_report.hpp"
#include "report/page.hpp"
#include "util/text.hpp"
#include "util/text_table.hpp"

#ifndef KFORGE_VERSION
#define KFORGE_VERSION "0.0.0"
#endif

namespace kforge {
namespace {

constexpr size_t k_max_source_chars = 400'000;
constexpr size_t k_max_config_chars = 4'000;
constexpr size_t k_max_metrics = 24;

constexpr const char* k_style = R"css(
:root{--fg:rgb(31,35,40);--muted:rgb(89,99,110);--line:rgb(209,217,224);--soft:rgb(234,238,242);--bg:rgb(246,248,250);--card:rgb(255,255,255);
--accent:rgb(9,105,218)}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,
sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1340px;margin:0 auto;padding:26px 28px 56px}
h1{font-size:25px;margin:0 0 4px;letter-spacing:-.01em}
h2{font-size:18px;margin:0 0 12px}
h3{font-size:14.5px;margin:20px 0 8px}
.sub,.muted{color:var(--muted)}
.sub code{font-size:12.5px}
.stats{display:grid;grid-template-columns:repeat(auto-fit,minmax(200px,1fr));gap:12px;margin:20px 0 6px}
.stat{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:13px 16px}
.stat .value{font-size:27px;font-weight:650;font-variant-numeric:tabular-nums;line-height:1.2}
.stat .label{color:var(--muted);font-size:12.5px;margin-top:2px}
.stat.hero{border-color:rgb(141,219,140);background:rgb(243,252,244)}
.stat.hero .value{color:rgb(26,127,55);font-size:32px}
section{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:18px 22px;
margin-top:18px}
.lead{margin:0 0 10px}
.caption,figcaption{color:var(--muted);font-size:12.5px;margin:6px 0 0}
.empty-note{color:var(--muted);font-style:italic}
figure{margin:0}
svg{max-width:100%;height:auto;font-family:inherit}
.plots{display:flex;flex-wrap:wrap;gap:18px 28px}
.plots figure{flex:1 1 540px;max-width:640px}
.plot .grid{stroke:var(--soft)}
.plot .frame{fill:none;stroke:rgb(140,149,159)}
.tick{font-size:11px;fill:rgb(89,99,110)}
.tiny{font-size:9.5px;fill:rgb(89,99,110)}
.axis-title{font-size:12px;fill:rgb(31,35,40)}
.dots{stroke:rgb(110,119,129);stroke-width:3.6;stroke-linecap:round;opacity:.45}
.fail-rug{stroke:rgb(207,34,46);stroke-width:1;opacity:.45}
.best-line{fill:none;stroke:var(--accent);stroke-width:2.4}
.ref-line{stroke:rgb(191,135,0);stroke-dasharray:5 4}
.ref-label{font-size:11px;fill:rgb(154,103,0)}
.best-dot{fill:var(--accent);stroke:rgb(255,255,255);stroke-width:2}
.ref-label,.best-label{paint-order:stroke;stroke:rgb(255,255,255);stroke-width:3px;stroke-linejoin:round}
.best-label{font-size:12.5px;font-weight:650;fill:rgb(5,80,174)}
.plot-note{font-size:15px;fill:rgb(89,99,110)}
.islands{display:flex;flex-wrap:wrap;gap:22px 34px;margin-top:12px}
.island{width:266px}
.island figcaption{margin:0 0 4px;color:var(--fg);font-size:13.5px}
.grid-label{font-size:11.5px;fill:rgb(31,35,40)}
.cell.empty{fill:rgb(242,244,246);stroke:rgb(213,219,225);stroke-width:.7}
.cell.elite{stroke:rgb(255,255,255);stroke-width:.7}
.best-ring{fill:none;stroke:rgb(207,34,46);stroke-width:2.4}
.scroll{overflow-x:auto}
table.data{border-collapse:collapse;width:100%;font-size:13px}
th,td{padding:5px 10px;border-bottom:1px solid var(--soft);text-align:left;vertical-align:top}
th{font-weight:600;color:var(--muted);background:var(--bg);white-space:nowrap}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tbody tr:hover{background:rgb(246,248,250)}
.badge{display:inline-block;padding:0 8px;border-radius:10px;font-size:12px;line-height:19px;
white-space:nowrap}
.v-correct{background:rgb(218,251,225);color:rgb(17,99,41)}.v-held_out_failed{background:rgb(255,241,194);color:rgb(125,78,0)}
.v-incorrect{background:rgb(255,226,204);color:rgb(149,56,0)}.v-timeout{background:rgb(236,220,255);color:rgb(102,57,186)}
.v-runtime_error{background:rgb(255,216,211);color:rgb(164,14,38)}.v-compile_error{background:rgb(255,220,232);color:rgb(153,18,75)}
.v-plan_error{background:rgb(221,231,243);color:rgb(47,74,107)}.v-no_code{background:rgb(230,233,236);color:rgb(66,74,83)}
.bars{display:grid;grid-template-columns:max-content 1fr max-content max-content;gap:6px 12px;
align-items:center;max-width:860px}
.bar{height:14px;background:var(--bg);border-radius:3px;overflow:hidden}
.bar>div{height:100%;border-radius:3px}
.bar>.v-correct{background:rgb(45,164,78)}.bar>.v-held_out_failed{background:rgb(212,167,44)}
.bar>.v-incorrect{background:rgb(225,111,36)}.bar>.v-timeout{background:rgb(130,80,223)}
.bar>.v-runtime_error{background:rgb(207,34,46)}.bar>.v-compile_error{background:rgb(191,57,137)}
.bar>.v-plan_error{background:rgb(87,114,143)}.bar>.v-no_code{background:rgb(140,149,159)}
.bars .num{text-align:right;font-variant-numeric:tabular-nums}
.warn{color:rgb(164,14,38);font-weight:600}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:4px 18px;margin:0}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
pre{margin:0;font:12.5px/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
pre.config{background:var(--bg);padding:8px 10px;border-radius:6px;white-space:pre-wrap}
pre.source{background:rgb(251,252,253);border:1px solid var(--soft);border-radius:8px;padding:10px 0;
overflow-x:auto;counter-reset:line}
pre.source .l{display:block;padding:0 14px 0 0}
footer{margin-top:22px;font-size:12px;text-align:center}
pre.source .l::before{counter-increment:line;content:counter(line);display:inline-block;
width:3.6em;padding-right:1em;margin-right:.6em;text-align:right;color:rgb(140,149,159);
border-right:1px solid var(--soft)}
)css";

std::string money_or_none(const Json& llm)
{
    double cost = llm["cost_usd"].get<double>();
    return cost > 0 ? format_dollars(cost) : "$0";
}

std::string stat(std::string_view css_class, std::string_view value_markup, std::string_view label,
                 std::string_view value_id = {})
{
    std::string id = value_id.empty() ? "" : fmt::format(R"( id="{}")", value_id);
    return fmt::format(R"(<div class="stat {}"><div class="value"{}>{}</div><div class="label">{}</div></div>)",
                       css_class, id, value_markup, label);
}

std::string headline(const ReportData& data)
{
    const Json& report = data.inspect;
    int64_t candidates = report["budget"]["candidates"].get<int64_t>();
    int64_t correct = report["verdicts"]["correct"].get<int64_t>();
    const Json& llm = report["budget"]["llm"];
    std::string out = R"(<div class="stats">)";
    if (data.best)
        out += stat("hero", html_escape(format_fitness(Json(*data.best->evaluation.fitness))),
                    fmt::format("best speedup over the reference: #{}, {}", data.best->id,
                                html_escape(origin_name(data.best->origin))),
                    "best-speedup");
    else
        out += stat("", "none", "no correct candidate yet", "best-speedup");
    out += stat("", group_digits(candidates),
                fmt::format("candidates, {} correct ({:.0f}%)", group_digits(correct),
                            candidates ? 100.0 * correct / candidates : 0.0));
    out += stat("", group_digits(static_cast<int64_t>(data.elites.size())),
                fmt::format("elites in {} islands", data.islands));
    out += stat("", html_escape(money_or_none(llm)),
                fmt::format("{} LLM calls, {} in / {} out tokens",
                            group_digits(llm["calls"].get<int64_t>()),
                            group_digits(llm["input_tokens"].get<int64_t>()),
                            group_digits(llm["output_tokens"].get<int64_t>())));
    const Json& run = report["run"];
    out += stat("", html_escape(run["state"].get<std::string>()),
                "run state, " +
                    format_span(run["updated_at"].get<double>() - run["started_at"].get<double>()) +
                    " from start to last write");
    return out + "</div>";
}

std::string subtitle(const Json& report)
{
    const Json& run = report["run"];
    const Json& device = run["device"];
    std::string device_name = device.is_object() && device.contains("name") && device["name"].is_string()
                                  ? device["name"].get<std::string>()
                                  : "unknown device";
    return fmt::format(R"(<p class="sub">Task <b>{}</b> on {} &middot; run <code>{}</code> &middot; )"
                       R"(started {} &middot; last write {}</p>)",
                       html_escape(run["task"].get<std::string>()), html_escape(device_name),
                       html_escape(run["run_id"].get<std::string>()),
                       format_local_time(run["started_at"].get<double>()),
                       format_local_time(run["updated_at"].get<double>()));
}

std::string run_facts(const Json& report)
{
    const Json& run = report["run"];
    std::string device;
    if (run["device"].is_object())
        for (const auto& [key, value] : run["device"].items())
            device += fmt::format("{}{} {}", device.empty() ? "" : ", ", key,
                                  value.is_string() ? value.get<std::string>() : value.dump());
    auto fact = [](std::string_view name, const std::string& value_markup) {
        return fmt::format("<dt>{}</dt><dd>{}</dd>", name, value_markup);
    };
    std::string out = R"(<dl class="facts">)";
    out += fact("archive", html_escape(report["archive"].get<std::string>()));
    out += fact("run", html_escape(run["run_id"].get<std::string>()) + ", " +
                           html_escape(run["state"].get<std::string>()));
    out += fact("task", fmt::format("{} (hash <code>{}</code>)",
                                    html_escape(run["task"].get<std::string>()),
                                    html_escape(run["task_hash"].get<std::string>())));
    out += fact("device", device.empty() ? "unknown" : html_escape(device));
    out += fact("versions", fmt::format("toolkit {}, kforge {}",
                                        html_escape(run["toolkit_version"].get<std::string>()),
                                        html_escape(run["kforge_version"].get<std::string>())));
    out += fact("seed", run["seed"].dump());
    out += fact("started", format_local_time(run["started_at"].get<double>()));
    out += fact("last write", format_local_time(run["updated_at"].get<double>()));
    out += fact("config", R"(<pre class="config">)" +
                              html_escape(truncate_text(run["config"].dump(2), k_max_config_chars)) +
                              "</pre>");
    return out + "</dl>";
}

std::string best_kernel(const ReportData& data)
{
    if (!data.best)
        return R"(<p class="empty-note">No correct candidate yet.</p>)";
    const Candidate& best = *data.best;
    const Evaluation& e = best.evaluation;
    Json params = Json::object();
    for (const auto& [name, value] : e.best_params)
        params[name] = value;
    std::string facts = R"(<dl class="facts">)";
    facts += fmt::format("<dt>candidate</dt><dd>#{}, island {}, generation {}, {}</dd>", best.id,
                         best.island, best.generation, html_escape(origin_name(best.origin)));
    facts += fmt::format("<dt>params</dt><dd>{}</dd>", html_escape(format_params(params)));
    if (e.descriptors.is_object() && !e.descriptors.empty())
        facts += fmt::format("<dt>grid cell</dt><dd>{}</dd>", html_escape(descriptor_cell(e.descriptors)));
    std::vector<std::string> metrics;
    if (e.metrics.is_object())
        for (const auto& [key, value] : e.metrics.items())
            if (value.is_primitive() && metrics.size() < k_max_metrics)
                metrics.push_back(key + " " + (value.is_string() ? value.get<std::string>() : value.dump()));
    if (!metrics.empty())
        facts += fmt::format("<dt>metrics</dt><dd>{}</dd>", html_escape(join(metrics, ", ")));
    if (!best.note.empty())
        facts += fmt::format("<dt>note</dt><dd>{}</dd>", html_escape(best.note));
    facts += "</dl>";

    std::vector<std::string> lines = split(truncate_text(best.source, k_max_source_chars), '\n');
    if (!lines.empty() && lines.back().empty())
        lines.pop_back(); // the newline that ends the last line
    std::string code;
    for (const auto& line : lines)
        code += R"(<span class="l">)" + html_escape(line) + "</span>";
    return facts + R"(<h3>Source</h3><pre class="source"><code>)" + code + "</code></pre>";
}

std::string section(std::string_view id, std::string_view heading, const std::string& body)
{
    return fmt::format(R"(<section id="{}"><h2>{}</h2>{}</section>)", id, heading, body);
}

} // namespace

std::string_view report_style_sheet()
{
    return k_style;
}

std::string render_verdicts(const ReportData& data)
{
    const Json& verdicts = data.inspect["verdicts"];
    int64_t total = 0;
    int64_t largest = 0;
    for (const auto& [name, count] : verdicts.items()) {
        total += count.get<int64_t>();
        largest = std::max(largest, count.get<int64_t>());
    }
    if (total == 0)
        return R"(<p class="empty-note">No candidates yet.</p>)";
    std::string bars = R"(<div class="bars">)";
    for (int kind = static_cast<int>(VerdictKind::correct); kind >= 0; --kind) { // best rung first
        std::string name(verdict_name(static_cast<VerdictKind>(kind)));
        int64_t count = verdicts.value(name, int64_t{0});
        if (count == 0)
            continue;
        bars += fmt::format(R"(<span class="badge v-{0}">{0}</span><div class="bar">)"
                            R"(<div class="v-{0}" style="width:{1:.1f}%"></div></div>)"
                            R"(<span class="num">{2}</span><span class="num muted">{3:.1f}%</span>)",
                            name, 100.0 * count / largest, count, 100.0 * count / total);
    }
    bars += "</div>";
    std::vector<std::vector<std::string>> rows;
    for (const auto& group : data.inspect["failures"]["by_verdict"])
        for (const auto& common : group["common_messages"])
            rows.push_back({fmt::format(R"(<span class="badge v-{0}">{0}</span>)",
                                        html_escape(group["verdict"].get<std::string>())),
                            std::to_string(common["count"].get<int64_t>()),
                            fmt::format("#{}", common["example"].get<int64_t>()),
                            "<code>" + html_escape(common["message"].get<std::string>()) + "</code>"});
    if (rows.empty())
        return bars;
    return bars + "<h3>Most common failure messages</h3>" +
           html_table({{"verdict"}, {"count", TextTable::Align::right}, {"e.g."}, {"message (first line)"}},
                      rows, "data");
}

std::string render_report_html(const ReportData& data, const std::string& title)
{
    std::string page = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                       "<meta name=\"generator\" content=\"kforge report\">";
    page += "<title>" + html_escape(title) + "</title><style>" + k_style + "</style></head>\n<body><main>";
    page += "<header><h1>" + html_escape(title) + "</h1>" + subtitle(data.inspect) + headline(data) +
            "</header>\n";
    page += section("progress", "Progress", render_progress_plots(data)) + "\n";
    page += section("elites", "MAP-Elites grids", render_elite_grids(data)) + "\n";
    page += section("best", "The best kernel on each shape",
                    render_shape_table(data) + render_lineage(data)) + "\n";
    if (std::string techniques = render_techniques(data); !techniques.empty())
        page += section("techniques", "Techniques (plan, then code)", techniques) + "\n";
    page += section("top", "Top candidates", render_top_table(data)) + "\n";
    page += section("verdicts", "Verdicts", render_verdicts(data)) + "\n";
    page += section("flagged", "Flagged: faster than the roofline floor",
                    render_flagged_html(data.inspect.value("flagged", Json::array()))) + "\n";
    page += section("costs", "LLM costs and tokens by model", render_costs(data)) + "\n";
    page += section("gpus", "GPUs", render_gpus(data)) + "\n";
    page += section("run", "Run", run_facts(data.inspect)) + "\n";
    page += section("source", "Best kernel", best_kernel(data)) + "\n";
    page += fmt::format(R"(<footer class="muted">Written by <code>kforge report</code> (kforge {}) on {} from )"
                        R"(<code>{}</code>. One self-contained file: no scripts, nothing fetched.)"
                        R"(</footer>)",
                        KFORGE_VERSION, format_local_time(data.generated_at),
                        html_escape(data.inspect["archive"].get<std::string>()));
    page += "</main></body></html>\n";
    return page;
}

} // namespace kforge
