// The scheduling scenarios shared by the in-process and the MPI tests; see the header.
#include "evaluator/scheduling_scenarios.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <thread>

#include "evaluator/gpu_selection.hpp"
#include "kf_catch.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

std::string softmax_seed(const std::string& name)
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

// The scenario's jobs, in the order check_sweep_handoff submits them, for `first` and `second`.
std::vector<EvalJob> handoff_jobs(const GpuIdentity& first, const GpuIdentity& second)
{
    std::vector<EvalJob> jobs(4);
    jobs[0].ticket = 1; // the first GPU: a confirmation, 4.2 s
    jobs[0].source = softmax_seed("seed_warp_row.cu");
    jobs[0].options = EvalOptions{true, false, false, ParamPoint{{"WARPS", 4}, {"VEC", 4}}, false, first};
    jobs[1].ticket = 10; // the second GPU: 8 param points, 0.4 s each
    jobs[1].source = softmax_seed("seed_block_row.cu");
    // An earlier confirmation with a profile (8.2 s), which the second GPU takes between its
    // variants since the first is busy, and a later job that must wait for the sweep.
    jobs[2].ticket = 5;
    jobs[2].source = softmax_seed("seed_row_regs.cu");
    jobs[2].options = EvalOptions{true, false, true, ParamPoint{{"THREADS", 256}, {"VPT", 4}}, false, second};
    jobs[3].ticket = 20;
    jobs[3].source = softmax_seed("seed_split_row.cu");
    jobs[3].options.only_params = ParamPoint{{"THREADS", 512}, {"VPT", 8}};
    return jobs;
}

// Sets an environment variable for as long as it lives (the workers an evaluator starts read it).
class ScopedEnv
{
public:
    ScopedEnv(const char* name, const char* value) : m_name(name)
    {
        if (const char* old = std::getenv(name))
            m_old = old;
        ::setenv(name, value, 1);
    }
    ~ScopedEnv()
    {
        if (m_old)
            ::setenv(m_name, m_old->c_str(), 1);
        else
            ::unsetenv(m_name);
    }

private:
    const char* m_name;
    std::optional<std::string> m_old;
};

} // namespace

void warm_handoff_compiles(const Task& task, EvaluatorConfig config)
{
    ScopedEnv gpus("KFORGE_SIMULATE_GPUS", "1");
    ScopedEnv unit("KFORGE_SIMULATE_GPU_MS", "1");
    config.mpi = nullptr;
    config.gpus = parse_gpu_selection("all");
    std::unique_ptr<CandidateEvaluator> warm = make_gpu_evaluator(task, config);
    const GpuIdentity only = warm->gpu_usage().at(0).gpu;
    std::vector<EvalJob> jobs = handoff_jobs(only, only);
    for (auto& job : jobs)
        warm->submit(job);
    size_t collected = 0;
    while (collected < jobs.size())
        collected += warm->collect(std::chrono::seconds(5)).size();
}

void check_sweep_handoff(CandidateEvaluator& evaluator)
{
    std::vector<GpuUsage> usage = evaluator.gpu_usage();
    REQUIRE(usage.size() == 2);
    const GpuIdentity first = usage[0].gpu;
    const GpuIdentity second = usage[1].gpu;
    INFO("first " << first.label() << ", second " << second.label());
    auto evaluations = [&](size_t gpu) { return evaluator.gpu_usage().at(gpu).evaluations; };

    std::vector<EvalJob> jobs = handoff_jobs(first, second);
    evaluator.submit(jobs[0]); // held by the first GPU
    REQUIRE(eventually([&] { return evaluations(0) == 1; }));
    evaluator.submit(jobs[1]); // the sweep, on the second
    REQUIRE(eventually([&] { return evaluations(1) == 1; }));
    evaluator.submit(jobs[2]); // earlier
    evaluator.submit(jobs[3]); // later

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
