// Candidates and what is learnt about them: the records that flow from the agents and the evaluator
// into the archive and the search.
//
// The candidate lifecycle: a proposer (LLM, offline proposer, param sweep, seed) produces a source;
// the search rejects duplicates by normalised hash; the evaluator compiles, verifies, times and
// describes it and returns an Evaluation; the search stores Candidate + Evaluation in one archive
// transaction, then decides whether it becomes an elite.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/verdict.hpp"
#include "util/json_reader.hpp"

namespace kforge {

// One timed subject on one shape.
struct Measurement {
    std::string shape_set;     // "bench", "held_out"
    std::string shape_label;
    std::string subject;       // "candidate", "reference", or a vendor baseline name
    double median_ns = 0;
    double q1_ns = 0;
    double q3_ns = 0;
    double min_ns = 0;
    int samples = 0;
    int discarded = 0;         // samples dropped (throttled clock, bad records)
    double sm_clock_mhz = 0;   // mean SM clock over kept samples
    bool confirmed = false;    // measured to the confirmation standard (not just the quick screen)
    bool below_roofline = false; // faster than the roofline floor: flagged, re-verified
    double roofline_ns = 0;    // the floor time on this device (0 when unknown)
};

// The timing of `subject` on the shape (set and label) of `like` in `list`: the last confirmed one,
// else the last one; nullptr when there is none.
const Measurement* find_timing(const std::vector<Measurement>& list, const std::string& subject,
                               const Measurement& like);

// The GPU that measured something: the host, the MPI rank that drove it (0 on one host), its index
// among the host's visible devices (what --gpus names) and the driver's UUID and name. Two GPUs are
// the same GPU when all of host, rank, index and UUID agree (two ranks may share one device).
struct GpuIdentity {
    std::string host;
    int rank = 0;
    int device_index = 0;
    std::string uuid;          // "GPU-8c1f...", as CUDA_VISIBLE_DEVICES accepts it
    std::string name;          // "NVIDIA H100 80GB HBM3"

    // "gpu1" on rank 0, "r2/gpu1" on another rank: short enough for a progress line.
    std::string label() const;
    Json to_json() const;
    static GpuIdentity from_json(const Json& json);
    bool operator==(const GpuIdentity& other) const;
};

// What the evaluator found out about one candidate.
struct Evaluation {
    Verdict verdict;
    std::optional<double> fitness;   // geomean over bench shapes of reference time / candidate time
    ParamPoint best_params;          // the param point that achieved `fitness`
    std::vector<Measurement> measurements;
    Json descriptors = Json::object(); // MAP-Elites descriptors (evaluator/describe)
    Json metrics = Json::object();     // CUPTI profile + compile report (registers, spills, ...)
    Json compile_info = Json::object(); // per param point: time, log excerpt, cache hit
    double eval_seconds = 0;
    // The GPU whose numbers these are (the final timing's, when a confirmation ran elsewhere);
    // nullopt when no GPU ran the candidate (no code, plan or compile errors).
    std::optional<GpuIdentity> gpu;
};

// How a candidate came to be.
enum class Origin { seed, reference, llm, repair, tune, builtin, user };
std::string_view origin_name(Origin origin);
std::optional<Origin> parse_origin(std::string_view name);

struct Candidate {
    int64_t id = 0;                   // assigned by the archive
    std::string source;
    std::string source_hash;          // normalized_source_hash(source) + plan
    std::optional<int64_t> parent_id;
    std::vector<int64_t> inspiration_ids;
    int island = 0;
    int generation = 0;
    Origin origin = Origin::llm;
    std::optional<int64_t> llm_call_id; // the call that produced it
    std::string note;                 // the proposer's one-line description of the change
    Evaluation evaluation;
    double created_at = 0;            // seconds since the epoch
};

} // namespace kforge
