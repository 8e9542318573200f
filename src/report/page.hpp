// `kforge report`: one self-contained HTML page about a run (inline CSS and SVG, no scripts, no
// network), for people who would rather look at a search than read it.
//
// The page is built in two steps, like inspect's: gather_report_data() reads everything the page
// shows from the archive (inside the caller's read transaction, so every section describes the
// same moment of a run that may still be writing), then render_report_html() turns that data into
// markup without touching the archive. The inspect report document (inspect_report.hpp) is the
// core of the data, so the two commands always agree on the numbers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "archive/archive.hpp"
#include "util/json_reader.hpp"
#include "util/text_table.hpp"

namespace kforge {

// What the page shows; everything else comes from the archive.
struct ReportData
{
    Json inspect;                            // build_inspect_report() with calls and the best's lineage
    std::optional<Candidate> best;           // in full: source, measurements, descriptors, metrics
    std::vector<FitnessPoint> series;        // every candidate, oldest first
    std::vector<LlmCallRecord> calls;        // every LLM call, without request and reply
    std::vector<Elite> elites;               // current occupants of every island
    std::map<int64_t, ParamPoint> elite_params; // best params of each elite, by candidate id
    int islands = 0;                         // islands to draw: the run's config, or as many as hold elites
    double generated_at = 0;                 // when the data were read, seconds since the epoch
};

struct ReportOptions
{
    std::string archive_path;
    std::string output; // empty: the archive's path with .html
    std::string title;  // empty: default_report_title()
};

// `kforge report`: reads the archive (read-only, one transaction), writes the page atomically to
// options.output and prints its path on stdout. Returns the exit code (0); throws DamagedArchive
// for an archive with holes (no page is written), Error(runtime) for I/O.
int run_report(const ReportOptions& options);

// Reads the page's data from `archive`. Call it inside archive.atomically() so that all queries
// see one snapshot.
ReportData gather_report_data(const Archive& archive);

// The whole page. `title` goes into <title> and the heading.
std::string render_report_html(const ReportData& data, const std::string& title);

// The title used when --title is not given: "kforge report: TASK (RUN_ID)".
std::string default_report_title(const ReportData& data);

// --- sections, each one self-contained HTML (plots.cpp, elite_grids.cpp, the verdicts in page.cpp,
//     the tables in tables.cpp) ---

// Best fitness over candidates and over dollars spent, as two inline SVG plots with captions.
std::string render_progress_plots(const ReportData& data);
// Every island's MAP-Elites grid as a heatmap, with its colour legend and layout key. Each cell is
// an SVG <rect class="cell elite"> or <rect class="cell empty"> with a <title> for hover.
std::string render_elite_grids(const ReportData& data);
// Verdict counts as a bar chart, with the most common failure messages.
std::string render_verdicts(const ReportData& data);
// The best candidate's per-shape timings against every baseline, with the roofline fraction.
std::string render_shape_table(const ReportData& data);
// The best's ancestry, oldest first, with verdicts (long chains keep both ends); "" without a best.
std::string render_lineage(const ReportData& data);
// The top candidates (at most inspect's --top) with bench medians, and a note of how many more.
std::string render_top_table(const ReportData& data);
// LLM calls, tokens and dollars per provider and model, with a total row.
std::string render_costs(const ReportData& data);
// Per GPU: candidates measured, evaluations, busy time and share, restarts, lost or not.
std::string render_gpus(const ReportData& data);
// The two-phase plans' techniques: tried, correct, improved, mean gain, predicted against measured
// (techniques_page.cpp); "" for a run without plans.
std::string render_techniques(const ReportData& data);

// The page's style sheet (CSS without <style>), shared with `suite report`'s page.
std::string_view report_style_sheet();

// --- formatting and markup helpers (svg.cpp, html_table in tables.cpp) ---

// "4,685,964": digits grouped by thousands.
std::string group_digits(int64_t value);
// "42 min", "7.5 h", "3.2 days" for a span of seconds.
std::string format_span(double seconds);

// `text` with &, <, >, " and ' replaced by entities: safe in element content and quoted attributes.
std::string html_escape(std::string_view text);
// A <table> with a header row; `rows` hold markup (escape data first), right-aligned columns get
// class "num". Wrapped in a horizontally scrolling <div> for narrow windows.
std::string html_table(const std::vector<TextTable::Column>& columns,
                       const std::vector<std::vector<std::string>>& rows, std::string_view css_class);
// The viridis-like colour at `t` in [0, 1] (clamped), as "#rrggbb".
std::string colour_scale(double t);

} // namespace kforge
