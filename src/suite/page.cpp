// The suite page (page.hpp): headline, the fast_p table, the speedup pictures, the problems
// with links to their own report pages, the GPUs' use, the settings. Markup only: every number was
// computed by results.cpp, every string is escaped where it becomes markup. Helper names carry
// a suite_ prefix, which tells them from the run report's page helpers (report/page.cpp).
#include <algorithm>

#include <fmt/format.h>

#include "report/inspect_report.hpp"
#include "report/page.hpp"
#include "search/progress.hpp"
#include "suite/page.hpp"
#include "util/text.hpp"
#include "util/text_table.hpp"

#ifndef KFORGE_VERSION
#define KFORGE_VERSION "0.0.0"
#endif

namespace kforge {
namespace {

using SuiteAlign = TextTable::Align;

constexpr const char* k_suite_extra_style = R"css(
.state{display:inline-block;padding:0 8px;border-radius:10px;font-size:12px;line-height:19px}
.s-finished{background:rgb(218,251,225);color:rgb(17,99,41)}.s-running{background:rgb(221,244,255);color:rgb(5,80,174)}
.s-waiting{background:rgb(234,238,242);color:rgb(66,74,83)}.s-failed{background:rgb(255,216,211);color:rgb(164,14,38)}
.s-skipped{background:rgb(255,241,194);color:rgb(125,78,0)}
)css";

std::string suite_stat(std::string_view css_class, std::string_view value, std::string_view label)
{
    return fmt::format(R"(<div class="stat {}"><div class="value">{}</div><div class="label">{}</div></div>)", css_class,
                       value, label);
}

std::string suite_section(std::string_view id, std::string_view heading, const std::string& body)
{
    return fmt::format(R"(<section id="{}"><h2>{}</h2>{}</section>)", id, heading, body) + "\n";
}

std::string suite_percent(double share)
{
    return fmt::format("{:.1f}%", 100 * share);
}

const BaselineSummary* suite_baseline(const SuiteSummary& summary, std::string_view name)
{
    for (const auto& b : summary.baselines)
        if (b.baseline == name)
            return &b;
    return nullptr;
}

std::string suite_headline(const SuitePage& page)
{
    const SuiteSummary& s = page.summary;
    std::string out = R"(<div class="stats">)";
    out += suite_stat("hero", suite_percent(s.correctness_rate()),
                      fmt::format("correct: {} of {} problems", s.correct, s.problems));
    for (const char* name : {"torch_eager", "torch_compile", "reference"}) {
        const BaselineSummary* b = suite_baseline(s, name);
        if (!b || b->problems == 0)
            continue;
        out += suite_stat("", suite_percent(b->fast_share(1)),
                          fmt::format("fast_1 vs {} ({} problem{}); geometric mean {}", html_escape(b->label),
                                      b->problems, b->problems == 1 ? "" : "s", format_speedup(b->geomean)));
    }
    out += suite_stat("", html_escape(format_dollars(s.cost_usd)), "model calls");
    out += suite_stat("", fmt::format("{:.2f}", s.gpu_hours),
                      fmt::format("GPU hours held by the runs, each of runs sharing a GPU counted ({:.2f} measuring)",
                                  s.busy_gpu_hours));
    return out + "</div>";
}

std::string suite_metrics_table(const SuitePage& page)
{
    std::vector<TextTable::Column> columns{{"against"}, {"problems", SuiteAlign::right}};
    for (double p : k_fast_p_levels)
        columns.push_back({fmt::format("fast_{:g}", p), SuiteAlign::right});
    columns.push_back({"geometric mean", SuiteAlign::right});
    std::vector<std::vector<std::string>> rows;
    for (const auto& b : page.summary.baselines) {
        if (b.problems == 0)
            continue;
        std::vector<std::string> row{html_escape(b.label), std::to_string(b.problems)};
        for (size_t level = 0; level < b.fast.size(); ++level)
            row.push_back(fmt::format("{} <span class=\"muted\">({})</span>", suite_percent(b.fast_share(level)),
                                      b.fast[level]));
        row.push_back(b.geomean ? fmt::format("<b>{:.2f}x</b> <span class=\"muted\">over {}</span>", *b.geomean,
                                              b.geomean_over)
                                : "-");
        rows.push_back(std::move(row));
    }
    if (rows.empty())
        return R"(<p class="empty-note">No problems yet.</p>)";
    return html_table(columns, rows, "data") +
           R"(<p class="caption">fast_p: problems whose best kernel is correct and more than p times faster than the )"
           R"(baseline, over the problems that have that baseline (fast_0 is the correctness rate). torch eager and )"
           R"(torch.compile apply to imported PyTorch programs, timed by kforge on the same GPU (a program )"
           R"(torch.compile cannot compile has no torch.compile baseline); bundled tasks are measured against their )"
           R"(own reference kernel. Problems that failed, were skipped or never got a correct kernel count as not )"
           R"(correct. The geometric mean is over the correct problems.</p>)";
}

std::string suite_problem_table(const SuitePage& page)
{
    std::vector<TextTable::Column> columns{{"problem"},          {"kind"},
                                           {"state"},            {"verdict"},
                                           {"best time", SuiteAlign::right},
                                           {"vs torch eager", SuiteAlign::right},
                                           {"vs torch.compile", SuiteAlign::right},
                                           {"vs reference", SuiteAlign::right},
                                           {"% of roofline", SuiteAlign::right},
                                           {"candidates", SuiteAlign::right},
                                           {"dollars", SuiteAlign::right},
                                           {"GPU time", SuiteAlign::right},
                                           {"why"}};
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : page.results) {
        auto link = page.links.find(r.id);
        std::string name = link == page.links.end()
                               ? html_escape(r.id)
                               : fmt::format(R"(<a href="{}">{}</a>)", html_escape(link->second), html_escape(r.id));
        std::string state(problem_state_name(r.state));
        std::string verdict = r.verdict.empty() ? "-" : fmt::format(R"(<span class="badge v-{0}">{0}</span>)",
                                                                     html_escape(r.verdict));
        std::string time = r.best_time_ns ? format_duration_ns(*r.best_time_ns) : "-";
        if (r.best_time_ns && r.bench_shapes > 1)
            time = fmt::format(R"(<span title="geometric mean over {} bench shapes">{}*</span>)", r.bench_shapes, time);
        std::string why = !r.error.empty() ? r.error : r.reason;
        rows.push_back({name, html_escape(problem_kind_name(r.kind)),
                        fmt::format(R"(<span class="state s-{0}">{0}</span>)", state), verdict, time,
                        r.torch ? format_speedup(r.vs_reference) : "-",
                        r.torch ? (r.compile_missing ? "n/a" : format_speedup(r.vs_compile)) : "-",
                        r.torch ? "-" : format_speedup(r.vs_reference),
                        r.roofline ? fmt::format("{:.0f}%", 100 * *r.roofline) : "-", std::to_string(r.candidates),
                        html_escape(format_dollars(r.cost_usd)), r.held_s > 0 ? format_elapsed(r.held_s) : "-",
                        html_escape(first_line(why, 240))});
    }
    return html_table(columns, rows, "data") +
           R"(<p class="caption">Each problem links to its own <code>kforge report</code> page (written beside its )"
           R"(archive). Best time: the best kernel's median (* the geometric mean over several bench shapes). % of )"
           R"(roofline: the device's floor time over the best's. GPU time: how long its runs held a GPU (shared )"
           R"(with other runs under <code>--per-gpu</code>), startup )"
           R"(included.</p>)";
}

