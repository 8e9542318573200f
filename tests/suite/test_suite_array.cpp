// A suite as a SLURM job array, as docs/cluster.md tells users to run one: scripts/slurm/
// suite-array.sbatch submitted with --array=0-1 to the tests' one-node cluster (slurm_cluster.hpp),
// each array task `kforge suite run --shard I/2` on the one simulated GPU --gres=gpu:1 gave it.
// Both tasks are stopped in the middle of a problem, the two ways SLURM's jobs end early: task 0 by
// scancel (what a preemption or a time limit sends: SIGTERM to every process, SIGKILL KillWait
// later), task 1 by a SIGKILL of its kforge with no warning (a crash, the OOM killer, a dead node).
// The array submitted again finishes the suite: the stopped problems resumed with what they had
// recorded kept, finished ones skipped, and `suite report` agrees with each archive's `inspect`.
#include "kf_catch.hpp"

#include <chrono>
#include <csignal>
#include <regex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "evaluator/simulated_runs.hpp"
#include "evaluator/worker/simulator.hpp"
#include "slurm_cluster.hpp"
#include "suite/suite_checks.hpp"
#include "util/file_lock.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Four bundled tasks, two per shard: sorted, axpy_f32 and scan_u32 are shard 0's (indices 0 and 2),
// reduce_sum_f32 and transpose_f32 shard 1's.
const std::vector<std::string> k_problems{"axpy_f32", "reduce_sum_f32", "scan_u32", "transpose_f32"};
// Five candidates each, at most two in flight: a run stopped after its first has work left.
constexpr int k_budget = 5;

// Whether problem `id` is running and its archive holds at least `candidates` (of k_budget).
bool problem_midway(const fs::path& root, const std::string& id, int64_t candidates)
{
    auto manifest = suite_manifest_now(root);
    const SuiteProblem* problem = manifest ? manifest->find(id) : nullptr;
    return problem && problem->state == ProblemState::running && candidates_so_far(root, id).value_or(0) >= candidates;
}

// The job id of array task `task` of array job `array`; 0 when SLURM does not list it.
long array_task_job(const SlurmCluster& cluster, long array, int task)
{
    for (const auto& job : cluster.jobs(array))
        if (job.array_task_id == task)
            return job.id;
    return 0;
}

// The GPU indices SLURM gave an array task, from the line suite-array.sbatch logs ("GPUs 1").
std::vector<int> gpus_given(const fs::path& log)
{
    std::string text = slurp_file(log);
    std::smatch match;
    if (!std::regex_search(text, match, std::regex("shard [0-9]+/[0-9]+, GPUs ([0-9,]+)")))
        return {};
    std::vector<int> gpus;
    for (const auto& index : split(match[1].str(), ','))
        gpus.push_back(std::stoi(index));
    return gpus;
}

// The UUIDs of the GPUs the archive of problem `id` records having measured on.
std::set<std::string> archive_gpu_uuids(const fs::path& root, const std::string& id)
{
    CommandResult inspect = run_kforge({"inspect", (root / "runs" / (id + ".kforge")).string(), "--json"});
    INFO(id << ": " << inspect.err);
    REQUIRE(inspect.exit_code == 0);
    std::set<std::string> uuids;
    Json report = Json::parse(inspect.out);
    for (const auto& gpu : report.at("gpus").at("gpus"))
        uuids.insert(gpu.at("uuid").get<std::string>());
    return uuids;
}

} // namespace

