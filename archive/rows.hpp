// What the archive's summary queries return: small rows for tables and plots, without the large
// fields (sources, prompts, replies) that the full records carry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/candidate.hpp"
#include "core/records.hpp"
#include "core/verdict.hpp"

namespace kforge {

// A candidate without its source, evaluation blobs and measurements.
struct CandidateSummary
{
    int64_t id = 0;
    std::optional<int64_t> parent_id;
    int island = 0;
    int generation = 0;
    Origin origin = Origin::llm;
    VerdictKind verdict = VerdictKind::no_code;
    std::optional<double> fitness;
    ParamPoint best_params;
    std::string note;
    double created_at = 0;
};

// One non-correct candidate and (the start of) its message.
struct FailureRow
{
    int64_t candidate_id = 0;
    VerdictKind verdict = VerdictKind::no_code;
    std::string message; // at most the length the query asked for
    Origin origin = Origin::llm;
    int island = 0;
    double created_at = 0;
};

// One point of the fitness-over-time series; every candidate appears, correct or not.
struct FitnessPoint
{
    int64_t candidate_id = 0;
    double created_at = 0;
    VerdictKind verdict = VerdictKind::no_code;
    std::optional<double> fitness;
};

// LLM usage summed over calls (all calls, or one provider and model).
struct LlmUsage
{
    std::string provider; // empty in the all-calls total
    std::string model;
    int64_t calls = 0;
    int64_t failed_calls = 0; // status other than "ok"
    int64_t input_tokens = 0;
    int64_t cached_input_tokens = 0;
    int64_t output_tokens = 0;
    double cost_usd = 0;             // calls with a known price only
    int64_t calls_without_price = 0; // cost_known == false: cost_usd undercounts these
    double latency_s = 0;
};

// One GPU over the whole run: what it measured and how busy it was, summed over sessions.
struct GpuTotals
{
    GpuUsage usage;          // summed over sessions; lost: in the latest session it served in
    int64_t candidates = 0;  // candidates whose recorded numbers it measured
    int sessions = 0;        // sessions it served in
};

// One placement of a MAP-Elites cell, current or replaced.
struct ElitePlacement
{
    Elite elite;
    double placed_at = 0;
    std::optional<double> replaced_at; // nullopt while it holds the cell
};

} // namespace kforge
