// The interface between the search and whatever writes candidates: an LLM or the offline
// proposer.
//
// The search hands a Proposer one ProposalContext — the task, the GPU, optionally a parent and a
// few inspirations with what is known about them, lessons, the island's strategy text, the cell it
// wants filled, the edit form — plus its own Rng, and gets back a Proposal: a source, or a no_code
// verdict whose message says exactly what was wrong with the reply (it goes into the next prompt),
// and the LlmCallRecords of every model call made on the way. Nothing here throws for a bad reply
// or a network failure; only what must stop the run (a rejected API key) throws kforge::Error.
//
// Every random choice draws from the Rng passed in (the search keeps its state in the archive, so
// a resumed run draws the same sequence). Proposers are safe to call from several threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/candidate.hpp"
#include "core/records.hpp"
#include "core/task.hpp"
#include "core/verdict.hpp"
#include "util/json_reader.hpp"
#include "util/rng.hpp"

namespace kforge {

// Receives every finished model call (successful or not), on the calling thread, before the call
// returns. It may assign `record.id` (the archive's row id); the Proposal carries the record with
// that id. The search connects it to the archive; `kforge propose --record` to a JSONL file.
using CallRecorder = std::function<void(LlmCallRecord& record)>;

// One bench shape's timing of a candidate next to the baseline.
struct ShapeTiming {
    std::string shape_label;
    double candidate_ns = 0;   // median
    double reference_ns = 0;   // median of the baseline it is compared with; 0 when unknown
};

// What the prompt shows about an archived candidate (the parent or an inspiration).
struct CandidateView {
    std::optional<int64_t> id;
    std::string source;
    std::optional<Verdict> verdict;  // nullopt: not evaluated (e.g. a file given to `propose`)
    std::optional<double> fitness;   // geomean speedup over the baseline
    std::vector<ShapeTiming> times;
    Json metrics = Json::object();     // profiler metrics and compile report
    Json descriptors = Json::object(); // MAP-Elites descriptors
    std::string note;                  // what its proposer said it changed
    std::string sweep_note;            // "" or ParamSweep::describe(): its params were sampled
};

enum class EditForm {
    whole_file,     // the reply is one complete source file
    search_replace, // the reply is SEARCH/REPLACE edits of the parent's source
};

enum class RoundKind {
    fresh,  // a new candidate (from the parent, or from scratch without one)
    repair, // one more try at the failed parent, whose verdict message says what went wrong
};

struct ProposalContext {
    const Task& task;
    // GPU facts, shown as "name: value" lines. memory_bandwidth_gbps (GB/s) and peak_fp32_tflops,
    // when present, also give each bench shape's roofline floor time.
    Json hardware = Json::object();
    std::optional<CandidateView> parent;
    std::vector<CandidateView> inspirations; // 0 to 3
    std::vector<Lesson> lessons;
    std::string strategy;              // the island's meta-prompt text ("" for none)
    std::string target_hint;           // the strategy wanted for an empty cell ("" for none)
    EditForm edit_form = EditForm::whole_file;
    RoundKind round = RoundKind::fresh;
};

enum class ProposalOutcome {
    source,      // `source` holds a candidate
    no_code,     // the reply (or the offline proposer) gave nothing usable: `failure` says why
    call_failed, // the model could not be reached or answered errors after all retries
};

struct Proposal {
    ProposalOutcome outcome = ProposalOutcome::no_code;
    std::optional<std::string> source;
    Verdict failure;                   // no_code + message unless outcome == source
    std::string note;                  // one line: what the proposer changed
    Origin origin = Origin::llm;       // llm, repair or builtin
    std::vector<LlmCallRecord> calls;  // in order; the last produced the source
};

class Proposer
{
public:
    virtual ~Proposer() = default;
    virtual Proposal propose(const ProposalContext& context, Rng& rng) = 0;
};

} // namespace kforge
