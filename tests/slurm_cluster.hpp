// A one-node SLURM cluster for the tests tagged [slurm]: Debian's munged, slurmctld and slurmd,
// started by the test with a configuration of their own in a temporary folder and stopped by it.
//
// The folder holds everything the daemons use — slurm.conf and gres.conf, a munge key and socket
// (`AuthInfo=socket=...`, so the machine's own munge, if any, is never involved), state, spool,
// logs — and the controller and node ports are free ports of 127.0.0.1, so several clusters (and
// a real one) can live on one machine. This host is controller and node; `proctrack/linuxproc`,
// `task/none` and `select/cons_tres` need no cgroups; the node offers simulated GPUs as gres
// (`GresTypes=gpu`), backed by device files the fixture creates, so `--gres=gpu:N` sets
// CUDA_VISIBLE_DEVICES as on a real GPU node. Clients (srun, sbatch, squeue, ...) find the cluster
// through SLURM_CONF, which env() provides.
//
// Ending: the destructor cancels the cluster's jobs, waits for them to leave, stops the three
// daemons it started (SIGTERM, then SIGKILL), and kills whatever still carries the cluster's mark
// in its environment (a job step's slurmstepd and tasks outlive slurmd by design). It runs also
// when a test fails, since Catch2 unwinds; should the test process itself die, the daemons get
// SIGTERM from the kernel (PR_SET_PDEATHSIG).
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace kforge::test {

// "" when the [slurm] tests can run here; otherwise why not: the SLURM and munge programs
// (Debian: slurmctld slurmd slurm-client munge; ./kf installs them), root (slurmd starts job steps
// as their user), and a kforge built with MPI (srun --mpi=pmix starts MPI ranks).
std::string slurm_unavailable_reason();

struct SlurmClusterOptions {
    int gpus = 3;        // gres gpu:N on the node
    int cpus = 16;       // CPUs the node offers (more than the machine has: tasks here mostly wait)
    int kill_wait_s = 5;  // KillWait: SIGTERM to SIGKILL when a job ends early (time limit, scancel)
};

// One job as `scontrol show job` describes it (array tasks are jobs of their own).
struct SlurmJob {
    long id = 0;
    long array_job_id = 0;   // 0 for a job outside an array
    int array_task_id = -1;
    std::string state;       // PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, CANCELLED, ...
    std::string reason;      // why it waits or ended
    std::string exit_code;   // "0:0": status:signal
};

class SlurmCluster
{
public:
    // Starts munged, slurmctld and slurmd and waits (up to 60 s) until sinfo shows the node idle.
    // Throws std::runtime_error with the daemons' log tails when they do not come up.
    explicit SlurmCluster(SlurmClusterOptions options = {});
    ~SlurmCluster();
    SlurmCluster(const SlurmCluster&) = delete;
    SlurmCluster& operator=(const SlurmCluster&) = delete;

    const std::filesystem::path& folder() const;
    std::filesystem::path conf() const;
    // "NAME=value" entries that point clients (and the jobs they start) at this cluster; add them
    // to the environment of srun, sbatch and the rest.
    std::vector<std::string> env() const;
    // A SLURM client program (srun, sbatch, squeue, scontrol, scancel, sinfo) by absolute path.
    static std::filesystem::path client(const std::string& name);

    // Runs a client with the cluster's environment plus `extra_env`.
    CommandResult run(const std::string& client_name, const std::vector<std::string>& args,
                      const std::vector<std::string>& extra_env = {}) const;
    // Starts a client in the background (srun of a job step the test acts on while it runs).
    std::unique_ptr<RunningProgram> start(const std::string& client_name, const std::vector<std::string>& args,
                                          const std::vector<std::string>& extra_env = {}) const;

    // `sbatch --parsable ARGS...`; the job id. Fails the test when sbatch refuses.
    long submit(const std::vector<std::string>& args, const std::vector<std::string>& extra_env = {}) const;
    // The jobs `scontrol show job` knows under `id` (an array job lists each of its tasks).
    std::vector<SlurmJob> jobs(long id) const;
    // Waits (up to `seconds`; 0: only looks) until none of the jobs under `id` is pending, running
    // or completing; false on timeout.
    bool wait_until_ended(long id, int seconds) const;

    // The pid of a kforge process of job `job_id` whose environment holds `entry` (e.g.
    // "SLURM_PROCID=2": task 2 of an srun step; "OMPI_COMM_WORLD_RANK=2": rank 2 under mpirun) and
    // whose command line holds `word` (e.g. "optimize": the rank itself, not its workers); -1 when
    // there is none.
    int task_process(long job_id, const std::string& entry, const std::string& word) const;

    // The tails of the daemons' logs, for a failed test's message.
    std::string log_tails() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace kforge::test