TEST_CASE("suite-array.sbatch as a two-task job array runs each shard on the GPU SLURM gave it; tasks cancelled or "
          "killed mid-problem and submitted again resume their problems, keeping what was recorded, and one report "
          "covers the suite",
          "[slurm][suite][e2e]")
{
    SlurmClusterOptions options;
    options.gpus = 2;
    options.kill_wait_s = 30; // SLURM's default: time for kforge to record its in-flight work
    SlurmCluster cluster(options);
    std::vector<DeviceFacts> machine = simulated_devices("2");
    TempDir dir;
    fs::path root = dir / "suite";
    fs::path script = source_dir() / "scripts" / "slurm" / "suite-array.sbatch";
    auto archive = [&](const std::string& id) { return root / "runs" / (id + ".kforge"); };
    // One CPU and one GPU per task (the script's defaults ask for a whole GPU node), logs in `dir`.
    auto submit_array = [&](const std::vector<std::string>& script_args, int gpu_ms) {
        std::vector<std::string> args{"--array=0-1", "--gres=gpu:1", "--cpus-per-task=1", "--time=10",
                                      "--output=" + (dir / "array-%A_%a.out").string(), script.string(), root.string()};
        args.insert(args.end(), script_args.begin(), script_args.end());
        std::vector<std::string> env = simulated_env("2", gpu_ms);
        env.push_back("KFORGE=" + kforge_binary().string());
        return cluster.submit(args, env);
    };
    auto task_log = [&](long array, int task) { return dir / fmt::format("array-{}_{}.out", array, task); };

    std::vector<std::string> problems;
    for (const auto& name : k_problems)
        problems.push_back((source_dir() / "tasks" / (name + ".json")).string());
    // --per-gpu 1: one problem at a time on each task's GPU, so a task stopped in its first problem has
    // its second still waiting, as the checks below expect.
    problems.insert(problems.end(), {"--budget", std::to_string(k_budget), "--parallel", "1", "--optimize-args", "--window 2",
                                     "--per-gpu", "1", "--no-knowledge", "--progress", "lines"});
    long first = submit_array(problems, 150);

    // Task 0 is cancelled in its first problem; task 1 killed in its second (its first is done).
    bool cancelled = false, killed = false;
    for (auto until = Clock::now() + std::chrono::seconds(120); !(cancelled && killed) && Clock::now() < until;) {
        if (cluster.wait_until_ended(first, 0))
            break; // ended early: the checks below say how
        if (!cancelled && problem_midway(root, "axpy_f32", 1)) {
            CommandResult cancel = cluster.run("scancel", {fmt::format("{}_0", first)});
            REQUIRE(cancel.exit_code == 0);
            cancelled = true;
        }
        if (!killed && problem_midway(root, "transpose_f32", 2)) {
            int suite = cluster.task_process(array_task_job(cluster, first, 1), "SLURM_ARRAY_TASK_ID=1", "suite");
            REQUIRE(suite > 0);
            ::kill(suite, SIGKILL);
            killed = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    INFO(slurp_file(task_log(first, 0)) << slurp_file(task_log(first, 1)) << cluster.log_tails());
    REQUIRE(cancelled);
    REQUIRE(killed);
    REQUIRE(cluster.wait_until_ended(first, 120));
    for (const auto& job : cluster.jobs(first)) {
        INFO("array task " << job.array_task_id << ": " << job.state << " " << job.exit_code);
        CHECK(job.state == (job.array_task_id == 0 ? "CANCELLED" : "FAILED"));
    }
    CHECK_THAT(slurp_file(task_log(first, 0)), Catch::Contains("stopping: 1 run records what finishes"));

    SuiteManifest stopped = *suite_manifest_now(root);
    for (const auto& p : stopped.problems)
        UNSCOPED_INFO(p.id << ": " << problem_state_name(p.state) << " (" << p.reason << ")");
    // The cancelled task recorded how its problem ended (SIGTERM comes KillWait before SIGKILL) and
    // started nothing more.
    CHECK(stopped.find("axpy_f32")->state == ProblemState::waiting);
    CHECK(stopped.find("axpy_f32")->reason == "interrupted");
    CHECK(stopped.find("scan_u32")->state == ProblemState::waiting);
    CHECK(stopped.find("scan_u32")->sessions.empty());
    // The killed one could not: its problem is left "running", its run died with it.
    CHECK(stopped.find("reduce_sum_f32")->state == ProblemState::finished);
    CHECK(stopped.find("transpose_f32")->state == ProblemState::running);
    for (const auto& id : {"axpy_f32", "transpose_f32"}) {
        INFO(id);
        CHECK_FALSE(file_lock_is_held(root / "runs" / (std::string(id) + ".kforge.lock")));
        CHECK_FALSE(file_lock_is_held(root / "runs" / (std::string(id) + ".claim")));
    }
    std::vector<std::string> cancelled_before = recorded_candidates(archive("axpy_f32"));
    std::vector<std::string> killed_before = recorded_candidates(archive("transpose_f32"));
    REQUIRE(cancelled_before.size() >= 1);
    REQUIRE(killed_before.size() >= 2);

    // The same array submitted again (the problems implied by the suite folder) finishes the suite.
    long again = submit_array({}, 20);
    REQUIRE(cluster.wait_until_ended(again, 120));
    INFO(slurp_file(task_log(again, 0)) << slurp_file(task_log(again, 1)));
    for (const auto& job : cluster.jobs(again)) {
        INFO("array task " << job.array_task_id << ": " << job.state << " " << job.exit_code);
        CHECK(job.state == "COMPLETED");
    }
    SuiteManifest done = *suite_manifest_now(root);
    CHECK(suite_count(done, ProblemState::finished) == static_cast<int64_t>(k_problems.size()));
    CHECK(done.find("scan_u32")->sessions.size() == 1);
    CHECK(done.find("reduce_sum_f32")->sessions.size() == 1); // finished: skipped
    for (const auto& id : {"axpy_f32", "transpose_f32"}) {
        INFO(id);
        REQUIRE(done.find(id)->sessions.size() == 2);
        CHECK(done.find(id)->sessions[1].command == "resume");
    }
    // What each stopped task had recorded is kept, unchanged and first; the resumes used the budget.
    for (const auto& [id, before] : {std::pair{"axpy_f32", cancelled_before}, std::pair{"transpose_f32", killed_before}}) {
        INFO(id);
        std::vector<std::string> after = recorded_candidates(archive(id));
        REQUIRE(after.size() >= before.size());
        CHECK(std::vector<std::string>(after.begin(), after.begin() + static_cast<long>(before.size())) == before);
        CHECK(after.size() == static_cast<size_t>(k_budget));
    }

    // Each task used the GPU SLURM gave it and no other: the two tasks of an array different GPUs,
    // each suite run one GPU, each archive the UUIDs of its tasks' GPUs.
    auto uuid_given = [&](long array, int task) {
        std::vector<int> given = gpus_given(task_log(array, task));
        INFO(slurp_file(task_log(array, task)));
        REQUIRE(given.size() == 1);
        return machine.at(static_cast<size_t>(given[0])).uuid;
    };
    std::string gpu0 = uuid_given(first, 0), gpu1 = uuid_given(first, 1);
    std::string again0 = uuid_given(again, 0), again1 = uuid_given(again, 1);
    CHECK(gpu0 != gpu1);
    CHECK(again0 != again1);
    REQUIRE(done.runs.size() == 4);
    for (const auto& run : done.runs) {
        INFO(run.dump());
        CHECK(run.at("gpus").size() == 1);
    }
    CHECK(archive_gpu_uuids(root, "axpy_f32") == std::set<std::string>{gpu0, again0});
    CHECK(archive_gpu_uuids(root, "scan_u32") == std::set<std::string>{again0});
    CHECK(archive_gpu_uuids(root, "reduce_sum_f32") == std::set<std::string>{gpu1});
    CHECK(archive_gpu_uuids(root, "transpose_f32") == std::set<std::string>{gpu1, again1});

    check_report_matches_archives(root);
}
