// The progress plots of the HTML report: the best fitness so far over the candidates evaluated,
// and over the dollars spent on LLM calls.
//
// Both are step lines (the best only changes when a candidate beats it). The first plot also shows
// every correct candidate as a dot and every failed one as a tick along the bottom; these are
// snapped to whole pixels and drawn once per pixel, so a run of 100,000 candidates costs no more
// markup than the plot has pixels. Dollars come from the calls' start times: a candidate is placed
// at the money spent on every call started before it was stored, the calls still in flight included.
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "report/page.hpp"
#include "report/svg.hpp"

namespace kforge {
namespace {

constexpr double k_width = 620;
constexpr double k_height = 300;
constexpr double k_left = 58;
constexpr double k_right = 18;
constexpr double k_top = 14;
constexpr double k_bottom = 44;
constexpr double k_rug = 7; // height of the failure ticks along the bottom

// Tick labels with as many decimals as the tick step needs.
std::string tick_text(double value, double step, std::string_view prefix, std::string_view suffix)
{
    int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
    return fmt::format("{}{:.{}f}{}", prefix, value, decimals, suffix);
}

struct AxisText
{
    std::string label;
    std::string prefix;
    std::string suffix;
};

// Grid lines, ticks and axis titles of a plot whose data area is given by the two scales.
void draw_frame(SvgCanvas& svg, const LinearScale& x, const LinearScale& y, const AxisText& x_text,
                const AxisText& y_text)
{
    auto draw_ticks = [&](const LinearScale& scale, const AxisText& text, bool vertical) {
        std::vector<double> ticks = nice_ticks(scale.lo, scale.hi, vertical ? 5 : 6);
        double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
        for (double v : ticks) {
            double p = scale(v);
            std::string label = tick_text(v, step, text.prefix, text.suffix);
            if (vertical) {
                svg.line(k_left, p, k_width - k_right, p, R"(class="grid")");
                svg.text(k_left - 6, p + 4, label, R"(class="tick" text-anchor="end")");
            } else {
                svg.line(p, k_top, p, k_height - k_bottom, R"(class="grid")");
                svg.text(p, k_height - k_bottom + 16, label, R"(class="tick" text-anchor="middle")");
            }
        }
    };
    draw_ticks(y, y_text, true);
    draw_ticks(x, x_text, false);
    svg.rect(k_left, k_top, k_width - k_left - k_right, k_height - k_top - k_bottom,
             R"(class="frame")");
    svg.text((k_left + k_width - k_right) / 2, k_height - 6, x_text.label,
             R"(class="axis-title" text-anchor="middle")");
    svg.text(14, (k_top + k_height - k_bottom) / 2, y_text.label,
             fmt::format(R"a(class="axis-title" text-anchor="middle" transform="rotate(-90 14 {:.0f})")a",
                         (k_top + k_height - k_bottom) / 2));
}

LinearScale x_scale(double hi)
{
    return {0, hi, k_left, k_width - k_right};
}

// Fitness from 0 to a fifth above the best (room for its label), never below the reference's 1.0.
LinearScale y_scale(double best)
{
    return {0, std::max(best, 1.0) * 1.2, k_height - k_bottom, k_top};
}

void draw_reference_line(SvgCanvas& svg, const LinearScale& y)
{
    svg.line(k_left, y(1), k_width - k_right, y(1), R"(class="ref-line")");
    svg.text(k_width - k_right - 4, y(1) - 4, "reference 1.00x", R"(class="ref-label" text-anchor="end")");
}

// One step line through (x, best so far) points, extended flat to `x_end`.
std::string step_path(const std::vector<std::pair<double, double>>& points, double x_end)
{
    std::string d;
    for (size_t i = 0; i < points.size(); ++i)
        d += i == 0 ? fmt::format("M{:.1f} {:.1f}", points[i].first, points[i].second)
                    : fmt::format("H{:.1f}V{:.1f}", points[i].first, points[i].second);
    if (!points.empty())
        d += fmt::format("H{:.1f}", x_end);
    return d;
}

void mark_best(SvgCanvas& svg, double px, double py, double fitness, int64_t id)
{
    svg.circle(px, py, 5, R"(class="best-dot")", fmt::format("best: #{} at {:.2f}x", id, fitness));
    bool left_side = px > k_width * 0.7;
    svg.text(px + (left_side ? -9 : 9), py - 8, fmt::format("{:.2f}x (#{})", fitness, id),
             fmt::format(R"(class="best-label" text-anchor="{}")", left_side ? "end" : "start"));
}

std::string fitness_over_candidates(const ReportData& data)
{
    const auto& series = data.series;
    double best_fitness = data.best ? *data.best->evaluation.fitness : 0;
    LinearScale x = x_scale(std::max<double>(static_cast<double>(series.size()), 1));
    LinearScale y = y_scale(best_fitness);
    SvgCanvas svg(k_width, k_height, "best fitness over candidates evaluated", "plot");
    draw_frame(svg, x, y, {"candidates evaluated", "", ""}, {"speedup over the reference", "", "x"});
    draw_reference_line(svg, y);

    std::set<std::pair<long, long>> dots;
    std::set<long> failures;
    std::vector<std::pair<double, double>> steps;
    std::optional<double> best;
    std::pair<double, double> best_at{0, 0};
    for (size_t i = 0; i < series.size(); ++i) {
        double px = x(static_cast<double>(i + 1));
        const FitnessPoint& point = series[i];
        if (point.verdict != VerdictKind::correct || !point.fitness) {
            failures.insert(std::lround(px));
            continue;
        }
        double py = y(*point.fitness);
        dots.insert({std::lround(px), std::lround(py)});
        if (!best || *point.fitness > *best) {
            best = *point.fitness;
            steps.push_back({px, py});
            best_at = {px, py};
        }
    }
    std::string rug;
    for (long px : failures)
        rug += fmt::format("M{} {:.0f}v{:.0f}", px, k_height - k_bottom - k_rug, k_rug);
    if (!rug.empty())
        svg.path(rug, R"(class="fail-rug")");
    std::string cloud;
    for (const auto& [px, py] : dots)
        cloud += fmt::format("M{} {}h0", px, py);
    if (!cloud.empty())
        svg.path(cloud, R"(class="dots")");
    if (!steps.empty()) {
        svg.path(step_path(steps, x.px_hi), R"(class="best-line")");
        mark_best(svg, best_at.first, best_at.second, *best, data.best->id);
    } else {
        svg.text(k_width / 2, k_height / 2, "no correct candidate yet",
                 R"(class="plot-note" text-anchor="middle")");
    }
    return svg.finish();
}

// Per candidate (in series order), the dollars spent on calls started before it was stored.
std::vector<double> dollars_before_candidates(const ReportData& data, double& total)
{
    std::vector<std::pair<double, double>> calls; // (started_at, cost)
    for (const auto& call : data.calls)
        calls.push_back({call.started_at, call.cost_known ? call.cost_usd : 0});
    std::sort(calls.begin(), calls.end());
    std::vector<double> spent;
    double sum = 0;
    size_t next = 0;
    for (const auto& point : data.series) {
        while (next < calls.size() && calls[next].first <= point.created_at)
            sum += calls[next++].second;
        spent.push_back(sum);
    }
    total = sum;
    for (; next < calls.size(); ++next)
        total += calls[next].second;
    return spent;
}

std::string fitness_over_dollars(const ReportData& data, std::string& caption)
{
    double total = 0;
    std::vector<double> spent = dollars_before_candidates(data, total);
    int64_t unpriced = data.inspect["budget"]["llm"]["calls_without_price"].get<int64_t>();
    double best_fitness = data.best ? *data.best->evaluation.fitness : 0;
    LinearScale y = y_scale(best_fitness);
    if (total <= 0) {
        LinearScale x = x_scale(1);
        SvgCanvas svg(k_width, k_height, "best fitness over dollars spent: nothing spent", "plot");
        draw_frame(svg, x, y, {"dollars spent on LLM calls", "$", ""},
                   {"speedup over the reference", "", "x"});
        svg.text(k_width / 2, k_height / 2 - 8, "no dollars spent",
                 R"(class="plot-note" text-anchor="middle")");
        // Model calls only: the builtin proposer's records are not LLM calls (llm_usage_total()).
        int64_t model_calls = data.inspect["budget"]["llm"]["calls"].get<int64_t>();
        caption = model_calls == 0
                      ? "No LLM calls were made: every candidate came from the builtin proposer, "
                        "seeds or tuning, which cost nothing, so there is no cost curve to draw."
                      : fmt::format("The {} LLM calls have no known price ({} of them are missing "
                                    "from the price table), so there is no cost curve to draw.",
                                    model_calls, unpriced);
        return svg.finish();
    }
    LinearScale x = x_scale(total);
    SvgCanvas svg(k_width, k_height, "best fitness over dollars spent", "plot");
    draw_frame(svg, x, y, {"dollars spent on LLM calls", "$", ""},
               {"speedup over the reference", "", "x"});
    draw_reference_line(svg, y);
    std::vector<std::pair<double, double>> steps;
    std::optional<double> best;
    for (size_t i = 0; i < data.series.size(); ++i) {
        const FitnessPoint& point = data.series[i];
        if (point.verdict == VerdictKind::correct && point.fitness && (!best || *point.fitness > *best)) {
            best = *point.fitness;
            steps.push_back({x(spent[i]), y(*best)});
        }
    }
    if (!steps.empty()) {
        svg.path(step_path(steps, x.px_hi), R"(class="best-line")");
        mark_best(svg, steps.back().first, steps.back().second, *best, data.best->id);
    }
    caption = fmt::format("Best speedup against the money spent on LLM calls when each candidate "
                          "was stored ({} in all).",
                          tick_text(total, total < 10 ? 0.001 : 0.01, "$", ""));
    if (unpriced > 0)
        caption += fmt::format(" {} calls of unknown price are counted as free.", unpriced);
    return svg.finish();
}

} // namespace

std::string render_progress_plots(const ReportData& data)
{
    size_t failed = 0;
    for (const auto& point : data.series)
        failed += point.verdict != VerdictKind::correct;
    std::string dollars_caption;
    std::string dollars_plot = fitness_over_dollars(data, dollars_caption);
    return fmt::format(
        R"(<div class="plots"><figure>{}<figcaption>Best speedup so far (line) over the {} )"
        R"(candidates in the order they were stored; dots are correct candidates, red ticks )"
        R"(along the bottom the {} that failed.</figcaption></figure>)"
        R"(<figure>{}<figcaption>{}</figcaption></figure></div>)",
        fitness_over_candidates(data), group_digits(static_cast<int64_t>(data.series.size())),
        group_digits(static_cast<int64_t>(failed)), dollars_plot,
        html_escape(dollars_caption));
}

} // namespace kforge