// A field of a run record in suite.json, which an older kforge, a process killed mid-run or a hand
// edit may have left absent, null or of another type: then the fallback.
double number_field(const Json& record, const char* key, double fallback)
{
    return record.is_object() && record.contains(key) && record[key].is_number() ? record[key].get<double>() : fallback;
}

std::string text_field(const Json& record, const char* key, const char* fallback)
{
    return record.is_object() && record.contains(key) && record[key].is_string() ? record[key].get<std::string>()
                                                                                 : fallback;
}

std::string suite_gpu_use(const SuitePage& page)
{
    std::vector<std::vector<std::string>> rows;
    for (const auto& run : page.runs) {
        std::string when = number_field(run, "started_at", 0) > 0 ? format_local_time(number_field(run, "started_at", 0))
                                                                  : "-";
        if (!run.is_object() || !run.contains("gpus") || !run["gpus"].is_array())
            continue;
        bool interrupted = run.contains("interrupted") && run["interrupted"].is_boolean() && run["interrupted"].get<bool>();
        for (const auto& gpu : run["gpus"])
            rows.push_back({html_escape(when), html_escape(text_field(run, "host", "?")),
                            html_escape(text_field(run, "shard", "0/1")), html_escape(text_field(gpu, "label", "?")),
                            html_escape(text_field(gpu, "name", "")),
                            fmt::format("{:.0f}", number_field(gpu, "problems", 0)),
                            suite_percent(number_field(gpu, "busy", 0)), suite_percent(number_field(gpu, "search", 0)),
                            suite_percent(number_field(gpu, "held", 0)),
                            format_elapsed(number_field(gpu, "lock_wait_s", 0)),
                            format_elapsed(number_field(gpu, "window_s", 0)), interrupted ? "interrupted" : ""});
    }
    if (rows.empty())
        return R"(<p class="empty-note">No <code>suite run</code> has recorded its GPUs yet.</p>)";
    return html_table({{"suite run started"},
                       {"host"},
                       {"shard"},
                       {"GPU"},
                       {"model"},
                       {"problems", SuiteAlign::right},
                       {"busy", SuiteAlign::right},
                       {"searching", SuiteAlign::right},
                       {"held", SuiteAlign::right},
                       {"waited for the lock", SuiteAlign::right},
                       {"while problems remained", SuiteAlign::right},
                       {""}},
                      rows, "data") +
           R"(<p class="caption">Per <code>suite run</code> process and GPU: busy is the union of its runs' holds )"
           R"(of the GPU's measuring lock (verifying, timing, profiling, baselines; the time runs waited for the )"
           R"(lock is not busy); searching the time their searches ran; held the time at least one run held it, )"
           R"(startup (worker, compiles, baseline timing) and ending included; each over the time from the start )"
           R"(until the GPU found no problem left to start.</p>)";
}

