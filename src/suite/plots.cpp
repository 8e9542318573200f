// The suite page's two pictures of the speedups (page.hpp): the fast_p curve per baseline and
// a strip of dots per baseline, both on a log2 speedup axis shared by the two, so a problem sits at
// the same x in each. The curve is a step line: fast_p only changes where some problem's speedup
// is. Names here carry a suite_ prefix, which tells them from report's plots (report/plots.cpp).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/page.hpp"
#include "report/svg.hpp"
#include "suite/page.hpp"

namespace kforge {
namespace {

constexpr double k_suite_plot_w = 640;
constexpr double k_suite_left = 112;  // room for the "not correct" marks and the row labels
constexpr double k_suite_right = 22;
constexpr double k_suite_top = 16;
constexpr double k_suite_curve_h = 300;
constexpr double k_suite_curve_bottom = 44;
constexpr double k_suite_row_h = 46;

struct SuiteSeries {
    std::string baseline;
    std::string label;
    std::string colour;
    int64_t problems = 0;
    std::vector<std::pair<double, std::string>> speedups; // correct problems with a speedup, ascending
    std::vector<std::string> not_correct;                 // ids
};

std::string_view suite_colour(const std::string& baseline)
{
    if (baseline == "torch_eager")
        return "rgb(9,105,218)";
    if (baseline == "torch_compile")
        return "rgb(130,80,223)";
    return "rgb(26,127,55)";
}

std::vector<SuiteSeries> suite_series(const SuitePage& page)
{
    std::vector<SuiteSeries> out;
    for (const auto& b : page.summary.baselines) {
        if (b.problems == 0)
            continue;
        SuiteSeries s{b.baseline, b.label, std::string(suite_colour(b.baseline)), b.problems, {}, {}};
        for (const auto& r : page.results) {
            if (!has_baseline(r, b.baseline))
                continue;
            if (auto speedup = speedup_against(r, b.baseline))
                s.speedups.push_back({*speedup, r.id});
            else if (!r.correct())
                s.not_correct.push_back(r.id);
        }
        std::sort(s.speedups.begin(), s.speedups.end());
        out.push_back(std::move(s));
    }
    return out;
}

// The log2 range both pictures use: at least 1/4x to 4x, widened to every speedup with a margin.
std::pair<double, double> suite_log_range(const std::vector<SuiteSeries>& series)
{
    double lo = -2, hi = 2;
    for (const auto& s : series)
        for (const auto& [speedup, id] : s.speedups) {
            lo = std::min(lo, std::floor(std::log2(speedup) - 0.25));
            hi = std::max(hi, std::ceil(std::log2(speedup) + 0.25));
        }
    return {lo, hi};
}

std::string suite_times_label(double exponent)
{
    return fmt::format("{:g}x", std::exp2(exponent));
}

// Vertical grid lines at powers of two, and dashed lines at the fast_p levels 1, 1.5 and 2.
void suite_speedup_axis(SvgCanvas& svg, const LinearScale& x, double top, double bottom, bool labels)
{
    for (double e = std::ceil(x.lo); e <= x.hi + 1e-9; e += 1) {
        svg.line(x(e), top, x(e), bottom, R"(class="grid")");
        if (labels)
            svg.text(x(e), bottom + 16, suite_times_label(e), R"(class="tick" text-anchor="middle")");
    }
    for (double p : {1.0, 1.5, 2.0}) {
        double px = x(std::log2(p));
        svg.line(px, top, px, bottom, R"(class="ref-line")");
        if (labels)
            svg.text(px + 3, top + 11, fmt::format("fast_{:g}", p), R"(class="ref-label")");
    }
}

} // namespace

std::string render_fast_p_curve(const SuitePage& page)
{
    std::vector<SuiteSeries> series = suite_series(page);
    if (series.empty())
        return R"(<p class="empty-note">No problems yet.</p>)";
    auto [lo, hi] = suite_log_range(series);
    double bottom = k_suite_curve_h - k_suite_curve_bottom;
    LinearScale x{lo, hi, k_suite_left, k_suite_plot_w - k_suite_right};
    LinearScale y{0, 1, bottom, k_suite_top};
    SvgCanvas svg(k_suite_plot_w, k_suite_curve_h, "share of problems correct and faster than p, over p", "plot");
    for (double v : {0.0, 0.25, 0.5, 0.75, 1.0}) {
        svg.line(k_suite_left, y(v), k_suite_plot_w - k_suite_right, y(v), R"(class="grid")");
        svg.text(k_suite_left - 6, y(v) + 4, fmt::format("{:.0f}%", 100 * v), R"(class="tick" text-anchor="end")");
    }
    suite_speedup_axis(svg, x, k_suite_top, bottom, true);
    svg.rect(k_suite_left, k_suite_top, k_suite_plot_w - k_suite_left - k_suite_right, bottom - k_suite_top,
             R"(class="frame")");
    svg.text((k_suite_left + k_suite_plot_w - k_suite_right) / 2, k_suite_curve_h - 6, "p (speedup over the baseline, log scale)",
             R"(class="axis-title" text-anchor="middle")");
    svg.text(k_suite_left - 44, (k_suite_top + bottom) / 2, "fast_p",
             fmt::format(R"a(class="axis-title" text-anchor="middle" transform="rotate(-90 {:.0f} {:.0f})")a",
                         k_suite_left - 44, (k_suite_top + bottom) / 2));
    double legend_y = k_suite_top + 14;
    for (const auto& s : series) {
        double n = static_cast<double>(s.problems);
        auto above = static_cast<double>(s.speedups.size());
        std::string d = fmt::format("M{:.1f} {:.1f}", x(lo), y(above / n));
        for (const auto& [speedup, id] : s.speedups) {
            above -= 1;
            d += fmt::format("H{:.1f}V{:.1f}", x(std::log2(speedup)), y(above / n));
        }
        d += fmt::format("H{:.1f}", x(hi));
        svg.path(d, fmt::format(R"(fill="none" stroke="{}" stroke-width="2.4")", s.colour));
        svg.rect(k_suite_plot_w - k_suite_right - 190, legend_y - 9, 14, 4, fmt::format(R"(fill="{}")", s.colour));
        svg.text(k_suite_plot_w - k_suite_right - 170, legend_y - 3,
                 fmt::format("vs {} ({} problem{})", s.label, s.problems, s.problems == 1 ? "" : "s"),
                 R"(class="tick")");
        legend_y += 16;
    }
    return "<figure>" + svg.finish() +
           R"(<figcaption>fast_p: the share of the problems that have the baseline whose kernel is correct and )"
           R"(more than p times faster. Each step down is one problem's speedup; the value at the left edge is the )"
           R"(share correct with a measured speedup.</figcaption></figure>)";
}

std::string render_speedup_strips(const SuitePage& page)
{
    std::vector<SuiteSeries> series = suite_series(page);
    if (series.empty())
        return "";
    auto [lo, hi] = suite_log_range(series);
    double height = k_suite_top + k_suite_row_h * static_cast<double>(series.size()) + 30;
    double bottom = height - 30;
    LinearScale x{lo, hi, k_suite_left, k_suite_plot_w - k_suite_right};
    SvgCanvas svg(k_suite_plot_w, height, "every problem's speedup, per baseline", "plot");
    suite_speedup_axis(svg, x, k_suite_top, bottom, true);
    for (size_t row = 0; row < series.size(); ++row) {
        const SuiteSeries& s = series[row];
        double mid = k_suite_top + k_suite_row_h * (static_cast<double>(row) + 0.5);
        svg.text(k_suite_left - 8, mid - 6, "vs " + s.label, R"(class="tick" text-anchor="end")");
        svg.text(k_suite_left - 8, mid + 8,
                 s.not_correct.empty() ? std::string("all correct")
                                       : fmt::format("{} not correct", s.not_correct.size()),
                 R"(class="tiny" text-anchor="end")");
        for (size_t i = 0; i < s.not_correct.size(); ++i)
            svg.line(k_suite_left - 4 - 3 * static_cast<double>(i % 8), mid + 12, k_suite_left - 4 - 3 * static_cast<double>(i % 8),
                     mid + 18, R"(class="fail-rug")");
        for (size_t i = 0; i < s.speedups.size(); ++i) {
            const auto& [speedup, id] = s.speedups[i];
            double jitter = (static_cast<double>(i % 5) - 2) * 4; // neighbours apart vertically
            svg.circle(x(std::log2(speedup)), mid + jitter, 4.5,
                       fmt::format(R"attr(fill="{}" fill-opacity=".75" stroke="rgb(255,255,255)" stroke-width="1")attr", s.colour),
                       fmt::format("{}: {:.2f}x {}", id, speedup, s.label));
        }
        if (row + 1 < series.size())
            svg.line(k_suite_left, mid + k_suite_row_h / 2, k_suite_plot_w - k_suite_right, mid + k_suite_row_h / 2,
                     R"(class="grid")");
    }
    svg.rect(k_suite_left, k_suite_top, k_suite_plot_w - k_suite_left - k_suite_right, bottom - k_suite_top,
             R"(class="frame")");
    return "<figure>" + svg.finish() +
           R"(<figcaption>Each correct problem's speedup over each baseline it has (hover a dot for the problem); )"
           R"(the red marks at the left count the problems without a correct kernel.</figcaption></figure>)";
}

} // namespace kforge
