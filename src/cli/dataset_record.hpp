// `kforge dataset`: the records of the kforge.dataset/1 format (docs/dataset.md), one JSON object
// per line, built from what a run archive stores. Records are self-contained: each repeats the run
// facts a training pipeline needs, so lines can be shuffled, filtered and mixed across runs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/candidate.hpp"
#include "core/records.hpp"
#include "core/technique.hpp"
#include "util/json_reader.hpp"

namespace kforge {

inline constexpr const char* k_dataset_schema = "kforge.dataset/1";

// What every record of one archive repeats.
struct DatasetRun
{
    std::string archive; // the archive's file name
    RunInfo run;
    std::vector<Measurement> baselines; // the run's own baseline timings (Archive::baselines())
};

// How a candidate compares with what the archive held before it. Only candidates with a fitness
// (correct, timed, not flagged below the roofline) can improve.
struct Improvement
{
    std::optional<double> parent_fitness; // null: no parent, or a parent without a fitness
    std::optional<double> best_before;    // the highest fitness among candidates stored earlier
    bool new_best = false;                // fitness above best_before (or the first fitness)
    bool improving = false;               // new_best, or fitness above parent_fitness
};

// Judges `candidate` against its parent's fitness and the best fitness stored before it.
Improvement judge_improvement(const Candidate& candidate, std::optional<double> parent_fitness,
                              std::optional<double> best_before);

// The record of one candidate. `call` is the stored call named by the candidate's llm_call_id, or
// null when it has none; a call of the builtin proposer becomes the record's "builtin" field and
// the record's "call" stays null, since no model was asked.
// `plan` is plan_record()'s object for a two-phase candidate, null otherwise.
Json candidate_record(const DatasetRun& run, const Candidate& candidate, const LlmCallRecord* call,
                      const Improvement& improvement, const Json& plan = Json());

// The "plan" of a two-phase candidate's record: the plan as inspect shows it (status, techniques
// with what the code shows, steps, predicted and measured speedup) and `calls`, the planner's calls
// in full except the one the record's "call" already holds (a plan that could not be read is the
// candidate's own call).
Json plan_record(const CandidatePlan& plan, const std::vector<LlmCallRecord>& calls);

// The record of a model call from which no candidate was stored (a failed or duplicate proposal, an
// earlier attempt of a proposal, a meta-prompt or lesson call).
Json call_record(const DatasetRun& run, const LlmCallRecord& call);

} // namespace kforge
