// Records that several layers exchange and the archive stores: runs, LLM calls, lessons,
// meta-prompts, elites. Plain data; the archive (archive/) is the only code that turns them into SQL.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/candidate.hpp"
#include "util/json_reader.hpp"

namespace kforge {

// One run of `kforge optimize` (and its resumptions). Everything needed to say how a stored
// result was made: versions, device, task hash, seed, configuration.
struct RunInfo {
    std::string run_id;            // "softmax_f32-20261121-220815"
    std::string task_name;
    std::string task_spec;         // the spec text as loaded (snapshot)
    std::string task_hash;         // Task::spec_hash
    Json task_files = Json::object(); // reference and seed sources by file name (snapshot)
    Json config = Json::object();  // the resolved run configuration (never secrets)
    Json device = Json::object();  // name, uuid, sm count, clocks, memory, L2, driver version
    std::string toolkit_version;   // CUDA toolkit / NVRTC version
    std::string kforge_version;
    uint64_t seed = 0;             // public seed of the run
    std::string state = "running"; // running | interrupted | finished | failed
    double started_at = 0;         // seconds since the epoch
    double updated_at = 0;
};

// propose: one-phase proposal; repair: a fix of a failed candidate; plan and code: the two phases of
// a two-phase proposal (the planner's plan, then the coder's kernel); meta_prompt and analyst: the
// search's side calls.
enum class CallPurpose { propose, repair, meta_prompt, analyst, plan, code };
std::string_view call_purpose_name(CallPurpose purpose);
std::optional<CallPurpose> parse_call_purpose(std::string_view name);
// Every purpose, for messages that list them.
const std::vector<CallPurpose>& call_purposes();

// One request to a language model, successful or not. Costs are in US dollars.
struct LlmCallRecord {
    int64_t id = 0;                // assigned by the archive
    std::string provider;          // openai | anthropic | replay | builtin
    std::string model;
    std::string base_url;          // empty for the provider's default endpoint
    CallPurpose purpose = CallPurpose::propose;
    Json request = Json::object(); // messages and parameters as sent (never the API key)
    std::string reply;             // the model's text (or the raw body when it could not be parsed)
    int64_t input_tokens = 0;
    int64_t cached_input_tokens = 0;
    int64_t output_tokens = 0;
    double cost_usd = 0;
    bool cost_known = true;        // false when the model is missing from the price table
    double latency_s = 0;          // wall time of the whole call, retries included
    int retries = 0;
    std::string status = "ok";     // ok | http_error | timeout | network_error | bad_reply | refused
    std::string error;             // message when status != ok
    double started_at = 0;
};

// A lesson distilled by the analyst: what changed, on which task and shape, and what it did.
struct Lesson {
    int64_t id = 0;
    std::string task_name;
    std::string category;          // the task's category (memory | compute | irregular)
    std::vector<std::string> tags;
    std::string text;
    Json evidence = Json::object(); // candidate ids, times before/after, metrics
    std::optional<int64_t> candidate_id;
    double created_at = 0;
};

// One island's strategy text, scored by the improvements it produced.
struct MetaPrompt {
    int64_t id = 0;
    int island = 0;
    std::string text;
    int generation = 0;            // when it was written
    int uses = 0;                  // candidates proposed under it
    int improvements = 0;          // of which improved their island's best
    bool active = true;            // replaced ones stay for the record
    double created_at = 0;
};

// One GPU's share of one session of a run. Busy time counts the requests in flight to its worker
// (verifying, timing, profiling), from the controller's side, less the time its worker waited for
// a shared GPU's measuring lock (lock_wait_s, kept apart); wall time runs from when the GPU joined
// the session (after its baselines were timed, and on a shared GPU its search turn came) to now or
// to when it was lost.
struct GpuUsage {
    GpuIdentity gpu;
    double busy_s = 0;
    double wall_s = 0;
    int64_t evaluations = 0;       // jobs it finished: screens, confirmations, held-out checks
    int restarts = 0;              // worker processes replaced after a fault, a hang or a crash
    bool lost = false;             // stopped serving (its rank died, its worker would not start)
    double lock_wait_s = 0;        // a shared GPU: waited for other runs' measurements (not stored)

    // The identity's fields, "label", these fields, and "busy" (busy_s / wall_s, 0 without wall).
    Json to_json() const;
};

// The occupant of one MAP-Elites cell.
struct Elite {
    int island = 0;
    std::string cell;              // descriptor bins joined, e.g. "vec4/shfl/w2/occ3"
    int64_t candidate_id = 0;
    double fitness = 0;
};

} // namespace kforge
