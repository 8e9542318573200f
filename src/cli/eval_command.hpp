// `kforge eval`, shared by its two files: cmd_eval.cpp (a task and a kernel file) and
// cmd_eval_candidate.cpp (a run's candidate, re-measured and, when flagged, accepted).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/candidate.hpp"
#include "core/task.hpp"
#include "evaluator/worker/vendor_status.hpp"
#include "util/json_reader.hpp"

namespace kforge {

struct EvalCommandOptions {
    std::string task_path;     // a task spec; with --candidate, a run archive
    std::string file;
    bool compile_only = false;
    std::string arch;
    bool quick = false;
    bool held_out = false;
    bool profile = false;
    bool json = false;
    uint64_t secret = 0;
    double deadline_s = 10;
    std::optional<int64_t> candidate; // --candidate ID
    int64_t candidate_id = 0;         // CLI11's storage for --candidate
    bool accept = false;
};

// One evaluation on the GPU and what the session measured around it.
struct EvalRun {
    Evaluation evaluation;
    Json environment;
    std::vector<Measurement> baselines;
    std::vector<VendorBaselineStatus> vendor;
};

// Evaluates `source` against `task` on this machine's GPU (confirmation timing unless --quick).
// Throws Error(runtime) without a usable GPU.
EvalRun evaluate_source(const Task& task, const std::string& source, const EvalCommandOptions& options);

// Prints `run` as a table (or JSON with --json), flagged shapes with the reason, and `extra`'s keys
// merged into the JSON report (an "acceptance" object's "message" is also printed as text).
// Returns 0 for a correct verdict, 1 otherwise.
int print_evaluation(const Task& task, const EvalRun& run, const EvalCommandOptions& options, const Json& extra);

// `kforge eval RUN.kforge --candidate ID [--held-out] [--accept]` (cmd_eval_candidate.cpp).
int run_eval_candidate(const EvalCommandOptions& options);

} // namespace kforge
