// The search's resumable state beyond the archive's tables.
//
// Candidates, elites, meta-prompts and lessons have their own tables; everything else a resumed
// run needs to continue the very same run lives here: the RNG, the counters that drive generations,
// budgets and patience, the follow-up queues (repairs, tunes), side work waiting to be scheduled,
// and the items scheduled but not yet recorded. It is saved under the search_state key "loop" in
// the same transaction as every recorded item, so the archive never holds a candidate without the
// state that follows it, or the reverse.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "search/budget.hpp"
#include "search/selection.hpp"
#include "search/work_item.hpp"
#include "util/json_reader.hpp"
#include "util/rng.hpp"

namespace kforge {

inline constexpr std::string_view k_loop_state_key = "loop";
inline constexpr std::string_view k_secret_state_key = "secret";

// A repair or a tune waiting for its island's next turn.
struct FollowUp {
    ItemKind kind = ItemKind::repair;
    int64_t candidate = 0; // the failed candidate (repair) or the new island best (tune)
    int round = 1;         // repair: which round in a row this one is (1 for a failed proposal)
};

struct LoopState {
    Rng rng;
    uint64_t next_seq = 0;
    int next_island = 0;                // round robin over islands for proposals
    int generation = 0;                 // generations completed
    int generation_fill = 0;            // candidates recorded in the current generation
    int stale_generations = 0;          // generations completed without a new best
    bool generation_improved = false;   // a new best in the current generation
    int64_t recorded_candidates = 0;    // candidate items recorded (duplicates and no_code too)
    int64_t duplicates = 0;
    int empty_streak = 0;               // items in a row that gave nothing to evaluate
    int call_failure_streak = 0;        // proposals in a row whose model call failed
    std::optional<int64_t> best_id;     // the run's best (confirmed, held-out checked)
    double best_fitness = 0;
    std::vector<double> island_best;    // per island, for meta-prompt scores
    ChildCounts children;               // items scheduled per parent
    std::map<std::string, int> target_attempts; // "island:cell" -> times asked for
    std::vector<std::deque<FollowUp>> follow_ups; // per island
    std::deque<WorkItem> requests;      // scheduled first, in order (seeding, lessons, meta-prompts)
    std::map<int64_t, std::string> held_out; // candidate id -> "passed" | "failed"
    int lessons_requested = 0;
    int64_t plans_scheduled = 0;        // two-phase items scheduled (the first few see schedules)
    std::vector<WorkItem> pending;      // scheduled, not recorded, in seq order
    StopReason stop = StopReason::none; // why the last session stopped
    // Search seconds of every session so far, each its time less its waits for a shared GPU's
    // measuring lock (what --time counts); nullopt in states saved before it was kept.
    std::optional<double> searched_s;

    Json to_json() const;
    // Reads what to_json() wrote. Throws Error(bad_input) naming `what`.
    static LoopState from_json(const Json& json, int islands, std::string_view what);
};

} // namespace kforge
