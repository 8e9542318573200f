// The knobs of a search, and its budgets.
//
// A SearchConfig is stored in the run record (RunInfo::config["search"]) when a run starts, and a
// resumed run reads it back, so `kforge resume` continues with the settings the run began with;
// only budgets and a few operational settings (parallelism, progress) may be changed on resume.
// Nothing here is secret.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/json_reader.hpp"

namespace kforge {

// How a parent is chosen on an island (normalised shares; see selection.hpp).
struct SelectionMix {
    double exploit = 0.6; // fitness-weighted among the island's elites
    double explore = 0.2; // uniform over the island's occupied cells
    double target = 0.2;  // an elite next to an empty cell, asked to fill that cell
};

// Parses "0.6,0.2,0.2" (exploit, explore, target; any non-negative weights, not all zero).
// Throws Error(usage) naming the text.
SelectionMix parse_selection_mix(std::string_view text);

enum class EditFormPolicy {
    whole, // always ask for a whole file
    diff,  // always ask for SEARCH/REPLACE edits of the parent (whole file without a parent)
    mix,   // either, drawn per proposal with even odds
};

struct Budgets {
    // Candidates scheduled: seeds, the reference, proposals, repairs and tunes, duplicates and
    // replies without code included; one in flight counts.
    int64_t candidates = 100;
    std::optional<int64_t> max_calls;     // language-model calls (the builtin proposer makes none)
    std::optional<double> max_cost_usd;   // dollars; calls in flight count at their estimate
    std::optional<double> max_seconds;    // wall time of this session (optimize or one resume)
    std::optional<int> patience;          // generations without improvement of the best
};

enum class ProgressMode {
    automatic, // a live line on a terminal, [k/N] lines otherwise
    live,
    lines,
    quiet,     // nothing but warnings
};

struct SearchConfig {
    int islands = 4;
    int parallel = 4;           // language-model calls in flight
    // Items in flight (proposing or evaluating); 0: automatic, 2 * parallel + 2 and at least
    // 4 * GPUs + 2, so that every GPU has work queued, also while one GPU spends seconds on a
    // confirmation that the records behind it wait for (on an H200 a confirmation is 5-10 s, a screen
    // 0.2-1 s; with 2 per GPU, 4 GPUs idled behind one). The window shapes the run's choices (an
    // item is chosen before the items ahead of it are recorded): the same seed, settings and
    // window give the same records on any number of GPUs.
    int window = 0;
    int generation_size = 4;    // candidates per island that make one generation
    int migrate_every = 2;      // generations between ring migrations
    int meta_every = 3;         // generations between meta-prompt rewrites (with a model)
    SelectionMix mix;
    EditFormPolicy edit_form = EditFormPolicy::mix;
    // Repair rounds for a failed model-written candidate: a repair that fails again gets another,
    // each seeing the new compiler or verifier message, up to this many in a row (0: none). Two by
    // default: a first repair often fixes what the compiler said and then meets the verifier.
    int repairs = 2;
    bool tune = true;           // a param-sweep candidate (no model) after a new island best
    // The two-phase step ("plan, then code", agents/plan_code.hpp): the share of fresh proposals
    // made by a planner and a coder instead of one call (0: none, 1: all; between: drawn per
    // proposal). Needs a model; repairs stay one-phase.
    double plan_share = 0;
    // The share of planned proposals whose suggested technique is drawn for exploration (an untried
    // one first) rather than by how the techniques have paid off.
    double plan_explore = 0.25;
    std::string menu;           // the optimisation menu by name ("": picked by category and tags)
    int max_lessons = 20;       // analyst calls per run at most
    int lessons_per_prompt = 4;
    Budgets budgets;
    uint64_t seed = 0;          // the run's public seed (the RNG's starting point)
    double interrupt_grace_s = 30; // after Ctrl-C, how long finished work may still be recorded
    ProgressMode progress = ProgressMode::automatic;

    // The window for a session over `gpus` GPUs.
    int effective_window(size_t gpus = 1) const
    {
        return window > 0 ? window : std::max(2 * parallel + 2, 4 * static_cast<int>(gpus) + 2);
    }
    // Throws Error(usage) for values that cannot work (no islands, a zero generation, ...).
    void validate() const;
    Json to_json() const;
    // Reads what to_json() wrote; missing keys keep their defaults. Throws Error(bad_input).
    static SearchConfig from_json(const Json& json, std::string_view what);
};

// --strategy: "direct" (one-phase, plan_share 0), "plan" (two-phase, 1) or "mix" (`share`).
// Throws Error(usage) for another name or a share outside (0, 1).
double parse_strategy(std::string_view name, std::optional<double> share);
// "direct", "plan" or "mix 0.30" for a plan share.
std::string describe_strategy(double plan_share);

std::string_view edit_form_policy_name(EditFormPolicy policy);
std::optional<EditFormPolicy> parse_edit_form_policy(std::string_view name);

} // namespace kforge
