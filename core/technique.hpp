// Plans and techniques: the records of the two-phase step ("plan, then code").
//
// In a two-phase proposal a planner model first picks optimisation techniques from the task's menu
// (agents/menu.hpp) and says what it expects them to gain; a coder model then writes the kernel.
// The archive keeps, per planned candidate, the plan, the techniques it claimed and whether the code
// shows them, and the predicted and measured speedup over the parent. Each technique the code shows
// becomes one TechniqueTry; tallies of tries per (task category, technique) are what the user-level
// knowledge base accumulates across runs and what the planner is shown. A Schedule is the chain of
// steps from a run's starting kernel to its best, kept so later tasks of the same category can reuse
// what worked.
//
// "Plan" here is the optimisation plan. The launch plan of a candidate (the kforge:plan block) is
// core/plan.hpp and has nothing to do with it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/json_reader.hpp"

namespace kforge {

// Techniques the planner invents are kept under this prefix ("new:warp-specialised-rows"), so they
// never collide with menu ids and are counted apart.
inline constexpr std::string_view k_new_technique_prefix = "new:";

// One technique a plan names.
struct TechniqueChoice {
    std::string id;        // a menu item id, or "new:<slug>"
    std::string title;     // the menu's title for it, or the planner's own words for a new one
    bool on_menu = true;

    bool operator==(const TechniqueChoice&) const = default;
};

// The optimisation plan a planner reply yields.
struct TechniquePlan {
    std::vector<TechniqueChoice> techniques;  // 1 to 3, in the planner's order
    std::optional<double> expected_speedup;   // predicted time ratio parent / child (> 0)
    std::vector<std::string> steps;           // what the coder should do, in order
    std::string rationale;                    // why, in the planner's words ("" when not given)
    std::vector<std::string> warnings;        // what kforge changed while reading it

    Json to_json() const;
    // Reads what to_json() wrote. Throws Error(bad_input) naming `what`.
    static TechniquePlan from_json(const Json& json, const std::string& what);
    bool operator==(const TechniquePlan&) const = default;
};

enum class PlanStatus {
    parsed,   // the planner's first reply was a valid plan
    repaired, // it became one after a local fix of its JSON or one more planner call
    failed,   // no plan could be read: the candidate is a no_code verdict saying why
};
std::string_view plan_status_name(PlanStatus status);
std::optional<PlanStatus> parse_plan_status(std::string_view name);

// Whether the code shows a claimed technique, from the menu item's source signals.
enum class Applied {
    applied,   // a signal appears in the code (more often than in the parent)
    missing,   // the item has signals and none does: the code ignored this part of the plan
    unchecked, // nothing to check by: a new technique, an item without signals, no code at all
};
std::string_view applied_name(Applied applied);
std::optional<Applied> parse_applied(std::string_view name);

struct ClaimedTechnique {
    TechniqueChoice choice;
    Applied applied = Applied::unchecked;
};

// What the archive keeps about one planned candidate (table candidate_plan, schema version 3).
struct CandidatePlan {
    int64_t candidate_id = 0;
    std::string menu;                         // the menu the planner was shown
    PlanStatus status = PlanStatus::parsed;
    std::string problem;                      // failed: why; repaired: what was wrong first
    std::optional<TechniquePlan> plan;        // null when failed
    std::vector<int64_t> call_ids;            // the planner's calls, oldest first
    std::string focus;                        // the technique the search suggested ("" none)
    std::vector<ClaimedTechnique> techniques; // the plan's techniques with what the code shows
    std::optional<double> predicted_speedup;  // the plan's expected speedup over the parent
    std::optional<double> measured_speedup;   // fitness / parent fitness, when both are known
    std::optional<bool> followed;             // false: a checkable technique is missing from the code
};

// One technique tried once: a planned candidate with code whose technique was not found missing.
// The unit the statistics count; the knowledge base keeps these rows, one per (run, candidate,
// technique).
struct TechniqueTry {
    std::string technique;
    std::string task_name;
    std::string category;                 // the task's category
    int64_t candidate_id = 0;
    bool correct = false;                 // the candidate's verdict is correct
    bool improved = false;                // its fitness beat its parent's
    std::optional<double> gain;           // fitness / parent fitness (correct candidates only)
    std::optional<double> predicted;      // the plan's expected speedup
};

// Sums over tries. Every field adds, so the tally of two runs is the sum of their tallies.
struct TechniqueTally {
    int64_t tried = 0;
    int64_t correct = 0;
    int64_t improved = 0;
    int64_t gains = 0;             // tries with a measured gain
    double log_gain_sum = 0;       // sum of ln(gain)
    int64_t predictions = 0;       // tries with both a prediction and a measured gain
    double log_predicted_sum = 0;  // over those tries: sum of ln(predicted)
    double log_measured_sum = 0;   //                  sum of ln(gain)

    void add(const TechniqueTry& one);
    TechniqueTally& operator+=(const TechniqueTally& other);
    // Geometric means; nullopt without data.
    std::optional<double> mean_gain() const;
    std::optional<double> mean_predicted() const;  // over tries with both numbers
    std::optional<double> mean_measured() const;   // over the same tries
    Json to_json() const;
};

// One step of a schedule: a candidate of the chain and what made it.
struct ScheduleStep {
    int64_t candidate_id = 0;
    std::string origin;                   // seed, reference, llm, repair, tune, builtin, user
    std::vector<std::string> techniques;  // applied (or unchecked) techniques of a planned step
    std::string note;                     // the proposer's description, cut short
    std::optional<double> speedup;        // fitness / the previous step's fitness
};

// The chain from a run's starting kernel (a seed or the reference) to its best.
struct Schedule {
    std::string run_id;
    std::string task_name;
    std::string category;
    double speedup = 1;                   // the best's fitness over the starting kernel's
    std::vector<ScheduleStep> steps;      // the starting kernel first

    // Whether any step names a technique (only those are worth showing a planner).
    bool has_techniques() const;
    // "seed_warp_row.cu -> vectorize-16b 1.40x -> tune 1.05x": the steps in one line.
    std::string describe() const;
    Json steps_json() const;
    // Reads steps_json()'s form. Throws Error(bad_input) naming `what`.
    static std::vector<ScheduleStep> steps_from_json(const Json& json, const std::string& what);
};

} // namespace kforge
