// The MAP-Elites grids of the HTML report, one heatmap per island.
//
// A cell key has four descriptor axes of four bins each (evaluator/describe.hpp), 256 cells per
// island. They are drawn as a 4 x 4 grid of blocks, memory strategy down and compute strategy
// across, each block a 4 x 4 grid of cells with work per thread across and occupancy up. So the
// two axes that say *what kind of kernel* it is pick the block, and the two tuning axes pick the
// cell inside it. Cells are coloured by their elite's fitness on one scale shared by all islands;
// empty cells stay pale. Every cell carries a hover <title> and data attributes (class "cell elite"
// or "cell empty", data-cell, data-candidate, data-fitness) so tests and readers can count them.
#include <algorithm>
#include <array>
#include <optional>

#include <fmt/format.h>

#include "evaluator/describe.hpp"
#include "report/inspect_report.hpp"
#include "report/page.hpp"
#include "report/svg.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr double k_cell = 12;
constexpr double k_block = 4 * k_cell;
constexpr double k_gap = 8;
constexpr double k_grid_left = 46; // room for the memory labels
constexpr double k_grid_top = 24;  // room for the compute labels
constexpr size_t k_outside_rows = 20;

// Bin indices of a cell key along the four axes, or nullopt for a key that is not on the grid.
std::optional<std::array<int, 4>> cell_position(const std::string& cell)
{
    const auto& axes = descriptor_axes();
    std::vector<std::string> parts = split(cell, '/');
    if (parts.size() != axes.size())
        return std::nullopt;
    std::array<int, 4> position{};
    for (size_t axis = 0; axis < axes.size(); ++axis) {
        const auto& bins = axes[axis].second;
        auto it = std::find(bins.begin(), bins.end(), parts[axis]);
        if (it == bins.end())
            return std::nullopt;
        position[axis] = static_cast<int>(it - bins.begin());
    }
    return position;
}

std::string cell_key(const std::array<int, 4>& position)
{
    const auto& axes = descriptor_axes();
    std::vector<std::string> parts;
    for (size_t axis = 0; axis < axes.size(); ++axis)
        parts.push_back(axes[axis].second[position[axis]]);
    return join(parts, "/");
}

// Top-left corner of a cell: block (memory row, compute column), then (work column, occupancy
// row) inside the block with the highest occupancy on top.
std::pair<double, double> cell_origin(const std::array<int, 4>& p)
{
    double x = k_grid_left + p[1] * (k_block + k_gap) + p[2] * k_cell;
    double y = k_grid_top + p[0] * (k_block + k_gap) + (3 - p[3]) * k_cell;
    return {x, y};
}

struct FitnessRange
{
    double lo = 0;
    double hi = 0;
    double position(double fitness) const { return hi > lo ? (fitness - lo) / (hi - lo) : 1.0; }
};

std::string params_of(const ReportData& data, int64_t id)
{
    auto it = data.elite_params.find(id);
    if (it == data.elite_params.end())
        return "-";
    Json params = Json::object();
    for (const auto& [name, value] : it->second)
        params[name] = value;
    return format_params(params);
}

std::string island_grid(const ReportData& data, int island, const FitnessRange& range,
                        int& occupied)
{
    const auto& axes = descriptor_axes();
    std::map<std::string, const Elite*> by_cell;
    for (const auto& elite : data.elites)
        if (elite.island == island)
            by_cell[elite.cell] = &elite;
    double size = 4 * k_block + 3 * k_gap;
    SvgCanvas svg(k_grid_left + size + 4, k_grid_top + size + 4, fmt::format("MAP-Elites grid of island {}", island),
                  "grid");
    for (int i = 0; i < 4; ++i) {
        double offset = i * (k_block + k_gap) + k_block / 2;
        svg.text(k_grid_left + offset, k_grid_top - 8, axes[1].second[i], R"(class="grid-label" text-anchor="middle")");
        svg.text(k_grid_left - 6, k_grid_top + offset + 4, axes[0].second[i], R"(class="grid-label" text-anchor="end")");
    }
    occupied = 0;
    std::string best_ring;
    std::array<int, 4> p{};
    for (p[0] = 0; p[0] < 4; ++p[0])
        for (p[1] = 0; p[1] < 4; ++p[1])
            for (p[2] = 0; p[2] < 4; ++p[2])
                for (p[3] = 0; p[3] < 4; ++p[3]) {
                    std::string key = cell_key(p);
                    auto [x, y] = cell_origin(p);
                    auto it = by_cell.find(key);
                    if (it == by_cell.end()) {
                        svg.rect(x, y, k_cell, k_cell,
                                 fmt::format(R"(class="cell empty" data-cell="{}")", key),
                                 key + ": empty");
                        continue;
                    }
                    const Elite& elite = *it->second;
                    ++occupied;
                    svg.rect(x, y, k_cell, k_cell,
                             fmt::format(R"(class="cell elite" data-cell="{}" data-candidate="{}" )"
                                         R"(data-fitness="{:.4f}" fill="{}")",
                                         key, elite.candidate_id, elite.fitness,
                                         colour_scale(range.position(elite.fitness))),
                             fmt::format("#{}: {:.2f}x over the reference\ncell {}\nparams {}",
                                         elite.candidate_id, elite.fitness, key,
                                         params_of(data, elite.candidate_id)));
                    if (data.best && elite.candidate_id == data.best->id)
                        best_ring = fmt::format(
                            R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" class="best-ring"/>)",
                            x - 1.5, y - 1.5, k_cell + 3, k_cell + 3);
                }
    svg.raw(best_ring);
    return svg.finish();
}

