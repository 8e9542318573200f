// The vendor baselines through the real binary on a GPU: `kforge eval --json` checks each task's
// vendor routine against the reference inside the GPU worker, times it interleaved with the
// reference on every bench shape, and shows it per shape; without the library the run says why
// and speedups fall back to the reference.
#include "kf_catch.hpp"

#include <algorithm>

#include "test_support.hpp"
#include "util/json_reader.hpp"
#include "vendor_test_support.hpp"

using namespace kforge;

namespace {

// The first seed kernel the task ships (tasks/<name>/seed_*.cu).
std::filesystem::path first_seed(const Task& task)
{
    std::vector<std::filesystem::path> seeds;
    for (const auto& entry : std::filesystem::directory_iterator(test::source_dir() / "tasks" / task.name))
        if (entry.path().filename().string().rfind("seed_", 0) == 0)
            seeds.push_back(entry.path());
    std::sort(seeds.begin(), seeds.end());
    REQUIRE_FALSE(seeds.empty());
    return seeds.front();
}

Json eval_json(const Task& task, const std::vector<std::string>& env = {})
{
    test::CommandResult run = test::run_kforge(
        {"eval", task.spec_path.string(), first_seed(task).string(), "--quick", "--json"}, env);
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    return Json::parse(run.out);
}

} // namespace

TEST_CASE("kforge eval times every task's vendor baseline beside the reference and reports it per bench shape",
          "[gpu][vendor][e2e][slow]")
{
    test::require_gpu();
    for (const auto& task : test::tasks_with_vendor_baselines()) {
        INFO(task.name);
        Json report = eval_json(task);
        const Json& statuses = report["environment"]["vendor_baselines"];
        REQUIRE(statuses.size() == task.vendor_baselines.size());
        INFO(statuses.dump());
        CHECK(statuses[0]["routine"] == task.vendor_baselines[0]);
        CHECK(statuses[0]["timed"] == true);
        CHECK(report["environment"]["vendor_library"].value("versions", "").find("CUDA runtime") != std::string::npos);
        REQUIRE(report["shapes"].size() == task.bench.size());
        for (const auto& shape : report["shapes"]) {
            INFO(shape.dump());
            CHECK(shape["vendor_subject"] == task.vendor_baselines[0]);
            CHECK(shape["vendor_ns"].get<double>() > 0);
            CHECK(shape["vendor_speedup"].get<double>() > 0);
        }
        CHECK(report["baseline"]["subject"] == task.vendor_baselines[0]);
        CHECK(report["baseline"]["library"] == std::string(vendor_baseline_library(task.vendor_baselines[0])));
        CHECK(report["baseline"]["speedup"].get<double>() > 0);
    }
}

TEST_CASE("without libkforge_vendor.so kforge eval says why and measures speedups against the reference",
          "[gpu][vendor][e2e]")
{
    test::require_gpu();
    Task axpy = load_task(test::source_dir() / "tasks" / "axpy_f32.json");
    Json report = eval_json(axpy, {"KFORGE_VENDOR_LIB=/nonexistent/libkforge_vendor.so"});
    const Json& status = report["environment"]["vendor_baselines"][0];
    CHECK(status["routine"] == "cublas_saxpy");
    CHECK(status["timed"] == false);
    CHECK(status["reason"].get<std::string>().find("/nonexistent/libkforge_vendor.so not found") != std::string::npos);
    for (const auto& shape : report["shapes"]) {
        CHECK(shape["vendor_ns"].get<double>() == 0);
        CHECK(shape["reference_ns"].get<double>() > 0);
    }
    CHECK(report["baseline"]["subject"] == "reference");
    CHECK(report["baseline"]["speedup"].get<double>() == Approx(report["fitness"].get<double>()));
}
