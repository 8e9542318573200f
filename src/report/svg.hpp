// A small writer of inline SVG for the HTML report: shapes with optional hover titles, text, and
// linear scales with round tick values. Coordinates are written with one decimal, which is finer
// than a screen pixel and keeps large plots small.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kforge {

class SvgCanvas
{
public:
    // An <svg> of `width` x `height` user units that scales down to its container; `label` is its
    // accessible name (aria-label). Escapes the label.
    SvgCanvas(double width, double height, std::string_view label, std::string_view css_class = {});

    // `attrs` is raw markup (class="...", fill="..."), written as given: escape data in it with
    // html_escape(). `title`, when not empty, becomes a <title> child (a hover tooltip), escaped.
    void rect(double x, double y, double w, double h, std::string_view attrs,
              std::string_view title = {});
    void circle(double cx, double cy, double r, std::string_view attrs,
                std::string_view title = {});
    void line(double x1, double y1, double x2, double y2, std::string_view attrs);
    void path(std::string_view d, std::string_view attrs);
    // `content` is escaped.
    void text(double x, double y, std::string_view content, std::string_view attrs = {});
    // Raw markup (a <g> or <defs>), written as given.
    void raw(std::string_view markup);
    // The document, closed. The canvas is spent afterwards.
    std::string finish();

private:
    // <tag geometry attrs/>, or with a <title> child when `title` is not empty.
    void shape(std::string_view tag, const std::string& geometry, std::string_view attrs,
               std::string_view title);

    std::string m_out;
};

// Maps data values in [lo, hi] onto pixels in [px_lo, px_hi] (px_hi may be smaller, for y axes).
struct LinearScale
{
    double lo = 0;
    double hi = 1;
    double px_lo = 0;
    double px_hi = 1;

    double operator()(double value) const;
};

// About `target` round values (1, 2 or 5 times a power of ten) covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target);

} // namespace kforge
