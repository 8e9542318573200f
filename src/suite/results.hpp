// What a suite achieved: one row per problem, read from its run archive through the archive API,
// and the summary the field reports (KernelBench and the papers that use it; see
// research/kernelbench.md): the correctness rate, fast_p for p = 0, 1, 1.5, 2 against torch eager
// and against torch.compile, the geometric-mean speedup over correct problems, dollars and GPU
// hours. `suite report` prints and draws these; `suite run` prints them when it ends and uses the
// rows for its progress lines.
//
// The arithmetic, stated once:
//   - a problem is correct when its archive holds a correct candidate (its best);
//   - fast_p against a baseline = the problems that are correct and more than p times faster than
//     that baseline, over the problems that have the baseline; fast_0 is therefore the correctness
//     rate among them;
//   - torch eager is the reference of an imported PyTorch program, so its speedup is the best's
//     fitness; torch.compile is the geometric mean over the bench shapes of the torch.compile time
//     over the best's time (each baseline timed beside the best where it was, else the run's own
//     baseline timing); a bundled task's speedup is over its own reference (the fitness);
//   - the problems that have a baseline: every imported program for torch eager; for torch.compile
//     the same, less those whose run timed its baselines without torch.compile (the program does not
//     compile); a problem that failed before timing anything still counts, as not correct;
//   - problems without a correct kernel (failed, skipped, not yet run, or never correct) are in
//     every denominator they belong to and in no numerator;
//   - the geometric mean is over the correct problems that have the baseline.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "suite/manifest.hpp"
#include "util/json_reader.hpp"

namespace kforge {

struct ProblemResult {
    std::string id;
    ProblemKind kind = ProblemKind::spec;
    ProblemState state = ProblemState::waiting;
    std::string reason;
    std::string model;
    std::string task;                      // the task's name ("" before its run made an archive)
    std::string archive;                   // as the manifest stores it (relative to the suite)
    bool torch = false;                    // its reference is a PyTorch program
    bool has_archive = false;
    std::string error;                     // why its archive could not be read ("" when it could)
    int64_t candidates = 0;
    std::map<std::string, int64_t> verdicts; // every verdict name, with 0s
    std::string verdict;                   // "correct", else the furthest verdict reached; "" without candidates
    std::optional<int64_t> best_id;
    std::optional<double> best_time_ns;    // the best's median, geometric mean over the bench shapes
    int bench_shapes = 0;
    std::optional<double> vs_reference;    // the best's fitness: over torch eager, or the task's reference
    std::optional<double> vs_compile;      // over torch.compile
    bool compile_missing = false;          // its baselines were timed, torch.compile not among them
    std::optional<double> roofline;        // the best's share of the roofline, geometric mean over shapes
    double cost_usd = 0;                   // model dollars its archive records
    double busy_s = 0;                     // GPU busy time its archive records (evaluations)
    double held_s = 0;                     // time its sessions held a GPU (the manifest's sessions)
    int sessions = 0;

    bool correct() const { return best_id.has_value(); }
    Json to_json() const;
};

// The row of `problem` (state from the manifest, results from its archive, if any). `now` (seconds
// since the epoch) ends the session of a problem that is running. Never throws for an unreadable
// archive: the row says why in `error`.
ProblemResult read_problem_result(const SuiteFolder& folder, const SuiteProblem& problem, double now);

// The p values of fast_p.
inline constexpr double k_fast_p_levels[] = {0.0, 1.0, 1.5, 2.0};

struct BaselineSummary {
    std::string baseline;                  // "torch_eager", "torch_compile", "reference"
    std::string label;                     // "torch eager", "torch.compile", "own reference"
    int64_t problems = 0;                  // that have this baseline
    int64_t correct = 0;
    std::vector<int64_t> fast;             // per k_fast_p_levels: correct and faster than p
    std::optional<double> geomean;         // over the correct ones with a speedup
    int64_t geomean_over = 0;

    double fast_share(size_t level) const;
};

struct SuiteSummary {
    int64_t problems = 0;
    std::map<std::string, int64_t> states; // every state name, with 0s
    int64_t correct = 0;
    int64_t candidates = 0;
    std::vector<BaselineSummary> baselines; // torch eager, torch.compile, own reference (in that order)
    double cost_usd = 0;
    double gpu_hours = 0;                  // GPUs held by the problems' runs (runs sharing a GPU: each)
    double busy_gpu_hours = 0;             // of which measuring (the archives' busy time)

    double correctness_rate() const { return problems ? static_cast<double>(correct) / static_cast<double>(problems) : 0; }
};

// The speedup of `result` against `baseline` ("torch_eager", "torch_compile", "reference"); nullopt
// when it has none (not correct, or no such timing). has_baseline(): whether the problem counts
// for that baseline at all.
std::optional<double> speedup_against(const ProblemResult& result, const std::string& baseline);
bool has_baseline(const ProblemResult& result, const std::string& baseline);

SuiteSummary summarize_suite(const std::vector<ProblemResult>& results);

// {"suite": FOLDER, "problems": [rows], "summary": {...}}: what `suite report --json` prints.
Json suite_report_json(const std::string& folder, const std::vector<ProblemResult>& results,
                       const SuiteSummary& summary);
// The table and the summary as text.
std::string render_suite_text(const std::vector<ProblemResult>& results, const SuiteSummary& summary);

// "1.52x" or "-".
std::string format_speedup(const std::optional<double>& speedup);

} // namespace kforge
