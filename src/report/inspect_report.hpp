// `kforge inspect`: the report is built once as a JSON document (what --json prints) and the text
// view is rendered from that document, so the two always carry the same content. The same document
// is the core of `kforge report`'s page (page.hpp); `kforge dataset` writes plans as plan_json() does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "archive/archive.hpp"
#include "core/technique.hpp"
#include "util/json_reader.hpp"

namespace kforge {

struct InspectOptions
{
    std::string archive_path;
    size_t top = 10;                // rows of the top-candidates table
    bool failures = false;          // also list recent failures
    bool calls = false;             // also list LLM usage per model and recent calls
    std::optional<int64_t> lineage; // also show this candidate's ancestry
    bool grid = false;              // also draw each island's MAP-Elites grid
    bool gpu_work = true;           // the "gpu" section (reads every candidate's runs)
    size_t limit = 30;              // rows of the failure and call lists
    bool json = false;
};

// `kforge inspect`: opens the archive read-only, builds the report in one read transaction and
// prints it (JSON with options.json, else the text view) on stdout. Returns the exit code: 0, or 3
// when the archive is damaged (what could be read is printed, each problem logged as an error).
int run_inspect(const InspectOptions& options);

// The report on `archive` as one JSON document; see inspect_text.cpp for the sections. Throws
// Error(bad_input) when --lineage names a candidate the archive does not hold.
Json build_inspect_report(const Archive& archive, const InspectOptions& options);

// The text view of a report from build_inspect_report().
std::string render_inspect_text(const Json& report);

// Formatting shared by inspect's text view and the HTML report (page.hpp).
// "2.50x" from a fitness (a speedup over the baseline); "-" for null.
std::string format_fitness(const Json& fitness);
// "BLOCK=128,VEC=4" from a params object; "-" when it is empty.
std::string format_params(const Json& params);
// "$0.110" below ten dollars, "$12.50" above.
std::string format_dollars(double dollars);
// The MAP-Elites grids of every island (grid.cpp): the axes and bins, and per island
// its current elites with their cells and fitness.
Json grid_section(const Archive& archive);
// The islands a run has: as many as its configuration (run.config.search.islands) names, and at
// least up to the highest island holding an elite.
int run_island_count(const Json& run_config, const std::vector<Elite>& elites);
// Each island's grid as a text heatmap.
std::string render_grid_text(const Json& grid);
// The GPUs that measured the run (gpus.cpp): {"gpus": [{label, host, rank,
// device_index, uuid, name, candidates, evaluations, busy_s, wall_s, busy, restarts, sessions,
// lost}], "candidates_measured", "candidates_without_gpu"}, and its text view.
Json gpus_section(const Archive& archive);
std::string render_gpus_text(const Json& section);
// How the run's GPU time went (gpu_work.cpp): runs measured and reused, and the time spent
// measuring a (binary, plan, params) point again that earlier runs had covered; with the seconds
// from the first candidate's record to the run's start.
Json gpu_work_section(const Archive& archive);
// "GPU time on repeats: 3.1 s of 52.0 s (6%); ..." from that section.
std::string gpu_work_text(const Json& gpu);
// Correct candidates timed below the roofline floor (flagged.cpp): [{id, island,
// origin, measured_fitness, fitness (null until accepted), times_ns, below_floor: [{shape,
// median_ns, floor_ns, roofline_ns, why}], accepted, acceptance | accept_with}], oldest first; its
// text view ("" when empty) and the report's HTML section.
Json flagged_section(const Archive& archive);
std::string render_flagged_text(const Json& flagged);
std::string render_flagged_html(const Json& flagged);

// How the run's two-phase plans went (techniques.cpp): {"plans", "parsed", "repaired",
// "failed", "followed", "ignored", "unchecked", "menus", "rows": [{technique, title, on_menu, tried,
// correct, improved, mean_gain, gains, predicted, measured, predictions, missing}]}, the most tried
// first; and its text view. An archive without plans has "plans": 0 and no rows.
Json techniques_section(const Archive& archive);
std::string render_techniques_text(const Json& section);
// "12 plans (9 read, ...)": the section's counts in one line.
std::string techniques_heading(const Json& section);
// One plan as the lineage shows it: status, techniques with what the code shows of each, steps,
// predicted and measured speedup, followed.
Json plan_json(const CandidatePlan& plan);
// "vectorize-16b + cache-hints (missing), expected 1.30x measured 1.12x" ("" for null).
std::string plan_summary_text(const Json& plan);

} // namespace kforge
