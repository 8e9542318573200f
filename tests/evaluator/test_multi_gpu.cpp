// Every GPU of a host: the real binary over simulated GPUs (evaluator/worker/simulator.hpp), so the
// GPU evaluator's scheduler, its per-GPU workers and their respawns run here without a GPU.
#include "kf_catch.hpp"

#include <algorithm>
#include <csignal>
#include <regex>
#include <set>
#include <thread>

#include "archive/archive.hpp"
#include "evaluator/gpu/devices.hpp"
#include "evaluator/worker/simulator.hpp"
#include "evaluator/simulated_runs.hpp"
#include "util/error.hpp"
#include "util/json_reader.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

std::vector<VisibleGpu> gpus_named(const std::vector<std::string>& names)
{
    std::vector<VisibleGpu> gpus;
    for (const auto& facts : simulated_devices(join(names, ",")))
        gpus.push_back(VisibleGpu{facts.ordinal, facts});
    return gpus;
}

std::vector<int> indices(const std::vector<VisibleGpu>& gpus)
{
    std::vector<int> out;
    for (const auto& gpu : gpus)
        out.push_back(gpu.index);
    return out;
}

} // namespace

TEST_CASE("--gpus takes all, a count or a list of indices, and refuses anything else", "[evaluator][multigpu]")
{
    CHECK(parse_gpu_selection("all").kind == GpuSelection::Kind::all);
    CHECK(parse_gpu_selection("").kind == GpuSelection::Kind::all);
    GpuSelection first = parse_gpu_selection("2");
    CHECK(first.kind == GpuSelection::Kind::first);
    CHECK(first.first == 2);
    GpuSelection listed = parse_gpu_selection("0, 2,5");
    CHECK(listed.kind == GpuSelection::Kind::indices);
    CHECK(listed.indices == std::vector<int>{0, 2, 5});
    GpuSelection one = parse_gpu_selection("2,"); // a list of one device, not the first two
    CHECK(one.kind == GpuSelection::Kind::indices);
    CHECK(one.indices == std::vector<int>{2});
    for (const char* bad : {"0", "-1", "two", "1,1", "0,,2", "1.5", ",", "1,,"})
        CHECK_THROWS_WITH(parse_gpu_selection(bad), Catch::Contains("--gpus"));
}

TEST_CASE("a selection names only GPUs the host has and one GPU model", "[evaluator][multigpu]")
{
    auto same = gpus_named({"h100", "h100", "h100", "h100"});
    CHECK(indices(select_gpus(same, parse_gpu_selection("all"), "node1")) == std::vector<int>{0, 1, 2, 3});
    CHECK(indices(select_gpus(same, parse_gpu_selection("2"), "node1")) == std::vector<int>{0, 1});
    CHECK(indices(select_gpus(same, parse_gpu_selection("3,1"), "node1")) == std::vector<int>{3, 1});
    CHECK_THROWS_WITH(select_gpus(same, parse_gpu_selection("5"), "node1"), Catch::Contains("node1 has 4 GPUs"));
    CHECK_THROWS_WITH(select_gpus(same, parse_gpu_selection("0,4"), "node1"),
                      Catch::Contains("node1 has no GPU 4 (its GPUs are 0 to 3)"));

    auto mixed = gpus_named({"h100", "a100", "h100"});
    CHECK_THROWS_WITH(select_gpus(mixed, parse_gpu_selection("all"), "node1"),
                      Catch::Contains("node1 has GPUs of different models: a100 (1); h100 (0,2)") &&
                          Catch::Contains("--gpus"));
    CHECK(indices(select_gpus(mixed, parse_gpu_selection("0,2"), "node1")) == std::vector<int>{0, 2});
}

