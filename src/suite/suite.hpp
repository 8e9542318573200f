// The suite room's entry: `kforge suite run` and `kforge suite report` as functions, for the command
// line (src/cli/cmd_suite.cpp) and any other front end.
//
// A suite is a folder (manifest.hpp) of many problems, each optimised by its own `kforge optimize`
// or `resume` child on one GPU (runner.hpp), planned from files alone (plan.hpp), and read back into
// one row per problem and the field's summary (results.hpp), as text, JSON or a page (page.hpp).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "search/search_config.hpp"
#include "suite/manifest.hpp"

namespace kforge {

// The most runs --per-gpu N may put on one GPU.
inline constexpr int k_most_runs_per_gpu = 16;

struct SuiteRunRequest {
    std::vector<std::string> paths;         // problem files or folders (optional when resuming)
    std::string output;                     // the suite folder, as given (-o)
    std::optional<std::pair<int, int>> shard; // (I, N) from --shard I/N; none: under mpirun or
                                              // srun each rank is a shard, else the whole suite
    std::string gpus = "all";               // --gpus: all, N or indices
    int per_gpu = 0;                        // runs at once on one GPU; 0: auto (concurrency.hpp)
    int searches_per_gpu = 0;               // runs searching at once on one GPU, in turns; 0: all
    bool retry_failed = false;              // run this shard's failed problems again
    ProgressMode progress = ProgressMode::automatic;
    bool json = false;                      // the final report as JSON
    std::optional<size_t> import_jobs;      // imports at once (default: cores / 2, 1 to 8)
    double import_time_limit_s = 600;
    // The settings this invocation names, over `stored` (the manifest's, or none for a new suite).
    // Called once before anything is written and again under the manifest's lock, where another
    // shard may have stored settings meanwhile. It makes the checks of `kforge optimize`'s own
    // command line, which the caller owns, so the suite stores only what its children will take;
    // throws Error(usage) naming the flag.
    std::function<SuiteSettings(const SuiteSettings& stored)> merge_settings;
};

// Creates or resumes the suite folder, runs this shard's problems to the end (or Ctrl-C), then
// prints every problem's row and the summary (text with each GPU's use, or JSON with --json) on
// stdout. Returns the exit code: 0 when every problem of this shard finished or was skipped, 1 when
// one failed or its archive cannot be read, 130 when interrupted. Everything that can be refused
// without running anything (flags, problem files, GPUs) is refused before the folder is touched.
int run_suite(const SuiteRunRequest& request);

struct SuiteReportOptions {
    std::string folder;
    bool json = false;
    std::string output; // HTML page; empty: none
    std::string title;
};

// Reads every problem's archive (read-only, nothing started) and prints the table, or the JSON
// document; with `output`, writes the suite's page and each problem's report page beside its
// archive. Returns the exit code (0); throws Error(bad_input) for a folder without a suite.json or
// with one that does not read.
int run_suite_report(const SuiteReportOptions& options);

} // namespace kforge
