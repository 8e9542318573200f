// One scheduled unit of search work, with every choice already made.
//
// The controller decides everything random about an item when it schedules it — the island, the
// parent and how it was picked, the inspirations, the target cell, the edit form, the lessons, the
// item's own RNG seed — and writes the decision down as a WorkItem. Running the item (a model
// call, a param variation, an evaluation) only consumes those decisions. Items not yet recorded
// are saved in the archive with the RNG state, so a resumed run re-issues exactly these items.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agents/proposer.hpp"
#include "util/json_reader.hpp"

namespace kforge {

enum class ItemKind {
    reference,   // the task's reference kernel, evaluated once to seed every island
    seed,        // one of the task's seed kernels, likewise
    propose,     // a new candidate from the proposer (a model or the builtin proposer)
    repair,      // one more try at a failed model-written candidate
    tune,        // a param variation of a new island best, without a model
    analyst,     // a lesson about a notable candidate
    meta_prompt, // a rewrite of an island's strategy text
};
std::string_view item_kind_name(ItemKind kind);

// Whether an item of this kind yields a candidate (and counts against --budget).
bool yields_candidate(ItemKind kind);

enum class ParentMode { none, exploit, explore, target };
std::string_view parent_mode_name(ParentMode mode);

struct WorkItem {
    uint64_t seq = 0;                  // schedule order; items are recorded in this order
    ItemKind kind = ItemKind::propose;
    int island = 0;                    // -1 for the reference and seeds: every island
    int generation = 0;                // generations completed when it was scheduled
    uint64_t seed = 0;                 // the item's own RNG seed
    std::optional<int64_t> parent;     // candidate id
    std::vector<int64_t> inspirations; // candidate ids
    ParentMode mode = ParentMode::none;
    std::string target_cell;           // target mode: the empty cell the prompt asks for
    EditForm edit_form = EditForm::whole_file;
    std::optional<int64_t> meta_prompt_id; // the island's strategy text in force
    std::vector<int64_t> lesson_ids;   // run-archive lessons shown in the prompt
    int seed_index = 0;                // seed: index into Task::seeds
    int repair_round = 0;              // repair: which round in a row (1 for a failed proposal's)
    // propose: the parent is the task's seed with this index, scheduled while that seed was still
    // being measured (no recorded candidate yet; the record names the seed's candidate as parent).
    std::optional<int> seed_parent;
    std::optional<int64_t> subject;    // analyst: the candidate the lesson is about
    Json meta_request = Json::object(); // meta_prompt: {"current": prompt, "history": [prompts]}
    // Two-phase proposals (a planner, then a coder). The planner is shown the technique statistics
    // of the run's first `tries_seen` technique tries (the recorded prefix when it was scheduled).
    bool two_phase = false;
    std::string focus;                 // the technique the search suggests ("" for none)
    std::string focus_reason;
    int64_t tries_seen = 0;
    bool show_schedules = false;       // one of the run's first plans: earlier tasks' schedules shown
    // Phase 1's result once it is back (null before): {"status", "problem", "plan", "calls",
    // "call_failed"}. Saved with the pending items, so a resumed run goes on with phase 2.
    Json plan_done;
    // Budget reservations while the item is in flight (a deterministic estimate).
    int reserved_calls = 0;
    double reserved_cost_usd = 0;

    Json to_json() const;
    // Reads what to_json() wrote. Throws Error(bad_input) naming `what`.
    static WorkItem from_json(const Json& json, std::string_view what);
};

} // namespace kforge