TEST_CASE("ranks on one host split its GPUs, and share them when there are fewer GPUs than ranks",
          "[evaluator][multigpu]")
{
    auto four = gpus_named({"g", "g", "g", "g"});
    CHECK(indices(share_for_local_rank(four, 0, 1)) == std::vector<int>{0, 1, 2, 3});
    CHECK(indices(share_for_local_rank(four, 0, 2)) == std::vector<int>{0, 2});
    CHECK(indices(share_for_local_rank(four, 1, 2)) == std::vector<int>{1, 3});
    CHECK(indices(share_for_local_rank(four, 2, 3)) == std::vector<int>{2});
    auto one = gpus_named({"g"});
    CHECK(indices(share_for_local_rank(one, 0, 2)) == std::vector<int>{0});
    CHECK(indices(share_for_local_rank(one, 1, 2)) == std::vector<int>{0});
}

TEST_CASE("optimize refuses GPUs of two models, and a --gpus naming a GPU the host lacks, before writing anything",
          "[e2e][multigpu]")
{
    TempDir dir;
    auto archive = dir / "run.kforge";
    auto mixed = run_kforge(replayed_softmax_args(archive), simulated_env("sim-a,sim-a,sim-b"));
    CHECK(mixed.exit_code == 2);
    CHECK_THAT(mixed.err, Catch::Contains("GPUs of different models: sim-a (0,1); sim-b (2)"));
    CHECK_FALSE(std::filesystem::exists(archive));

    auto args = replayed_softmax_args(archive);
    args.insert(args.end(), {"--gpus", "4"});
    auto too_many = run_kforge(args, simulated_env("3"));
    CHECK(too_many.exit_code == 2);
    CHECK_THAT(too_many.err, Catch::Contains("--gpus 4:") && Catch::Contains("has 3 GPUs"));
    CHECK_FALSE(std::filesystem::exists(archive));

    args.back() = "zero";
    auto bad = run_kforge(args, simulated_env("3"));
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Catch::Contains("--gpus 'zero'"));
}

TEST_CASE("a run over three GPUs uses all three, survives a killed GPU worker and records what a one-GPU run records",
          "[e2e][multigpu]")
{
    std::vector<std::string> expected = recorded_candidates(one_gpu_reference_archive());
    REQUIRE(expected.size() >= 8);

    TempDir dir;
    auto archive = dir / "three.kforge";
    RunningProgram run(kforge_binary(), with_debug_log(replayed_softmax_args(archive)), simulated_env("3", 150));
    // Once candidates flow, SIGKILL one GPU worker, as the OOM killer or a user might.
    REQUIRE(wait_for_stderr(run, "[2/12]", 300));
    std::vector<int> workers = child_processes(run.pid(), "__worker", "gpu");
    REQUIRE(workers.size() == 3);
    ::kill(workers[1], SIGKILL);
    CommandResult result = run.wait();
    INFO(result.out << result.err);
    REQUIRE(result.exit_code == 0);

    INFO("the one-GPU run's choices (this run's are in its log):\n" << one_gpu_reference_choices());
    CHECK(recorded_candidates(archive) == expected);
    Archive three = Archive::open(archive, OpenMode::read_only);
    std::vector<GpuTotals> gpus = three.gpu_totals();
    REQUIRE(gpus.size() == 3);
    int64_t measured = 0;
    int restarts = 0;
    for (const auto& gpu : gpus) {
        INFO(gpu.usage.gpu.label());
        CHECK(gpu.candidates > 0);
        CHECK(gpu.usage.evaluations >= gpu.candidates);
        CHECK(gpu.usage.busy_s > 0);
        CHECK(gpu.sessions == 1);
        CHECK_FALSE(gpu.usage.lost);
        measured += gpu.candidates;
        restarts += gpu.usage.restarts;
    }
    CHECK(restarts >= 1);
    CHECK(measured <= three.candidate_count());
    // The summary names each GPU's share.
    CHECK_THAT(result.out, Catch::Contains("gpu0") && Catch::Contains("gpu1") && Catch::Contains("gpu2"));

    // inspect counts per GPU, and the counts add up to the archive's candidates.
    auto inspect = run_kforge({"inspect", archive.string(), "--json"});
    REQUIRE(inspect.exit_code == 0);
    Json report = Json::parse(inspect.out);
    const Json& section = report.at("gpus");
    CHECK(section.at("gpus").size() == 3);
    CHECK(section.at("candidates_measured").get<int64_t>() + section.at("candidates_without_gpu").get<int64_t>() ==
          three.candidate_count());
    auto text = run_kforge({"inspect", archive.string()});
    CHECK_THAT(text.out, Catch::Contains("GPUs (3)"));
}

