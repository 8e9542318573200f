// What the search learns about optimisation techniques, and how it leans on it.
//
// A two-phase candidate (agents/plan_code.hpp) is recorded with its plan: each technique the plan
// claimed is checked against the code (the menu item's source signals), and each one the code
// shows becomes a TechniqueTry — correct or not, faster than its parent or not, by how much, against
// what the plan predicted. Tallies of tries per technique, from the user-level knowledge base
// (other runs on tasks of the same category, read once per session) and from this run (its
// recorded prefix), are what the planner is shown and what choose_focus() draws the suggested
// technique from: mostly by how each has paid off, with a share drawn for exploration, untried
// techniques first. A run's schedule — the chain of steps from its starting kernel to its best — is
// built from its lineage whenever the best improves, for later tasks of the same category.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agents/menu.hpp"
#include "agents/plan_code.hpp"
#include "archive/archive.hpp"
#include "core/technique.hpp"
#include "core/task.hpp"
#include "util/rng.hpp"

namespace kforge {

using TechniqueTallies = std::map<std::string, TechniqueTally>;

struct Focus {
    std::string technique; // "" when the menu is empty
    std::string reason;    // why, in words the planner's prompt shows
};

// The technique to suggest to the next planner. Draws one number from `rng` to choose between
// exploring (probability `explore`) and exploiting, and one more to pick: exploring picks uniformly
// among the menu's untried techniques (among all when every one has been tried); exploiting weighs
// each by (improved + 1) / (tried + 2) x (correct + 1) / (tried + 2) x gain^2 (gain: the geometric
// mean gain, 1 without data, clamped to [0.5, 3]), so a technique that keeps failing fades but is
// never ruled out.
Focus choose_focus(const Menu& menu, const TechniqueTallies& tallies, const std::string& category, double explore,
                   Rng& rng);

// Tallies of the first `count` tries, by technique.
TechniqueTallies tally_tries(const std::vector<TechniqueTry>& tries, size_t count);
// The rows the planner is shown: every menu item in menu order (untried ones too), then techniques
// outside the menu that have been tried, the most tried first, at most `max_extra` of them.
std::vector<TechniqueStatRow> technique_rows(const Menu& menu, const TechniqueTallies& tallies, size_t max_extra = 6);

// Whether `child` shows `item`: some signal of the item occurs in its code, comments aside (string
// literals count: inline PTX lives there). Unchecked for new techniques and items without signals.
// A signal already in the parent still counts: the check asks whether the code ignored the plan,
// not whether the technique is new to the lineage.
Applied check_applied(const MenuItem* item, const std::string& child);

// The archive row of a two-phase candidate: `plan_done` is WorkItem::plan_done, `parent_fitness`
// the parent's fitness when it has one.
CandidatePlan candidate_plan_of(const Candidate& candidate, const Json& plan_done, const std::string& focus,
                                const Menu& menu, const std::optional<Candidate>& parent);

// The tries a recorded plan makes: one per claimed technique not missing from the code (a candidate
// without code has every technique missing). `correct`: the candidate's verdict is correct.
std::vector<TechniqueTry> technique_tries_of(const CandidatePlan& plan, bool correct, const std::string& task_name,
                                             const std::string& category);

// The chain from the run's starting kernel to candidate `best_id` (its lineage, oldest first), with
// the techniques of its planned steps; nullopt when the lineage does not start at a seed or the
// reference with a fitness.
std::optional<Schedule> build_schedule(const Archive& archive, const Task& task, int64_t best_id);

} // namespace kforge
