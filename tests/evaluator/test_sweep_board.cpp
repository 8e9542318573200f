// The board a sweep's variants are shared on (evaluator/gpu/sweep_board.hpp): each variant runs once,
// results come back in variant order whoever ran them, a variant given back is run again, an
// abandoned sweep hands out nothing more, and the final step goes to a helper only while the
// sweep's own GPU is away on another job.
#include "kf_catch.hpp"

#include <thread>

#include "evaluator/gpu/slot.hpp"
#include "evaluator/gpu/sweep_board.hpp"

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
    PreparedJob job;
    SweepBoard board(pointers, job, "kforge simulated GPU", 7);
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
    PreparedJob job;
    SweepBoard board(pointers, job, "m", 1);
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

    SweepBoard dropped(pointers, job, "m", 2);
    CHECK_FALSE(dropped.abandon()); // nobody delivered it: the job goes back to the queue
    CHECK_FALSE(dropped.has_unclaimed());
    CHECK_FALSE(dropped.has_helper_work());
    CHECK_FALSE(dropped.claim());
    CHECK(dropped.finished());
}

TEST_CASE("a sweep's final step goes to a helper only while its own GPU is away, and the owner then leaves it",
          "[evaluator]")
{
    std::vector<Variant> variants(2);
    std::vector<const Variant*> pointers{&variants[0], &variants[1]};
    PreparedJob job;
    SweepBoard board(pointers, job, "m", 3);
    size_t first = *board.claim();
    board.finish(first, result_for(1), false);
    board.set_owner_away(true); // the owner runs an earlier job between its variants
    size_t second = *board.claim();
    CHECK_FALSE(board.claim_final_step()); // a variant still runs
    board.finish(second, result_for(2), true);
    CHECK(board.has_helper_work());
    REQUIRE(board.claim_final_step());
    CHECK_FALSE(board.claim_final_step()); // one helper only
    CHECK_FALSE(board.has_helper_work());

    // The owner comes back while the helper times the winner: it waits and finds the job delivered.
    board.set_owner_away(false);
    std::thread helper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        board.final_step_delivered();
    });
    CHECK(board.wait_done_or_released());
    CHECK_FALSE(board.take_final_step());
    helper.join();
    CHECK(board.finished());
}

TEST_CASE("the owner keeps the final step when it is back first, or when the helper's GPU was lost", "[evaluator]")
{
    std::vector<Variant> variants(1);
    std::vector<const Variant*> pointers{&variants[0]};
    PreparedJob job;

    SweepBoard home(pointers, job, "m", 1);
    home.finish(*home.claim(), result_for(1), true);
    CHECK_FALSE(home.claim_final_step()); // the owner is not away
    CHECK(home.take_final_step());
    home.set_owner_away(true);
    CHECK_FALSE(home.claim_final_step()); // already the owner's
    CHECK(home.finished());

    SweepBoard lost(pointers, job, "m", 2);
    lost.set_owner_away(true);
    lost.finish(*lost.claim(), result_for(1), true);
    REQUIRE(lost.claim_final_step());
    lost.release_final_step(); // the helper's GPU was lost before it delivered
    lost.set_owner_away(false);
    CHECK(lost.take_final_step());

    // The owner's GPU lost while a helper runs the final step: abandon waits, then says it was delivered.
    SweepBoard handed(pointers, job, "m", 3);
    handed.set_owner_away(true);
    handed.finish(*handed.claim(), result_for(1), true);
    REQUIRE(handed.claim_final_step());
    std::thread helper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        handed.final_step_delivered();
    });
    CHECK(handed.abandon());
    helper.join();
}
