// MPI for kforge: knowing whether an MPI launcher started this process, and then talking to the
// other ranks (evaluator/gpu_service.hpp says what kforge says over it).
//
// A plain `kforge optimize` must not touch MPI. detect_mpi_launch() reads only the environment
// (Open MPI's mpirun: OMPI_COMM_WORLD_SIZE; PMIx: PMIX_RANK; PMI: PMI_SIZE; SLURM's srun:
// SLURM_PROCID with SLURM_STEP_NUM_TASKS > 1 — the step's task count, because SLURM_NTASKS is also
// set in a batch script that runs kforge once). Only then does MpiWorld::join load
// libkforge_mpi.so (mpi/kforge_mpi.h; beside the binary, or $KFORGE_MPI_LIB) and initialise MPI.
//
// Threads. MPI is initialised with MPI_THREAD_FUNNELED on a thread of MpiWorld's own, which makes
// every MPI call from then on, so kforge's many threads never call MPI and no MPI library needs
// MPI_THREAD_MULTIPLE. Other threads hand it messages (send) and take what arrived from per-(rank,
// tag) mailboxes (receive).
//
// Failures. Nothing ever waits on a peer: sends and receives are nonblocking, and a peer that says
// nothing — no message and no heartbeat, which the MPI thread sends every second — for the silence
// limit (10 s; KFORGE_MPI_PEER_TIMEOUT_S) is declared lost for good: its messages are dropped and
// whoever waits for it hears so at once. Heartbeats run in a star: rank 0 and each other rank.
// That a lost rank does not take the job down with it is the launcher's part: Open MPI's mpirun
// needs --enable-recovery (else it kills every rank when one dies), which MpiLaunch reports; that
// the survivors are not held at the end by the dead one is MPI_Finalize's (see finalize()). SLURM's
// srun --mpi=pmix cannot: its PMIx plugin kills the whole job step (SIGKILL) when a task's
// connection to slurmstepd drops without PMIx_Finalize, whatever --kill-on-bad-exit says, so
// there a dead task ends the step and the run continues with `resume` (docs/cluster.md).
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace kforge {

struct MpiLaunch {
    bool detected = false;
    std::string launcher;        // "Open MPI's mpirun", "SLURM's srun --mpi=pmix", "a PMIx launcher", "a PMI
                                 // launcher", "SLURM's srun"
    int expected_size = 0;       // ranks the environment announces
    int expected_rank = -1;      // this process's rank, when the environment says
    // false when one dead rank ends the whole job: Open MPI's mpirun without --enable-recovery,
    // SLURM's srun --mpi=pmix; `rank_loss_warning` then says so and what to do instead
    bool survives_rank_loss = true;
    std::string rank_loss_warning;
};

// Reads the environment only. KFORGE_MPI=off turns detection off (a job step that runs independent
// kforge processes on purpose).
MpiLaunch detect_mpi_launch();

enum class MpiReceive { ok, timeout, lost };

class MpiWorld
{
public:
    // Loads libkforge_mpi.so and initialises MPI on the MPI thread. Throws Error(runtime) saying
    // why not: a kforge built without MPI, the library missing or of another ABI, MPI_Init failing.
    static std::unique_ptr<MpiWorld> join(const MpiLaunch& launch);
    // Finalizes MPI (see finalize()).
    ~MpiWorld();
    MpiWorld(const MpiWorld&) = delete;
    MpiWorld& operator=(const MpiWorld&) = delete;

    int rank() const;
    int size() const;
    int local_rank() const;   // among the ranks of this host
    int local_size() const;
    const std::string& host() const;
    const std::string& library() const; // "Open MPI v4.1.4, ..."

    // Queues `bytes` for rank `dest` and returns at once; false (and nothing sent) when `dest` is
    // lost. Messages to one rank with one tag arrive in the order sent. Tags from 0 to 15 are
    // reserved. Any thread.
    bool send(int dest, int tag, std::string bytes);
    // Takes the oldest message from `source` with `tag`, waiting up to `wait` for one. `lost` when
    // none is queued and `source` is lost. Any thread.
    MpiReceive receive(int source, int tag, std::string& bytes, std::chrono::milliseconds wait);
    bool alive(int peer) const;

    // Sends what is queued (waiting at most `grace` for slow peers), stops the MPI thread and calls
    // MPI_Finalize. It does not wait for the other ranks: Open MPI's end-of-job fence, which a dead
    // rank never reaches, is switched off (mpi/kforge_mpi.cpp), so a run that lost a rank ends.
    // Idempotent; send() and receive() still work afterwards, as calls that deliver nothing.
    void finalize(std::chrono::milliseconds grace = std::chrono::seconds(2));

private:
    struct Impl;
    explicit MpiWorld(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

} // namespace kforge
