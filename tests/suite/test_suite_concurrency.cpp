// --per-gpu auto's estimate (suite/concurrency.hpp): enough runs per GPU that their searches, each
// mostly waiting for its model, keep the GPU busy.
#include <catch2/catch.hpp>

#include "suite/concurrency.hpp"

using namespace kforge;

TEST_CASE("auto's runs per GPU: a prior until candidates and replies come, then Little's law on what the runs "
          "measured",
          "[suite]")
{
    SuiteDemand d;
    CHECK(estimate_runs_per_gpu(d).runs == k_prior_runs_per_gpu); // nothing measured yet
    d.models = true;
    CHECK(estimate_runs_per_gpu(d).runs == k_prior_model_runs_per_gpu);
    // The reference and seeds are measured, but no reply has come: the model's latency is unknown.
    d.candidates = 3;
    d.candidate_s = 3;
    d.other_s = 6;
    d.run_s = 100;
    RunsPerGpu r = estimate_runs_per_gpu(d);
    CHECK(r.runs == k_prior_model_runs_per_gpu);
    CHECK(r.why == "16 before the model's first reply");

    // 20 candidates at 1 GPU-s and 20 GPU-s of set-ups over 400 run-seconds: a run keeps the GPU
    // 10% busy, so fourteen runs offer it 1.4 times what it can serve.
    d.model_calls = 20;
    d.model_latency_s = 600;
    d.candidates = 20;
    d.candidate_s = 20;
    d.other_s = 20;
    d.run_s = 400;
    r = estimate_runs_per_gpu(d);
    CHECK(r.runs == 14);
    CHECK(r.why.find("model 30.0 s/call, 1.00 GPU-s/candidate") != std::string::npos);

    // Time waited for the measuring lock is not a run's own: the same work in less own time.
    d.waited_s = 200;
    CHECK(estimate_runs_per_gpu(d).runs == 7);
    d.waited_s = 0;

    // Slower replies stretch the runs' time for the same GPU work: more runs.
    d.run_s = 1600;
    CHECK(estimate_runs_per_gpu(d).runs == k_most_auto_runs_per_gpu);
    // A model that answers at once: a run keeps the GPU busy 90% by itself, and a second queues behind it.
    SuiteDemand builtin;
    builtin.candidates = 50;
    builtin.candidate_s = 40;
    builtin.other_s = 5;
    builtin.run_s = 50;
    r = estimate_runs_per_gpu(builtin);
    CHECK(r.runs == 2);
    CHECK(r.why.find("no model") != std::string::npos);
    // And one whose start-up is mostly off the GPU needs more beside it.
    builtin.run_s = 90;
    CHECK(estimate_runs_per_gpu(builtin).runs == 3);
}

TEST_CASE("a run's memory estimate grows with its task's tensors and with a PyTorch reference process", "[suite]")
{
    CHECK(run_gpu_bytes(true, 0) > run_gpu_bytes(false, 0));
    CHECK(run_gpu_bytes(false, uint64_t{10} << 30) >= uint64_t{20} << 30);
    CHECK(run_host_bytes(true) > run_host_bytes(false));
}
