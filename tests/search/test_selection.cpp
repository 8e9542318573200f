// Parent selection, inspirations and cell geometry, on hand-built grids.
#include "kf_catch.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "search/grid.hpp"
#include "search/selection.hpp"

using namespace kforge;

namespace {

IslandGrid sample_grid()
{
    IslandGrid grid;
    grid.place({1, 1.0, "plain/scalar/w1/o25", 0});
    grid.place({2, 2.0, "vector/scalar/w1/o25", 0});
    grid.place({3, 1.5, "vector/shuffle/w4/o50", 0});
    grid.place({4, 0.8, "smem/shuffle/w16/o100", 0});
    return grid;
}

} // namespace

TEST_CASE("a cell accepts a candidate only when empty or strictly fitter", "[search]")
{
    IslandGrid grid;
    CHECK(grid.place({1, 1.5, "plain/scalar/w1/o25", 0}));
    CHECK_FALSE(grid.place({2, 1.5, "plain/scalar/w1/o25", 0}));
    CHECK_FALSE(grid.place({3, 1.2, "plain/scalar/w1/o25", 0}));
    CHECK(grid.place({4, 1.6, "plain/scalar/w1/o25", 0}));
    CHECK(grid.at("plain/scalar/w1/o25")->candidate_id == 4);
    CHECK(grid.size() == 1);
    CHECK(grid.best()->candidate_id == 4);
}

TEST_CASE("neighbouring cells differ by one step on one axis", "[search]")
{
    auto cells = neighbour_cells("plain/scalar/w1/o25");
    CHECK(cells == std::vector<std::string>{"vector/scalar/w1/o25", "plain/shuffle/w1/o25", "plain/scalar/w4/o25",
                                            "plain/scalar/w1/o50"});
    CHECK(neighbour_cells("vector/mma/w16/o75").size() == 8);
    CHECK(neighbour_cells("nonsense").empty());
    CHECK(describe_cell_strategy("smem/shuffle/w4/o50").find("shared-memory tiles") != std::string::npos);
}

TEST_CASE("the selection mix is within tolerance of its settings", "[search]")
{
    IslandGrid grid = sample_grid();
    for (SelectionMix mix : {SelectionMix{0.6, 0.2, 0.2}, SelectionMix{0.1, 0.3, 0.6}, SelectionMix{1, 0, 0}}) {
        Rng rng(7);
        std::map<ParentMode, int> counts;
        const int draws = 20000;
        for (int i = 0; i < draws; ++i)
            ++counts[choose_parent(grid, mix, {}, {}, rng).mode];
        double total = mix.exploit + mix.explore + mix.target;
        std::vector<std::pair<ParentMode, double>> expected = {{ParentMode::exploit, mix.exploit / total},
                                                               {ParentMode::explore, mix.explore / total},
                                                               {ParentMode::target, mix.target / total}};
        for (const auto& [mode, share] : expected) {
            double observed = static_cast<double>(counts[mode]) / draws;
            INFO("mode " << parent_mode_name(mode) << ": expected " << share << ", observed " << observed);
            CHECK(std::abs(observed - share) < 0.015);
        }
    }
}

TEST_CASE("exploit prefers fit elites and spreads over elites expanded often", "[search]")
{
    IslandGrid grid = sample_grid();
    SelectionMix exploit_only{1, 0, 0};
    Rng rng(3);
    std::map<int64_t, int> picks;
    for (int i = 0; i < 10000; ++i)
        ++picks[choose_parent(grid, exploit_only, {}, {}, rng).parent->candidate_id];
    CHECK(picks[2] > picks[3]);
    CHECK(picks[3] > picks[1]);
    CHECK(picks[1] > picks[4]);
    ChildCounts children{{2, 50}};
    std::map<int64_t, int> after;
    for (int i = 0; i < 10000; ++i)
        ++after[choose_parent(grid, exploit_only, children, {}, rng).parent->candidate_id];
    CHECK(after[2] < picks[2] / 5);
}

TEST_CASE("target mode names an empty neighbour of its parent and skips blocked cells", "[search]")
{
    IslandGrid grid = sample_grid();
    SelectionMix target_only{0, 0, 1};
    Rng rng(5);
    for (int i = 0; i < 500; ++i) {
        ParentChoice choice = choose_parent(grid, target_only, {}, {}, rng);
        REQUIRE(choice.mode == ParentMode::target);
        CHECK(grid.at(choice.target_cell) == nullptr);
        auto around = neighbour_cells(choice.parent->cell);
        CHECK(std::find(around.begin(), around.end(), choice.target_cell) != around.end());
    }
    // With every cell blocked the draw falls back to explore.
    ParentChoice blocked = choose_parent(grid, target_only, {}, [](const std::string&) { return false; }, rng);
    CHECK(blocked.mode == ParentMode::explore);
    CHECK(choose_parent(IslandGrid(), target_only, {}, {}, rng).mode == ParentMode::none);
}

TEST_CASE("inspirations come from the island's other cells, never the parent", "[search]")
{
    IslandGrid grid = sample_grid();
    Rng rng(9);
    for (int i = 0; i < 200; ++i) {
        auto ids = choose_inspirations(grid, 3, 3, rng);
        CHECK(ids.size() == 3);
        CHECK(ids.front() == 2); // the island's best comes first
        CHECK(std::find(ids.begin(), ids.end(), 3) == ids.end());
        CHECK(std::set<int64_t>(ids.begin(), ids.end()).size() == ids.size());
    }
    auto from_best = choose_inspirations(grid, 2, 3, rng);
    CHECK(std::find(from_best.begin(), from_best.end(), 2) == from_best.end());
}