std::string suite_settings(const SuitePage& page)
{
    const SuiteSettings& s = page.settings;
    std::string out = R"(<dl class="facts">)";
    auto fact = [&](std::string_view name, const std::string& value) {
        out += fmt::format("<dt>{}</dt><dd>{}</dd>", name, value);
    };
    fact("folder", "<code>" + html_escape(page.folder) + "</code>");
    fact("models", html_escape(s.models.empty() ? std::string("builtin") : join(s.models, ", ")));
    fact("budget per problem", s.budget ? std::to_string(*s.budget) + " candidates" : "optimize's default");
    fact("time per problem", html_escape(s.time.value_or("none")));
    fact("dollars for the suite", s.max_cost ? html_escape(format_dollars(*s.max_cost)) : "no limit");
    if (!s.optimize_args.empty())
        fact("optimize flags", "<code>" + html_escape(join(s.optimize_args, " ")) + "</code>");
    return out + "</dl>";
}

} // namespace

std::string render_suite_html(const SuitePage& page)
{
    std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                       "<meta name=\"generator\" content=\"kforge suite report\">";
    html += "<title>" + html_escape(page.title) + "</title><style>" + std::string(report_style_sheet()) +
            k_suite_extra_style + "</style></head>\n<body><main>";
    std::vector<std::string> states;
    for (const auto& [state, count] : page.summary.states)
        if (count > 0)
            states.push_back(fmt::format("{} {}", count, state));
    html += "<header><h1>" + html_escape(page.title) + "</h1>" +
            fmt::format(R"(<p class="sub">{} problems: {}. {} candidates.</p>)", page.summary.problems,
                        html_escape(join(states, ", ")), page.summary.candidates) +
            suite_headline(page) + "</header>\n";
    html += suite_section("metrics", "Correctness and fast_p", suite_metrics_table(page));
    html += suite_section("speedups", "How the speedups are distributed",
                          R"(<div class="plots">)" + render_fast_p_curve(page) + render_speedup_strips(page) + "</div>");
    html += suite_section("problems", "Problems", suite_problem_table(page));
    html += suite_section("gpus", "GPUs", suite_gpu_use(page));
    html += suite_section("settings", "Settings", suite_settings(page));
    html += fmt::format(R"(<footer class="muted">Written by <code>kforge suite report</code> (kforge {}) on {}. One )"
                        R"(self-contained file: no scripts, nothing fetched.</footer>)",
                        KFORGE_VERSION, format_local_time(page.generated_at));
    return html + "</main></body></html>\n";
}

} // namespace kforge
