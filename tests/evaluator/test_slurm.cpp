// Many hosts through SLURM, tried on one: each test starts a one-node cluster (slurm_cluster.hpp)
// and runs kforge as users of a GPU cluster do — `srun --mpi=pmix -n 3 kforge optimize ...` for one
// search across the step's tasks (rank 0 the controller, ranks 1 and 2 evaluation services, each
// driving a simulated GPU), scripts/slurm/search.sbatch stopped as a time limit stops it and
// submitted again, and `mpirun --enable-recovery` inside an allocation. Every archive is checked
// against the one-GPU replay run: whole where the run was not stopped, up to the stop where it was
// (then `resume` must keep that and finish the budget). The [slurm] tag skips, with the reason, where
// SLURM, munge, root or a kforge built with MPI is missing.
#include "kf_catch.hpp"

#include <chrono>
#include <csignal>
#include <thread>

#include "archive/archive.hpp"
#include "evaluator/simulated_runs.hpp"
#include "slurm_cluster.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

using Clock = std::chrono::steady_clock;

// srun's arguments for one job step of `tasks` tasks running kforge with `kforge_args`, as
// docs/cluster.md gives them.
std::vector<std::string> under_srun(int tasks, const std::vector<std::string>& kforge_args)
{
    std::vector<std::string> args{"--mpi=pmix", "--kill-on-bad-exit=0", "-n", std::to_string(tasks),
                                  kforge_binary().string()};
    args.insert(args.end(), kforge_args.begin(), kforge_args.end());
    return args;
}

// The environment of kforge's ranks: simulated GPUs, and a lost peer noticed within seconds.
std::vector<std::string> rank_env(int gpu_ms)
{
    std::vector<std::string> env = simulated_env("3", gpu_ms);
    env.push_back("KFORGE_MPI_PEER_TIMEOUT_S=4");
    return env;
}

// sbatch's options for a one-node job of three tasks on the cluster's three GPUs, overriding the
// multi-node defaults of scripts/slurm/search.sbatch.
std::vector<std::string> three_task_job(const std::filesystem::path& output)
{
    return {"--nodes=1", "--ntasks=3", "--ntasks-per-node=3", "--cpus-per-task=1", "--gres=gpu:3", "--time=10",
            "--output=" + output.string()};
}

