// The evaluator against deliberately bad kernels on a real GPU: each gets the right verdict, and the
// evaluation goes on after each (faults and hangs cost a worker restart, never the run).
#include "kf_catch.hpp"

#include <map>

#include "core/task.hpp"
#include "evaluator/evaluator.hpp"
#include "gpu_verdict_cases.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

using namespace kforge;
using test::evaluate_all;

namespace {

std::string softmax_kernel(const std::string& name)
{
    return read_file(test::fixtures_dir() / "kernels" / "softmax_f32" / name);
}

} // namespace

TEST_CASE("bad softmax kernels get the right verdicts and the evaluation goes on after each", "[gpu][evaluator]")
{
    test::require_gpu();
    Task task = load_task(test::source_dir() / "tasks" / "softmax_f32.json");
    test::TempDir cache;
    EvaluatorConfig config;
    config.worker_executable = test::kforge_binary().string();
    config.cache_dir = cache.path();
    config.run_secret = 0x5eed;
    config.launch_deadline = std::chrono::milliseconds(3000);
    std::vector<test::VerdictCase> cases = test::hack_kernel_cases("x", "y");
    test::check_verdicts(task, test::fixtures_dir() / "kernels" / "softmax_f32", cases, config);
}

TEST_CASE("repeated evaluations of one kernel agree within a few percent", "[gpu][evaluator]")
{
    test::require_gpu();
    Task task = load_task(test::source_dir() / "tasks" / "softmax_f32.json");
    EvaluatorConfig config;
    config.worker_executable = test::kforge_binary().string();
    config.reuse_measurements = false; // the same point four times: each must really be timed
    auto evaluator = make_gpu_evaluator(task, config);
    std::vector<EvalJob> jobs;
    for (uint64_t i = 0; i < 4; ++i) {
        EvalJob job;
        job.ticket = i;
        job.source = softmax_kernel("good_block_row.cu");
        job.options.confirm = true;
        job.options.only_params = ParamPoint{{"BLOCK", 256}};
        jobs.push_back(job);
    }
    auto results = evaluate_all(*evaluator, jobs);
    std::vector<double> medians;
    for (auto& [ticket, e] : results) {
        REQUIRE(e.verdict.is_correct());
        medians.push_back(e.measurements.front().median_ns);
    }
    double lo = *std::min_element(medians.begin(), medians.end());
    double hi = *std::max_element(medians.begin(), medians.end());
    INFO("medians on " << task.bench.front().label << ": " << lo << " .. " << hi << " ns");
    CHECK(hi / lo < 1.03);
}

TEST_CASE("a kernel evaluated again is answered from the memo; a held-out check after it runs only that check",
          "[gpu][evaluator]")
{
    test::require_gpu();
    Task task = load_task(test::source_dir() / "tasks" / "softmax_f32.json");
    EvaluatorConfig config;
    config.worker_executable = test::kforge_binary().string();
    config.run_secret = 0x5eed;
    // One GPU: a fitness is a time over the baseline of the GPU that evaluated the job, and with
    // several GPUs the reused job may land on another GPU, whose baseline differs by its noise
    // while the reused time (the memo's answer, right for every GPU of the model) does not.
    config.gpus = parse_gpu_selection("1");
    auto evaluator = make_gpu_evaluator(task, config);
    auto job = [&](uint64_t ticket, bool held_out) {
        EvalJob j;
        j.ticket = ticket;
        j.source = softmax_kernel("good_block_row.cu");
        j.options.held_out = held_out;
        return j;
    };
    // One after the other, so which job measured and which reused is known.
    Evaluation first = evaluate_all(*evaluator, {job(0, false)}).at(0);
    Evaluation again = evaluate_all(*evaluator, {job(1, false)}).at(1);
    Evaluation checked = evaluate_all(*evaluator, {job(2, true)}).at(2);
    REQUIRE(first.verdict.is_correct());
    REQUIRE(again.verdict.is_correct());
    INFO("first: " << first.metrics["runs"].dump() << "\nagain: " << again.metrics["runs"].dump());
    for (const auto& run : first.metrics["runs"])
        CHECK(!run.contains("reused"));
    for (const auto& run : again.metrics["runs"]) {
        CHECK(run.contains("reused"));
        CHECK(run["gpu_s"].get<double>() == 0);
    }
    CHECK(again.measurements.front().median_ns == first.measurements.front().median_ns);
    CHECK(again.fitness == first.fitness);
    REQUIRE(checked.verdict.is_correct());
    const Json last = checked.metrics["runs"].back();
    INFO("held-out check: " << last.dump());
    CHECK(last["held_out"].get<bool>());
    CHECK(last["reused"]["phases"].dump().find("timing") != std::string::npos);
    CHECK(last["gpu_s"].get<double>() > 0);
}
