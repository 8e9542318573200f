// Choosing a parent and inspirations on one island (DESIGN.md §7, "Parents").
//
// Three modes, drawn with the shares of the SelectionMix:
//   exploit — an elite drawn with weight fitness^4 / (1 + children already scheduled from it): the
//             fittest are preferred, but an elite that was expanded many times yields to others
//             (ShinkaEvolve's novelty bonus), which also keeps prompts from repeating;
//   explore — an occupied cell, uniformly;
//   target  — an (elite, empty neighbouring cell) pair, uniformly; the prompt then asks for that
//             cell's strategy. Cells the caller marks as not targetable (tried too often without
//             landing there) are skipped; with no pair left, the draw falls back to explore.
// Every draw uses the Rng passed in, in a fixed order, and elites iterate in cell order, so the
// same grid, counts and Rng state always give the same choice.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "search/grid.hpp"
#include "search/search_config.hpp"
#include "search/work_item.hpp"
#include "util/rng.hpp"

namespace kforge {

struct ParentChoice {
    ParentMode mode = ParentMode::none; // none: the island has no elite
    const EliteEntry* parent = nullptr;
    std::string target_cell;            // target mode only
};

using ChildCounts = std::map<int64_t, int>;          // candidate id -> children scheduled
using TargetFilter = std::function<bool(const std::string& cell)>;

ParentChoice choose_parent(const IslandGrid& grid, const SelectionMix& mix, const ChildCounts& children,
                           const TargetFilter& targetable, Rng& rng);

// Up to `max` other elites of the island to show beside the parent: its best elite first (when it
// is not the parent), then elites of other cells drawn uniformly. Never the parent itself.
std::vector<int64_t> choose_inspirations(const IslandGrid& grid, int64_t parent_id, size_t max, Rng& rng);

} // namespace kforge