TEST_CASE("under CUDA_VISIBLE_DEVICES as indices (SLURM's --gres=gpu:N) a run uses exactly those GPUs, each worker "
          "pinned to its own by UUID",
          "[e2e][multigpu]")
{
    std::vector<DeviceFacts> machine = simulated_devices("3");
    TempDir dir;
    auto archive = dir / "given.kforge";
    std::vector<std::string> env = simulated_env("3");
    env.push_back("CUDA_VISIBLE_DEVICES=2,0");
    auto run = run_kforge(replayed_softmax_args(archive, 4), env);
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    std::vector<GpuTotals> gpus = Archive::open(archive, OpenMode::read_only).gpu_totals();
    REQUIRE(gpus.size() == 2);
    std::vector<std::pair<int, std::string>> used;
    for (const auto& gpu : gpus)
        used.emplace_back(gpu.usage.gpu.device_index, gpu.usage.gpu.uuid);
    std::sort(used.begin(), used.end());
    // Numbered as the run sees them (0 and 1), each the machine's GPU the value named there.
    CHECK(used == std::vector<std::pair<int, std::string>>{{0, machine[2].uuid}, {1, machine[0].uuid}});

    // The GPUs given are all there is: --gpus counts them, and none given is no GPU.
    auto args = replayed_softmax_args(dir / "refused.kforge");
    args.insert(args.end(), {"--gpus", "2"});
    env.back() = "CUDA_VISIBLE_DEVICES=1";
    auto too_many = run_kforge(args, env);
    CHECK(too_many.exit_code == 2);
    CHECK_THAT(too_many.err, Catch::Contains("has 1 GPU"));
    env.back() = "CUDA_VISIBLE_DEVICES=";
    auto none = run_kforge(replayed_softmax_args(dir / "none.kforge"), env);
    CHECK(none.exit_code == 4);
    CHECK_THAT(none.err, Catch::Contains("no NVIDIA driver/GPU found") && Catch::Contains("CUDA_VISIBLE_DEVICES"));
}

TEST_CASE("a search compiles the task's reference and seeds while its GPU starts: the GPU's compiles of them are "
          "the ones already under way",
          "[evaluator][multigpu]")
{
    // A fresh CUBIN cache and a GPU whose start takes 3 s (a real one's context and baselines, or a
    // PyTorch reference process, take seconds). Whether the compiles finish within the start depends
    // on how busy the machine is, so what is checked is that they began then: each compile the GPU
    // asks for of the reference and the seeds is served by the compile begun ahead, never a second one.
    // (On two idle cores the first seed's screen began 0.011-0.015 s into the search this way;
    // compiled after the GPU's start, 1.08 s.)
    TempDir dir;
    std::vector<std::string> env = simulated_env("1");
    env.push_back("KFORGE_SIMULATE_GPU_SETUP_MS=3000");
    env.push_back("XDG_CACHE_HOME=" + (dir / "cache").string());
    CommandResult result = run_kforge({"--log-level", "debug", "optimize", (source_dir() / "tasks" / "softmax_f32.json").string(),
                                       "-o", (dir / "run.kforge").string(), "--model", "builtin", "--budget", "3",
                                       "--no-knowledge", "--progress", "lines"},
                                      env);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    CHECK_THAT(result.err, Catch::Contains("compile pool: compiling the reference and 2 seeds while the GPUs start"));
    const std::regex ahead(R"(compile pool: [0-9a-f]+ \(kernels ([a-z_, ]+)\) taken from its compile begun ahead)");
    std::set<std::string> kernels;
    std::string err = result.err;
    for (auto it = std::sregex_iterator(err.begin(), err.end(), ahead); it != std::sregex_iterator(); ++it)
        kernels.insert((*it)[1].str());
    // The reference's kernel and both seeds' (softmax_rows in one, softmax_rows and softmax_long_rows
    // in the other) were each served from a compile begun while the GPU started.
    CHECK(kernels.size() >= 2);
}
