// The hack kernels of tests/fixtures/kernels/ on an imported PyTorch program, on a real GPU: the
// fixture problem logsumexp_argmax.py (two row statistics of a score matrix, the row-wise problem
// closest to softmax) is imported with the real binary, and every bad softmax kernel, adapted to it
// in tests/fixtures/kernels/logsumexp_argmax/, must get the verdict it gets on softmax, with the
// program's own inputs, parameters and fp64 outputs coming from the PyTorch reference process.
#include "kf_catch.hpp"

#include "core/task.hpp"
#include "evaluator/evaluator.hpp"
#include "gpu_verdict_cases.hpp"
#include "test_support.hpp"

using namespace kforge;

namespace {

// The adapted kernels key their defects on the row count: tests_only goes wrong above 50000 rows,
// held_out_only at an odd count above 4096. The importer's shapes must keep them apart.
void require_shapes_the_kernels_assume(const Task& task)
{
    for (const auto& shape : task.tests) {
        INFO("test shape " << shape.label);
        REQUIRE(shape.sizes.at("rows") <= 4096);
    }
    for (const auto& shape : task.bench) {
        INFO("bench shape " << shape.label);
        REQUIRE(shape.sizes.at("rows") > 50000);
    }
    REQUIRE(task.held_out.size() == 1);
    int64_t rows = task.held_out.front().sizes.at("rows");
    INFO("held-out shape " << task.held_out.front().label);
    REQUIRE(rows > 4096);
    REQUIRE(rows <= 50000);
    REQUIRE(rows % 2 == 1);
}

} // namespace

TEST_CASE("bad kernels on an imported PyTorch program get the same verdicts as on softmax",
          "[gpu][evaluator][torch]")
{
    test::require_gpu();
    test::TempDir folder;
    auto spec = folder / "logsumexp_argmax.json";
    auto imported = test::run_kforge(
        {"task", "import", (test::fixtures_dir() / "torch" / "logsumexp_argmax.py").string(), "-o", spec.string()});
    INFO(imported.out << imported.err);
    REQUIRE(imported.exit_code == 0);
    Task task = load_task(spec);
    REQUIRE(task.is_torch());
    require_shapes_the_kernels_assume(task);

    test::TempDir cache;
    EvaluatorConfig config;
    config.worker_executable = test::kforge_binary().string();
    config.cache_dir = cache.path();
    config.run_secret = 0x5eed;
    config.launch_deadline = std::chrono::milliseconds(3000);
    config.time_vendor_baselines = false; // torch eager is the baseline; torch.compile would take minutes
    // The softmax kernels' verdicts, in the same order, with this program's names.
    std::vector<test::VerdictCase> cases = test::hack_kernel_cases("scores", "out0");
    test::check_verdicts(task, test::fixtures_dir() / "kernels" / "logsumexp_argmax", cases, config);
}
