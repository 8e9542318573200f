// MAP-Elites grids and cell geometry; see grid.hpp.
#include "search/grid.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "evaluator/describe.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

bool fitter(const EliteEntry& a, const EliteEntry& b)
{
    return a.fitness > b.fitness || (a.fitness == b.fitness && a.candidate_id < b.candidate_id);
}

// One phrase per bin of evaluator/describe's axes, in the same order.
const std::map<std::string, std::string>& bin_phrases()
{
    static const std::map<std::string, std::string> k_phrases = {
        {"plain", "plain scalar global loads and stores"},
        {"vector", "vectorised 8- or 16-byte global loads and stores (float2/float4)"},
        {"smem", "data staged through shared-memory tiles"},
        {"async", "asynchronous copies into shared memory (cp.async, memcpy_async or TMA)"},
        {"scalar", "plain per-thread arithmetic, no warp-level primitives"},
        {"shuffle", "warp shuffles or warp reductions (__shfl_*_sync, __reduce_*_sync)"},
        {"mma", "tensor cores through mma.sync or WMMA"},
        {"wgmma", "Hopper warpgroup MMA (wgmma)"},
        {"w1", "one output element per thread"},
        {"w4", "2 to 4 output elements per thread"},
        {"w16", "5 to 16 output elements per thread"},
        {"w64", "more than 16 output elements per thread"},
        {"o25", "theoretical occupancy at most 25%"},
        {"o50", "theoretical occupancy 26-50%"},
        {"o75", "theoretical occupancy 51-75%"},
        {"o100", "theoretical occupancy above 75%"},
    };
    return k_phrases;
}

} // namespace

const EliteEntry* IslandGrid::at(const std::string& cell) const
{
    auto it = m_cells.find(cell);
    return it == m_cells.end() ? nullptr : &it->second;
}

bool IslandGrid::would_accept(const std::string& cell, double fitness, double margin) const
{
    const EliteEntry* current = at(cell);
    return !current || fitness > current->fitness * (1 + margin);
}

bool IslandGrid::place(const EliteEntry& entry, double margin)
{
    if (!would_accept(entry.cell, entry.fitness, margin))
        return false;
    m_cells[entry.cell] = entry;
    return true;
}

const EliteEntry* IslandGrid::best() const
{
    const EliteEntry* best = nullptr;
    for (const auto& [cell, entry] : m_cells)
        if (!best || fitter(entry, *best))
            best = &entry;
    return best;
}

const EliteEntry* IslandGrid::best_native(int island) const
{
    const EliteEntry* best = nullptr;
    for (const auto& [cell, entry] : m_cells)
        if (entry.native_island == island && (!best || fitter(entry, *best)))
            best = &entry;
    return best;
}

std::vector<const EliteEntry*> IslandGrid::elites() const
{
    std::vector<const EliteEntry*> result;
    for (const auto& [cell, entry] : m_cells)
        result.push_back(&entry);
    return result;
}

std::vector<std::string> neighbour_cells(const std::string& cell)
{
    const auto& axes = descriptor_axes();
    std::vector<std::string> bins = split(cell, '/');
    std::vector<std::string> result;
    if (bins.size() != axes.size())
        return result;
    std::vector<size_t> index(axes.size());
    for (size_t a = 0; a < axes.size(); ++a) {
        const auto& names = axes[a].second;
        auto it = std::find(names.begin(), names.end(), bins[a]);
        if (it == names.end())
            return result;
        index[a] = static_cast<size_t>(it - names.begin());
    }
    for (size_t a = 0; a < axes.size(); ++a) {
        for (int step : {-1, 1}) {
            if ((step < 0 && index[a] == 0) || (step > 0 && index[a] + 1 >= axes[a].second.size()))
                continue;
            std::vector<std::string> moved = bins;
            moved[a] = axes[a].second[index[a] + step];
            result.push_back(join(moved, "/"));
        }
    }
    return result;
}

std::string describe_cell_strategy(const std::string& cell)
{
    std::vector<std::string> parts;
    const auto& axes = descriptor_axes();
    std::vector<std::string> bins = split(cell, '/');
    for (size_t a = 0; a < bins.size() && a < axes.size(); ++a) {
        auto it = bin_phrases().find(bins[a]);
        parts.push_back(fmt::format("{}: {}", axes[a].first, it == bin_phrases().end() ? bins[a] : it->second));
    }
    return fmt::format("A kernel in the niche {} of the search grid, that is {}. Aim for this combination even if "
                       "the parent works differently; it should still be as fast as you can make it.",
                       cell, join(parts, "; "));
}

} // namespace kforge
