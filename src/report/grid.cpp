// `kforge inspect --grid`: each island's MAP-Elites grid as a text heatmap.
//
// The grid has four axes of four bins (evaluator/describe.hpp), 256 cells. The heatmap folds them
// into a table of the first two axes (memory x compute, 16 rows) against the last two (work x
// occupancy, 16 columns, in four groups); each occupied cell shows its elite's fitness, the island's
// best marked with '*', an empty cell '.'. Rows without an elite on that island are left out and
// counted, so a grid with a handful of elites stays a handful of lines. Below each map, the fittest
// elites with their candidate ids (for --lineage and export).
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "evaluator/describe.hpp"
#include "report/inspect_report.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr size_t k_listed_elites = 5;
constexpr int k_cell_width = 6; // " 3.42*": a space, four characters of fitness, the best marker

std::string cell_text(double fitness, bool best)
{
    std::string value = fitness >= 100  ? fmt::format("{:>4.0f}", fitness)
                        : fitness >= 10 ? fmt::format("{:>4.1f}", fitness)
                                        : fmt::format("{:>4.2f}", fitness);
    return " " + value + (best ? "*" : " ");
}

std::string trim_right(std::string line)
{
    line.erase(line.find_last_not_of(' ') + 1);
    return line;
}

std::string render_island(const Json& island, const Json& axes)
{
    const auto& a = axes;
    auto bins = [&](size_t axis) { return a[axis]["bins"].get<std::vector<std::string>>(); };
    std::map<std::string, std::pair<double, int64_t>> cells;
    const Json* best = nullptr;
    for (const auto& elite : island["elites"]) {
        cells[elite["cell"].get<std::string>()] = {elite["fitness"].get<double>(), elite["candidate"].get<int64_t>()};
        if (!best || elite["fitness"].get<double>() > (*best)["fitness"].get<double>())
            best = &elite;
    }
    std::string out = fmt::format("island {}: {} elite{}", island["island"].get<int>(), cells.size(),
                                  cells.size() == 1 ? "" : "s");
    if (!best)
        return out + "\n  (empty)\n";
    out += fmt::format(", best #{} {:.3f}x in {}\n", (*best)["candidate"].get<int64_t>(),
                       (*best)["fitness"].get<double>(), (*best)["cell"].get<std::string>());
    std::vector<std::string> rows0 = bins(0), rows1 = bins(1), cols0 = bins(2), cols1 = bins(3);
    size_t label_width = 0;
    for (const auto& r0 : rows0)
        for (const auto& r1 : rows1)
            label_width = std::max(label_width, r0.size() + 1 + r1.size());
    label_width = std::max(label_width, a[0]["name"].get<std::string>().size() + 1 + a[1]["name"].get<std::string>().size());
    std::string group_gap = "  ";
    std::string header1 = fmt::format("  {:<{}}", a[2]["name"].get<std::string>() + ":", label_width);
    std::string header2 = fmt::format("  {:<{}}", a[0]["name"].get<std::string>() + "/" + a[1]["name"].get<std::string>(),
                                      label_width);
    for (const auto& c0 : cols0) {
        header1 += group_gap + fmt::format(" {:<{}}", c0, k_cell_width * static_cast<int>(cols1.size()) - 1);
        header2 += group_gap;
        for (const auto& c1 : cols1)
            header2 += fmt::format(" {:>4} ", c1);
    }
    out += trim_right(header1) + "\n";
    out += trim_right(header2) + "\n";
    size_t hidden = 0;
    for (const auto& r0 : rows0)
        for (const auto& r1 : rows1) {
            std::string line = fmt::format("  {:<{}}", r0 + "/" + r1, label_width);
            bool any = false;
            for (const auto& c0 : cols0) {
                line += group_gap;
                for (const auto& c1 : cols1) {
                    auto it = cells.find(join({r0, r1, c0, c1}, "/"));
                    if (it == cells.end()) {
                        line += "    . ";
                        continue;
                    }
                    any = true;
                    line += cell_text(it->second.first, it->second.second == (*best)["candidate"].get<int64_t>());
                }
            }
            if (any)
                out += trim_right(line) + "\n";
            else
                ++hidden;
        }
    if (hidden > 0)
        out += fmt::format("  ({} rows without an elite not shown)\n", hidden);
    std::vector<const Json*> ranked;
    for (const auto& elite : island["elites"])
        ranked.push_back(&elite);
    std::stable_sort(ranked.begin(), ranked.end(), [](const Json* x, const Json* y) {
        return (*x)["fitness"].get<double>() > (*y)["fitness"].get<double>();
    });
    std::vector<std::string> listed;
    for (size_t i = 0; i < ranked.size() && i < k_listed_elites; ++i)
        listed.push_back(fmt::format("#{} {:.3f}x {}{}", (*ranked[i])["candidate"].get<int64_t>(),
                                     (*ranked[i])["fitness"].get<double>(), (*ranked[i])["cell"].get<std::string>(),
                                     (*ranked[i])["migrant"].get<bool>() ? " (migrant)" : ""));
    out += "  fittest: " + join(listed, "; ") + "\n";
    return out;
}

} // namespace

int run_island_count(const Json& run_config, const std::vector<Elite>& elites)
{
    int count = 0;
    if (run_config.is_object() && run_config.contains("search") && run_config["search"].is_object())
        count = run_config["search"].value("islands", 0);
    for (const auto& elite : elites)
        count = std::max(count, elite.island + 1);
    return count;
}

Json grid_section(const Archive& archive)
{
    Json axes = Json::array();
    size_t cells = 1;
    for (const auto& [name, bins] : descriptor_axes()) {
        axes.push_back(Json{{"name", name}, {"bins", bins}});
        cells *= bins.size();
    }
    std::vector<Elite> elites = archive.elites();
    int islands = run_island_count(archive.run_info().config, elites);
    Json list = Json::array();
    for (int island = 0; island < islands; ++island) {
        Json entries = Json::array();
        for (const auto& elite : elites) {
            if (elite.island != island)
                continue;
            auto candidate = archive.candidate(elite.candidate_id);
            bool planted = candidate && (candidate->origin == Origin::seed || candidate->origin == Origin::reference);
            entries.push_back(Json{{"cell", elite.cell},
                                   {"candidate", elite.candidate_id},
                                   {"fitness", elite.fitness},
                                   {"origin", candidate ? std::string(origin_name(candidate->origin)) : "?"},
                                   {"migrant", candidate && !planted && candidate->island != island}});
        }
        list.push_back(Json{{"island", island}, {"elites", entries}});
    }
    return Json{{"axes", axes}, {"islands", list}, {"cells", cells}};
}

std::string render_grid_text(const Json& grid)
{
    std::string out = "MAP-Elites grids (fitness of each cell's elite; * the island's best)\n";
    if (grid["islands"].empty())
        return out + "  no islands yet\n";
    for (const auto& island : grid["islands"])
        out += render_island(island, grid["axes"]);
    return out;
}

} // namespace kforge
