// --per-gpu auto's estimate (suite/concurrency.hpp): enough runs per GPU that their searches, each
// mostly waiting for its model, keep the GPU busy.
#include <catch2/catch.hpp>

#include "suite/concurrency.hpp"

using namespace kforge;

TEST_CASE("auto's runs per GPU follow the model's latency, the GPU time per candidate and the runs' start-up",
          "[suite]")
{
    SuiteDemand d;
    CHECK(estimate_runs_per_gpu(d, 4).runs == k_prior_runs_per_gpu); // nothing measured yet
    d.candidates = 3;
    d.gpu_busy_s = 6;
    CHECK(estimate_runs_per_gpu(d, 4).runs == k_prior_runs_per_gpu); // too little measured

    // 30 s a call, 2 GPU-s a candidate, 4 calls in flight: one search keeps the GPU 4*2/32 = 25%
    // busy, so 0.9/0.25 = 3.6 -> 4 searching, and one place more for a run starting up.
    d.candidates = 10;
    d.gpu_busy_s = 20;
    d.models = true; // the reference and seeds are measured, but no reply has come: the latency is unknown
    CHECK(estimate_runs_per_gpu(d, 4).runs == k_prior_runs_per_gpu);
    d.model_calls = 10;
    d.model_latency_s = 300;
    RunsPerGpu r = estimate_runs_per_gpu(d, 4);
    CHECK(r.runs == 5);
    CHECK(r.why.find("30.0 s/call") != std::string::npos);

    // Once runs have ended: they spent a third of their lives starting up, so 3.6 * 1.5 = 5.4 -> 6.
    d.ended_runs = 2;
    d.startup_s = 60;
    d.search_s = 120;
    CHECK(estimate_runs_per_gpu(d, 4).runs == 6);

    // A slower model needs more runs; more calls in flight per run, fewer.
    d.model_latency_s = 900; // 90 s a call
    int slow = estimate_runs_per_gpu(d, 4).runs;
    CHECK(slow > 6);
    CHECK(estimate_runs_per_gpu(d, 16).runs < slow);

    // No model (the builtin proposer answers at once): one search keeps the GPU busy; the start-ups
    // still call for another run beside it.
    SuiteDemand builtin;
    builtin.candidates = 50;
    builtin.gpu_busy_s = 50;
    builtin.ended_runs = 1;
    builtin.startup_s = 30;
    builtin.search_s = 30;
    CHECK(estimate_runs_per_gpu(builtin, 4).runs == 2);

    // Never past the most.
    d.model_latency_s = 1e6;
    CHECK(estimate_runs_per_gpu(d, 1).runs == k_most_auto_runs_per_gpu);
}

TEST_CASE("a run's memory estimate grows with its task's tensors and with a PyTorch reference process", "[suite]")
{
    CHECK(run_gpu_bytes(true, 0) > run_gpu_bytes(false, 0));
    CHECK(run_gpu_bytes(false, uint64_t{10} << 30) >= uint64_t{20} << 30);
    CHECK(run_host_bytes(true) > run_host_bytes(false));
}
