// `kforge dataset`: the records of the kforge.dataset/1 format (docs/dataset.md), one JSON object
// per line, built from what a run archive stores. Records are self-contained: each repeats the run
// facts a training pipeline needs, so lines can be shuffled, filtered and mixed across runs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/candidate.hpp"
#include "core/records.hpp"
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
Json candidate_record(const DatasetRun& run, const Candidate& candidate, const LlmCallRecord* call,
                      const Improvement& improvement);

// The record of a model call from which no candidate was stored (a failed or duplicate proposal, an
// earlier attempt of a proposal, a meta-prompt or lesson call).
Json call_record(const DatasetRun& run, const LlmCallRecord& call);

} // namespace kforge
