// Markup helpers for the HTML report: escaping, the colour scale of the heatmaps, a minimal SVG
// writer and round tick values. Everything the page shows passes through html_escape() once, at
// the point where it becomes markup; candidate sources and LLM notes contain <, > and &.
#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "report/page.hpp"
#include "report/svg.hpp"

namespace kforge {
namespace {

struct Rgb
{
    double r, g, b;
};

// Five samples of the viridis colour map (dark blue-violet to yellow), interpolated linearly:
// perceptually even enough for a heatmap and readable by most colour-blind viewers.
constexpr std::array<Rgb, 5> k_ramp{{{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98},
                                     {253, 231, 37}}};

} // namespace

std::string html_escape(std::string_view text)
{
    std::string out;
    out.reserve(text.size() + text.size() / 8);
    for (char c : text) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        default: out += c;
        }
    }
    return out;
}

std::string group_digits(int64_t value)
{
    std::string digits = std::to_string(value < 0 ? -value : value);
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0)
            out += ',';
        out += digits[i];
    }
    return value < 0 ? "-" + out : out;
}

std::string format_span(double seconds)
{
    seconds = std::max(seconds, 0.0);
    if (seconds < 3600)
        return fmt::format("{:.0f} min", seconds / 60);
    if (seconds < 48 * 3600)
        return fmt::format("{:.1f} h", seconds / 3600);
    return fmt::format("{:.1f} days", seconds / 86400);
}

std::string colour_scale(double t)
{
    t = std::isfinite(t) ? std::clamp(t, 0.0, 1.0) : 0.0;
    double position = t * (k_ramp.size() - 1);
    size_t index = std::min(static_cast<size_t>(position), k_ramp.size() - 2);
    double f = position - static_cast<double>(index);
    const Rgb& a = k_ramp[index];
    const Rgb& b = k_ramp[index + 1];
    auto mix = [f](double x, double y) { return static_cast<int>(std::lround(x + (y - x) * f)); };
    return fmt::format("#{:02x}{:02x}{:02x}", mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b));
}

SvgCanvas::SvgCanvas(double width, double height, std::string_view label, std::string_view css_class)
{
    m_out = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {:.0f} {:.0f}" )"
                        R"(width="{:.0f}" height="{:.0f}" role="img" aria-label="{}")",
                        width, height, width, height, html_escape(label));
    if (!css_class.empty())
        m_out += fmt::format(R"( class="{}")", css_class);
    m_out += ">";
}

void SvgCanvas::rect(double x, double y, double w, double h, std::string_view attrs,
                     std::string_view title)
{
    shape("rect", fmt::format(R"(x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}")", x, y, w, h),
          attrs, title);
}

void SvgCanvas::circle(double cx, double cy, double r, std::string_view attrs,
                       std::string_view title)
{
    shape("circle", fmt::format(R"(cx="{:.1f}" cy="{:.1f}" r="{:.1f}")", cx, cy, r), attrs, title);
}

void SvgCanvas::shape(std::string_view tag, const std::string& geometry, std::string_view attrs,
                      std::string_view title)
{
    m_out += fmt::format("<{} {} {}", tag, geometry, attrs);
    if (title.empty()) {
        m_out += "/>";
        return;
    }
    m_out += "><title>";
    m_out += html_escape(title);
    m_out += fmt::format("</title></{}>", tag);
}

void SvgCanvas::line(double x1, double y1, double x2, double y2, std::string_view attrs)
{
    m_out += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" {}/>)", x1, y1,
                         x2, y2, attrs);
}

void SvgCanvas::path(std::string_view d, std::string_view attrs)
{
    m_out += fmt::format(R"(<path d="{}" {}/>)", d, attrs);
}

void SvgCanvas::text(double x, double y, std::string_view content, std::string_view attrs)
{
    m_out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" {}>{}</text>)", x, y, attrs,
                         html_escape(content));
}

void SvgCanvas::raw(std::string_view markup)
{
    m_out += markup;
}

std::string SvgCanvas::finish()
{
    m_out += "</svg>";
    return std::move(m_out);
}

double LinearScale::operator()(double value) const
{
    if (hi == lo)
        return (px_lo + px_hi) / 2;
    return px_lo + (value - lo) / (hi - lo) * (px_hi - px_lo);
}

std::vector<double> nice_ticks(double lo, double hi, int target)
{
    if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi) || target < 1)
        return {lo};
    // The step is mantissa * 10^exponent with mantissa 1, 2 or 5, whichever gives a count nearest
    // to the target. Ticks are computed from integers, so 0.03 comes out as 0.03, not 0.030000001.
    double raw_step = (hi - lo) / target;
    int exponent = static_cast<int>(std::floor(std::log10(raw_step)));
    double ratio = raw_step / std::pow(10.0, exponent);
    int mantissa = ratio >= std::sqrt(50.0) ? 10 : ratio >= std::sqrt(10.0) ? 5 : ratio >= std::sqrt(2.0) ? 2 : 1;
    double scale = std::pow(10.0, std::abs(exponent));
    auto value = [&](int64_t k) {
        double units = static_cast<double>(k * mantissa);
        return exponent >= 0 ? units * scale : units / scale;
    };
    double step = value(1);
    std::vector<double> ticks;
    for (auto k = static_cast<int64_t>(std::ceil(lo / step - 1e-9)); value(k) <= hi + step * 1e-9; ++k)
        ticks.push_back(value(k));
    return ticks;
}

} // namespace kforge
