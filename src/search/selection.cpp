// Parent and inspiration choice; see selection.hpp.
#include "search/selection.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace kforge {
namespace {

constexpr double k_fitness_power = 4;

const EliteEntry* draw_exploit(const std::vector<const EliteEntry*>& elites, const ChildCounts& children, Rng& rng)
{
    std::vector<double> weights;
    for (const EliteEntry* elite : elites) {
        auto it = children.find(elite->candidate_id);
        int expanded = it == children.end() ? 0 : it->second;
        weights.push_back(std::pow(std::max(elite->fitness, 1e-6), k_fitness_power) / (1.0 + expanded));
    }
    return elites[rng.weighted(weights)];
}

} // namespace

ParentChoice choose_parent(const IslandGrid& grid, const SelectionMix& mix, const ChildCounts& children,
                           const TargetFilter& targetable, Rng& rng)
{
    ParentChoice choice;
    std::vector<const EliteEntry*> elites = grid.elites();
    if (elites.empty())
        return choice;
    size_t mode = rng.weighted({mix.exploit, mix.explore, mix.target});
    if (mode == 2) {
        std::vector<std::pair<const EliteEntry*, std::string>> pairs;
        for (const EliteEntry* elite : elites)
            for (const auto& cell : neighbour_cells(elite->cell))
                if (!grid.at(cell) && (!targetable || targetable(cell)))
                    pairs.emplace_back(elite, cell);
        if (!pairs.empty()) {
            const auto& [parent, cell] = pairs[rng.below(pairs.size())];
            choice = {ParentMode::target, parent, cell};
            return choice;
        }
        mode = 1;
    }
    if (mode == 0)
        choice = {ParentMode::exploit, draw_exploit(elites, children, rng), ""};
    else
        choice = {ParentMode::explore, elites[rng.below(elites.size())], ""};
    return choice;
}

std::vector<int64_t> choose_inspirations(const IslandGrid& grid, int64_t parent_id, size_t max, Rng& rng)
{
    std::vector<int64_t> chosen;
    if (max == 0)
        return chosen;
    const EliteEntry* best = grid.best();
    if (best && best->candidate_id != parent_id)
        chosen.push_back(best->candidate_id);
    std::vector<int64_t> others;
    for (const EliteEntry* elite : grid.elites())
        if (elite->candidate_id != parent_id &&
            std::find(chosen.begin(), chosen.end(), elite->candidate_id) == chosen.end() &&
            std::find(others.begin(), others.end(), elite->candidate_id) == others.end())
            others.push_back(elite->candidate_id);
    while (chosen.size() < max && !others.empty()) {
        size_t pick = rng.below(others.size());
        chosen.push_back(others[pick]);
        others.erase(others.begin() + static_cast<std::ptrdiff_t>(pick));
    }
    return chosen;
}

} // namespace kforge
