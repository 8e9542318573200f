// The MAP-Elites grids of a run's islands, as the search keeps them in memory.
//
// A cell is the descriptor string of evaluator/describe ("vector/shuffle/w4/o50"): fixed bins over
// kforge-computed descriptors, never rescaled, so a cell means the same thing all run long. Each
// island holds at most one elite per cell, and an elite is replaced only by a strictly fitter
// candidate. The archive's elite table is the durable copy (written in the same transaction as the
// candidate); this one is rebuilt from it on resume. Cells iterate in name order, so every choice
// made over them is deterministic.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kforge {

struct EliteEntry {
    int64_t candidate_id = 0;
    double fitness = 0;     // confirmed fitness where a confirmation ran
    std::string cell;
    int native_island = -1; // where it was proposed; -1 for seeds and the reference
};

class IslandGrid
{
public:
    // The elite of `cell`, or nullptr.
    const EliteEntry* at(const std::string& cell) const;
    // Whether a candidate of `fitness` in `cell` would become its elite (empty, or strictly fitter).
    // `margin`: the fitness must beat the cell's elite by more than this fraction (a screen's
    // number, before confirmation; see loop/record.cpp).
    bool would_accept(const std::string& cell, double fitness, double margin = 0) const;
    // Places `entry` in its cell if would_accept() with `margin`; returns whether it did.
    bool place(const EliteEntry& entry, double margin = 0);
    // The fittest elite (the lowest candidate id among equals), or nullptr when empty.
    const EliteEntry* best() const;
    // The fittest elite that was proposed on island `island` (migration sends only natives).
    const EliteEntry* best_native(int island) const;
    // Elites in cell-name order.
    std::vector<const EliteEntry*> elites() const;
    size_t size() const { return m_cells.size(); }
    bool empty() const { return m_cells.empty(); }

private:
    std::map<std::string, EliteEntry> m_cells;
};

// Cells that differ from `cell` by one step on one axis, in axis order; empty for a malformed cell.
std::vector<std::string> neighbour_cells(const std::string& cell);

// What a kernel in `cell` does, in words a model can aim at ("stage data through shared-memory
// tiles; reduce with warp shuffles; ..."). Used for target-cell prompts.
std::string describe_cell_strategy(const std::string& cell);

} // namespace kforge