// The id of the cluster's only job (the allocation srun made), waiting up to 30 s for it.
long only_job(const SlurmCluster& cluster)
{
    for (auto until = Clock::now() + std::chrono::seconds(30); Clock::now() < until;) {
        CommandResult queue = cluster.run("squeue", {"-h", "-o", "%A"});
        std::string id = trim(queue.out);
        if (queue.exit_code == 0 && !id.empty() && id.find('\n') == std::string::npos)
            return std::stol(id);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return 0;
}

bool wait_for_file_text(const std::filesystem::path& file, const std::string& text, int seconds)
{
    for (auto until = Clock::now() + std::chrono::seconds(seconds); Clock::now() < until;) {
        if (slurp_file(file).find(text) != std::string::npos)
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
}

std::string run_state(const std::filesystem::path& archive)
{
    return Archive::open(archive, OpenMode::read_only).run_info().state;
}

// A stopped run that `resume` finished: everything recorded before the stop is still there,
// unchanged and first, and the resume recorded more. (Neither the one-GPU run's list whole nor its
// budget: after a resume the replay proposer serves the recorded replies in order from the start
// again, so what the "model" says after the stop differs, and the replies may run out first.)
void check_finished_from(const std::vector<std::string>& before, const std::filesystem::path& archive)
{
    std::vector<std::string> after = recorded_candidates(archive);
    CHECK(run_state(archive) == "finished");
    REQUIRE(after.size() > before.size());
    CHECK(std::vector<std::string>(after.begin(), after.begin() + static_cast<long>(before.size())) == before);
}

} // namespace

TEST_CASE("under srun --mpi=pmix the run uses every task's GPU and records what a one-GPU run records; a killed "
          "task ends the step, and resume under srun finishes the run, keeping what was recorded",
          "[slurm][e2e]")
{
    std::vector<std::string> expected = recorded_candidates(one_gpu_reference_archive());
    SlurmCluster cluster;
    TempDir dir;

    auto whole = dir / "whole.kforge";
    CommandResult result = cluster.run("srun", under_srun(3, with_debug_log(replayed_softmax_args(whole))), rank_env(100));
    INFO(result.err << cluster.log_tails());
    REQUIRE(result.exit_code == 0);
    CHECK_THAT(result.err, Catch::Contains("MPI: 3 ranks") && Catch::Contains("SLURM ends the whole job step"));
    INFO("the one-GPU run's choices (this run's are in its log):\n" << one_gpu_reference_choices());
    CHECK(recorded_candidates(whole) == expected);
    {
        Archive archive = Archive::open(whole, OpenMode::read_only);
        CHECK(archive.run_info().state == "finished");
        std::vector<GpuTotals> gpus = archive.gpu_totals();
        REQUIRE(gpus.size() == 3);
        for (const auto& gpu : gpus) {
            INFO(gpu.usage.gpu.label());
            CHECK(gpu.candidates > 0);
        }
    }

    // SLURM's PMIx plugin kills the whole step when one task dies (--kill-on-bad-exit=0 or not):
    // what was recorded stays, and resume under srun finishes the run as if nothing happened.
    auto killed = dir / "killed.kforge";
    auto run = cluster.start("srun", under_srun(3, replayed_softmax_args(killed)), rank_env(150));
    REQUIRE(wait_for_stderr(*run, "[2/12]", 300));
    long job = only_job(cluster);
    REQUIRE(job > 0);
    int task2 = cluster.task_process(job, "SLURM_PROCID=2", "optimize");
    REQUIRE(task2 > 0);
    ::kill(task2, SIGKILL);
    CommandResult ended = run->wait();
    INFO(ended.err);
    CHECK(run_state(killed) == "running");
    std::vector<std::string> before = recorded_candidates(killed);
    CHECK(before.size() < expected.size());
    CHECK(std::vector<std::string>(expected.begin(), expected.begin() + static_cast<long>(before.size())) == before);

    auto resumed = cluster.run("srun", under_srun(3, {"resume", killed.string(), "--progress", "lines"}), rank_env(20));
    INFO(resumed.err);
    CHECK(resumed.exit_code == 0);
    check_finished_from(before, killed);
}

TEST_CASE("scripts/slurm/search.sbatch stopped as a time limit stops a job (SIGTERM, SIGKILL after KillWait) and "
          "submitted again finishes the run, keeping what was recorded",
          "[slurm][e2e]")
{
    std::vector<std::string> expected = recorded_candidates(one_gpu_reference_archive());
    SlurmClusterOptions options;
    options.kill_wait_s = 2;
    SlurmCluster cluster(options);
    TempDir dir;
    auto archive = dir / "search.kforge";
    std::vector<std::string> optimize = replayed_softmax_args(archive);
    std::vector<std::string> script_args{(source_dir() / "scripts" / "slurm" / "search.sbatch").string(), optimize[1],
                                         archive.string()};
    script_args.insert(script_args.end(), optimize.begin() + 4, optimize.end());
    auto script_env = [](int gpu_ms) {
        std::vector<std::string> env = rank_env(gpu_ms);
        env.push_back("KFORGE=" + kforge_binary().string());
        env.push_back("KFORGE_RESUME_ARGS=--progress lines");
        return env;
    };

    // scancel sends what a time limit sends: SIGTERM to every process of the job, SIGKILL KillWait
    // later to what is left. kforge's workers leave the stopping to the controller, which stops at
    // a safe point; with GPUs this slow the SIGKILL may come before it is done.
    auto first_out = dir / "first.out";
    std::vector<std::string> first_args = three_task_job(first_out);
    first_args.insert(first_args.end(), script_args.begin(), script_args.end());
    long first = cluster.submit(first_args, script_env(600));
    REQUIRE(wait_for_file_text(first_out, "[3/12]", 300));
    cluster.run("scancel", {std::to_string(first)});
    REQUIRE(cluster.wait_until_ended(first, 60));
    std::string log = slurp_file(first_out);
    INFO(log << cluster.log_tails());
    CHECK_THAT(log, Catch::Contains("stopping: recording work that finishes"));
    CHECK(log.find("interrupted twice") == std::string::npos);
    CHECK(run_state(archive) != "finished");
    std::vector<std::string> before = recorded_candidates(archive);
    CHECK(std::vector<std::string>(expected.begin(), expected.begin() + static_cast<long>(before.size())) == before);

    auto second_out = dir / "second.out";
    std::vector<std::string> second_args = three_task_job(second_out);
    second_args.insert(second_args.end(), script_args.begin(), script_args.end());
    long second = cluster.submit(second_args, script_env(20));
    REQUIRE(cluster.wait_until_ended(second, 300));
    INFO(slurp_file(second_out));
    std::vector<SlurmJob> jobs = cluster.jobs(second);
    REQUIRE(jobs.size() == 1);
    CHECK(jobs[0].state == "COMPLETED");
    CHECK_THAT(slurp_file(second_out), Catch::Contains("kforge resume"));
    check_finished_from(before, archive);
}

TEST_CASE("mpirun --enable-recovery inside an sbatch allocation outlives a killed rank and records what a one-GPU "
          "run records",
          "[slurm][e2e]")
{
    std::vector<std::string> expected = recorded_candidates(one_gpu_reference_archive());
    SlurmCluster cluster;
    TempDir dir;
    auto archive = dir / "mpirun.kforge";
    auto script = dir / "mpirun.sbatch";
    std::string command = "exec mpirun --enable-recovery --bind-to none " + kforge_binary().string();
    for (const auto& arg : with_debug_log(replayed_softmax_args(archive)))
        command += " '" + arg + "'";
    write_text(script, "#!/bin/sh\n" + command + "\n");
    std::vector<std::string> env = rank_env(150);
    for (const auto& entry : mpirun_env())
        env.push_back(entry);

    auto out = dir / "mpirun.out";
    std::vector<std::string> args = three_task_job(out);
    args.push_back(script.string());
    long job = cluster.submit(args, env);
    REQUIRE(wait_for_file_text(out, "[2/12]", 300));
    int rank2 = cluster.task_process(job, "OMPI_COMM_WORLD_RANK=2", "optimize");
    REQUIRE(rank2 > 0);
    ::kill(rank2, SIGKILL);
    REQUIRE(cluster.wait_until_ended(job, 300));
    INFO(slurp_file(out) << cluster.log_tails());
    std::vector<SlurmJob> jobs = cluster.jobs(job);
    REQUIRE(jobs.size() == 1);
    CHECK(jobs[0].state == "COMPLETED");
    CHECK_THAT(slurp_file(out), Catch::Contains("MPI rank 2 is lost"));
    INFO("the one-GPU run's choices (this run's are in its log):\n" << one_gpu_reference_choices());
    CHECK(recorded_candidates(archive) == expected);
    Archive done = Archive::open(archive, OpenMode::read_only);
    CHECK(done.run_info().state == "finished");
    for (const auto& gpu : done.gpu_totals()) {
        INFO(gpu.usage.gpu.label());
        CHECK(gpu.usage.lost == (gpu.usage.gpu.rank == 2));
    }
}
