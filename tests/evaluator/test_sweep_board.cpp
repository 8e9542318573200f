// The board a sweep's variants are shared on (evaluator/sweep_board.hpp): each variant runs once,
// results come back in variant order whoever ran them, a variant given back is run again, and an
// abandoned sweep hands out nothing more.
#include "kf_catch.hpp"

#include <thread>

#include "evaluator/gpu_slot.hpp"
#include "evaluator/sweep_board.hpp"

using namespace kforge;

namespace {

VariantResult result_for(int block)
{
    VariantResult r;
    r.params = ParamPoint{{"BLOCK", block}};
    r.verdict = Verdict{VerdictKind::correct, ""};
    return r;
}

} // namespace

TEST_CASE("a sweep board hands out each variant once and returns the results in variant order", "[evaluator]")
{
    std::vector<Variant> variants(4);
    for (int i = 0; i < 4; ++i)
        variants[i].params = ParamPoint{{"BLOCK", 64 << i}};
    std::vector<const Variant*> pointers;
    for (const auto& v : variants)
        pointers.push_back(&v);
    Plan plan;
    SweepBoard board(pointers, plan, "kforge simulated GPU", 7);
    CHECK(board.has_unclaimed());

    // The helper takes one, the owner the rest; the helper finishes last.
    std::optional<size_t> helper = board.claim();
    REQUIRE(helper);
    std::vector<size_t> owned;
    while (auto i = board.claim())
        owned.push_back(*i);
    CHECK(owned.size() == 3);
    CHECK_FALSE(board.has_unclaimed());
    for (size_t i : owned)
        board.finish(i, result_for(static_cast<int>(variants[i].params.at("BLOCK"))), false);
    std::thread late([&] { board.finish(*helper, result_for(static_cast<int>(variants[*helper].params.at("BLOCK"))), true); });
    CHECK(board.wait_done_or_released());
    late.join();
    std::vector<VariantResult> results = board.results();
    REQUIRE(results.size() == 4);
    for (size_t i = 0; i < 4; ++i)
        CHECK(results[i].params == variants[i].params);
    CHECK(board.helped() == 1);
}

TEST_CASE("a variant whose helper was lost is run again, and an abandoned sweep hands out nothing", "[evaluator]")
{
    std::vector<Variant> variants(2);
    std::vector<const Variant*> pointers{&variants[0], &variants[1]};
    Plan plan;
    SweepBoard board(pointers, plan, "m", 1);
    size_t helper = *board.claim();
    size_t owner = *board.claim();
    board.finish(owner, result_for(1), false);
    board.release(helper); // the helper's GPU was lost
    CHECK_FALSE(board.wait_done_or_released());
    std::optional<size_t> again = board.claim();
    REQUIRE(again);
    CHECK(*again == helper);
    board.finish(*again, result_for(2), false);
    CHECK(board.wait_done_or_released());
    CHECK(board.helped() == 0);

    SweepBoard dropped(pointers, plan, "m", 2);
    dropped.abandon();
    CHECK_FALSE(dropped.has_unclaimed());
    CHECK_FALSE(dropped.claim());
}
