// Reading an optimisation plan out of a planner's reply.
//
// The planner is asked for one JSON object:
//   {"techniques": ["vectorize-16b", "new: warp-specialised rows"],
//    "expected_speedup": 1.3, "steps": ["...", "..."], "why": "..."}
// Replies arrive in a ```json block, bare, wrapped in prose, with comments or trailing commas, or
// not at all. The reader finds the object (a fenced json block first, else the first balanced
// {...} of the reply), fixes what is safe to fix locally (comments, trailing commas, typographic
// quotes) and says so, and matches each technique to the menu: an exact id, the same words in
// another spelling or a near miss ("vectorise-16b"), a menu title; anything else, or a name marked
// "new:", is kept as a new technique "new:<slug>" with a warning. What it cannot read it names in
// `problem`, in words the repair prompt passes back to the planner. Never throws.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "agents/menu.hpp"
#include "core/technique.hpp"

namespace kforge {

// At most this many techniques per plan; more are dropped with a warning.
inline constexpr size_t k_max_plan_techniques = 3;

struct PlanReading {
    std::optional<TechniquePlan> plan;
    std::string problem; // when !plan: why no plan could be read
    std::string fixed;   // when the JSON needed a local fix to parse: what was fixed ("" otherwise)
};

PlanReading read_plan_reply(std::string_view reply, const Menu& menu);

// "Warp-specialised rows!" -> "warp-specialised-rows": lowercase words joined by '-', at most 40
// characters; "" when no letter or digit is left.
std::string technique_slug(std::string_view words);

} // namespace kforge