// The colour bar of the fitness scale, and one block drawn large to say how a block reads.
std::string legend(const FitnessRange& range)
{
    const auto& axes = descriptor_axes();
    SvgCanvas svg(680, 2 + 4 * 24 + 16, "legend of the elite grids", "legend");
    svg.raw(R"(<defs><linearGradient id="fitness-ramp">)");
    for (int i = 0; i <= 10; ++i)
        svg.raw(fmt::format(R"(<stop offset="{}%" stop-color="{}"/>)", i * 10, colour_scale(i / 10.0)));
    svg.raw("</linearGradient></defs>");
    svg.text(0, 14, "elite fitness (speedup over the reference)", R"(class="grid-label")");
    svg.rect(0, 22, 240, 14, R"a(fill="url(#fitness-ramp)" class="ramp")a");
    svg.text(0, 52, fmt::format("{:.2f}x", range.lo), R"(class="tick")");
    svg.text(240, 52, fmt::format("{:.2f}x", range.hi), R"(class="tick" text-anchor="end")");
    svg.rect(0, 62, 14, 14, R"(class="cell empty")");
    svg.text(20, 74, "empty cell", R"(class="tick")");
    svg.rect(100, 62, 14, 14, R"attr(class="cell elite" fill="rgb(153,153,153)" style="stroke:none")attr");
    svg.raw(R"(<rect x="98.5" y="60.5" width="17" height="17" class="best-ring"/>)");
    svg.text(122, 74, "the run's best", R"(class="tick")");
    // A block, enlarged: work across, occupancy up.
    double x0 = 330, y0 = 2, c = 24;
    for (int w = 0; w < 4; ++w)
        for (int o = 0; o < 4; ++o)
            svg.rect(x0 + w * c, y0 + (3 - o) * c, c, c, R"(class="cell empty")");
    for (int i = 0; i < 4; ++i) {
        svg.text(x0 + i * c + c / 2, y0 + 4 * c + 12, axes[2].second[i],
                 R"(class="tiny" text-anchor="middle")");
        svg.text(x0 - 4, y0 + (3 - i) * c + c / 2 + 3, axes[3].second[i], R"(class="tiny" text-anchor="end")");
    }
    svg.text(x0 + 4 * c + 12, y0 + 16, "inside each block:", R"(class="tick")");
    svg.text(x0 + 4 * c + 12, y0 + 32, "work per thread across (w1 .. w64)", R"(class="tick")");
    svg.text(x0 + 4 * c + 12, y0 + 48, "occupancy up (o25 .. o100)", R"(class="tick")");
    return svg.finish();
}

} // namespace

std::string render_elite_grids(const ReportData& data)
{
    FitnessRange range;
    std::vector<const Elite*> outside;
    bool first = true;
    for (const auto& elite : data.elites) {
        if (!cell_position(elite.cell)) {
            outside.push_back(&elite);
            continue;
        }
        range.lo = first ? elite.fitness : std::min(range.lo, elite.fitness);
        range.hi = first ? elite.fitness : std::max(range.hi, elite.fitness);
        first = false;
    }
    if (data.islands == 0)
        return R"(<p class="empty-note">No elites yet.</p>)";
    const auto& axes = descriptor_axes();
    std::string grids;
    int total = 0;
    for (int island = 0; island < data.islands; ++island) {
        int occupied = 0;
        std::string svg = island_grid(data, island, range, occupied);
        total += occupied;
        const Elite* top = nullptr;
        for (const auto& elite : data.elites)
            if (elite.island == island && (!top || elite.fitness > top->fitness))
                top = &elite;
        std::string best_text =
            top ? fmt::format("best {:.2f}x (#{})", top->fitness, top->candidate_id) : "no elite yet";
        grids += fmt::format(R"(<figure class="island" data-island="{}"><figcaption><b>Island {}</b> )"
                             R"(<span class="muted">&middot; {} of 256 cells<br>{}</span></figcaption>{}</figure>)",
                             island, island, occupied, best_text, svg);
    }
    std::string out = fmt::format(
        R"(<p class="lead">{} of {} cells hold an elite across {} islands. Blocks: {} strategy )"
        R"(down, {} across; hover a cell for its elite, speedup and params.</p>)",
        total, 256 * data.islands, data.islands, axes[0].first, axes[1].first);
    out += legend(range);
    out += R"(<div class="islands">)" + grids + "</div>";
    if (!outside.empty()) {
        out += fmt::format(R"(<p class="caption">{} elites sit in cells that are not on the )"
                           R"(4 x 4 x 4 x 4 grid (an older descriptor scheme):)",
                           outside.size());
        for (size_t i = 0; i < outside.size() && i < k_outside_rows; ++i)
            out += fmt::format(" island {} {} #{} {:.2f}x;", outside[i]->island,
                               html_escape(outside[i]->cell), outside[i]->candidate_id,
                               outside[i]->fitness);
        if (outside.size() > k_outside_rows)
            out += fmt::format(" and {} more.", outside.size() - k_outside_rows);
        out += "</p>";
    }
    return out;
}

} // namespace kforge
