// The scheduling scenarios shared by the in-process and the MPI tests; see the header.
#include "evaluator/scheduling_scenarios.hpp"

#include <algorithm>
#include <map>
#include <thread>

#include "kf_catch.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

std::string seed(const std::string& name)
{
    return read_file(source_dir() / "tasks" / "softmax_f32" / name);
}

// Waits (up to 60 s) until `done` holds.
template <typename Predicate>
bool eventually(Predicate done)
{
    for (int i = 0; i < 6000 && !done(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done();
}

} // namespace

void check_sweep_handoff(CandidateEvaluator& evaluator)
{
    std::vector<GpuUsage> usage = evaluator.gpu_usage();
    REQUIRE(usage.size() == 2);
    const GpuIdentity first = usage[0].gpu;
    const GpuIdentity second = usage[1].gpu;
    INFO("first " << first.label() << ", second " << second.label());
    auto evaluations = [&](size_t gpu) { return evaluator.gpu_usage().at(gpu).evaluations; };

    EvalJob held; // the first GPU: a confirmation, 4.2 s
    held.ticket = 1;
    held.source = seed("seed_warp_row.cu");
    held.options = EvalOptions{true, false, false, ParamPoint{{"WARPS", 4}, {"VEC", 4}}, false, first};
    evaluator.submit(held);
    REQUIRE(eventually([&] { return evaluations(0) == 1; }));

    EvalJob sweep; // the second GPU: 8 param points, 0.4 s each
    sweep.ticket = 10;
    sweep.source = seed("seed_block_row.cu");
    evaluator.submit(sweep);
    REQUIRE(eventually([&] { return evaluations(1) == 1; }));

    // An earlier confirmation with a profile (8.2 s), which the second GPU takes between its
    // variants since the first is busy, and a later job that must wait for the sweep.
    EvalJob earlier;
    earlier.ticket = 5;
    earlier.source = seed("seed_row_regs.cu");
    earlier.options = EvalOptions{true, false, true, ParamPoint{{"THREADS", 256}, {"VPT", 4}}, false, second};
    evaluator.submit(earlier);
    EvalJob later;
    later.ticket = 20;
    later.source = seed("seed_split_row.cu");
    later.options.only_params = ParamPoint{{"THREADS", 512}, {"VPT", 8}};
    evaluator.submit(later);

    std::vector<uint64_t> order;
    std::map<uint64_t, Evaluation> results;
    while (results.size() < 4)
        for (auto& r : evaluator.collect(std::chrono::seconds(5))) {
            order.push_back(r.ticket);
            results[r.ticket] = std::move(r.evaluation);
        }
    for (uint64_t ticket : {1, 5, 10, 20})
        REQUIRE(results.at(ticket).gpu);
    CHECK(*results.at(5).gpu == second); // it left its sweep for the earlier job...
    CHECK(*results.at(10).gpu == first); // ...and the first GPU finished the sweep and timed its winner
    auto position = [&](uint64_t ticket) { return std::find(order.begin(), order.end(), ticket) - order.begin(); };
    CHECK(position(10) < position(5));  // without waiting for the second GPU to come back
    CHECK(position(10) < position(20)); // the later job came after the sweep
    CHECK(results.at(10).metrics["sweep"].size() == 9); // 8 variants and the winner's final run
}

} // namespace kforge::test
