// `kforge suite report -o FILE.html`: the suite as one self-contained page (inline CSS and SVG, no
// scripts, nothing fetched), in the style of `kforge report`'s page, whose style sheet and SVG
// writer it shares. It reads top-down the way the field reads a suite: the headline rates, the
// fast_p table against each baseline, how the speedups are distributed, every problem with a link
// to its own `kforge report` page, and how busy each GPU was.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "suite/manifest.hpp"
#include "suite/results.hpp"

namespace kforge {

struct SuitePage {
    std::string title;
    std::string folder;                        // the suite folder, as shown
    std::vector<ProblemResult> results;
    SuiteSummary summary;
    std::map<std::string, std::string> links;  // problem id -> href of its report page (relative)
    SuiteSettings settings;
    Json runs = Json::array();                 // the manifest's records of `suite run` processes
    double generated_at = 0;                   // seconds since the epoch
};

std::string render_suite_html(const SuitePage& page);

// The distribution of speedups as inline SVG (plots.cpp): the share of problems
// correct and faster than p, over p, per baseline (the fast_p curve), and every problem's speedup
// as a dot per baseline. Problems without a correct kernel show as marks left of the axis.
std::string render_fast_p_curve(const SuitePage& page);
std::string render_speedup_strips(const SuitePage& page);

} // namespace kforge
