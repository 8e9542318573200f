// What the search shows a model, built from archived records: candidate views for prompts, the
// GPU's facts, and the duplicate key of a source.
#pragma once

#include <string>
#include <vector>

#include "agents/proposer.hpp"
#include "core/candidate.hpp"
#include "util/json_reader.hpp"

namespace kforge {

// The key duplicates are rejected by: the normalised source (comments and whitespace do not count)
// plus the plan block (which lives in a comment, so it is hashed on its own). Stored as
// Candidate::source_hash.
std::string candidate_hash(const std::string& source);

// A stored candidate as a prompt shows it: source, verdict and message, fitness, per-shape bench
// times beside the reference (confirmed timings preferred; the reference timed in the same
// confirmation run, else the run's baselines), descriptors and the metrics worth reading (the
// search's own bookkeeping keys are left out).
CandidateView candidate_view(const Candidate& candidate, const std::vector<Measurement>& baselines);

// The GPU facts a prompt shows, from the evaluator's environment(): name, SMs, memory, caches,
// clocks, and the rates the prompt turns into roofline floors (memory_bandwidth_gbps: the measured
// copy bandwidth where known; peak_fp32_tflops and the tensor-core peaks).
Json hardware_facts(const Json& environment);

} // namespace kforge
