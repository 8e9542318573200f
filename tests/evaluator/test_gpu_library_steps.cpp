// Library steps (cuBLASLt inside a launch plan) through the real GPU evaluator: good plans are
// correct, and every way a plan could use a step to cheat or to touch memory it does not own gets a
// failing verdict: writing past its output, reading a buffer the task does not give it, writing an
// input, handing out data a step left in scratch in an earlier run, leaving part of the output unwritten.
#include "kf_catch.hpp"

#include "core/task.hpp"
#include "evaluator/evaluator.hpp"
#include "gpu_verdict_cases.hpp"
#include "test_support.hpp"

using namespace kforge;

TEST_CASE("library-step plans get the right verdicts, hostile ones a failing one each", "[gpu][library]")
{
    test::require_gpu();
    Task task = load_task(test::source_dir() / "tasks" / "sgemm_f32.json");
    test::TempDir cache;
    EvaluatorConfig config;
    config.worker_executable = test::kforge_binary().string();
    config.cache_dir = cache.path();
    config.run_secret = 0x11b;
    config.launch_deadline = std::chrono::milliseconds(5000);
    std::vector<test::VerdictCase> cases = {
        {"good_matmul_step.cu", VerdictKind::correct, ""},
        {"step_past_output.cu", VerdictKind::plan_error, "'C' would be written over"},
        {"step_reads_unknown.cu", VerdictKind::plan_error, "B_packed"},
        {"step_writes_input.cu", VerdictKind::plan_error, "input"},
        {"stale_scratch.cu", VerdictKind::incorrect, "C"},
        {"half_output.cu", VerdictKind::incorrect, "C"},
        {"good_step_then_kernel.cu", VerdictKind::correct, ""},
    };
    test::check_verdicts(task, test::fixtures_dir() / "kernels" / "sgemm_f32_library", cases, config);
}
