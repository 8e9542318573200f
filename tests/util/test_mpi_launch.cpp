// detect_mpi_launch() reads only the environment: which launcher started kforge, how many ranks it
// announced, and whether one dead rank ends the whole job.
#include "kf_catch.hpp"

#include "agents/net_support.hpp"
#include "util/mpi_world.hpp"

using namespace kforge;
using kforge::test::ScopedEnv;

namespace {

// Every variable detect_mpi_launch() looks at, unset for the scope; tests then set their own.
struct CleanLaunchEnv {
    ScopedEnv off{"KFORGE_MPI", std::nullopt}, ompi_size{"OMPI_COMM_WORLD_SIZE", std::nullopt},
        ompi_rank{"OMPI_COMM_WORLD_RANK", std::nullopt}, recovery{"OMPI_MCA_orte_enable_recovery", std::nullopt},
        pmix_rank{"PMIX_RANK", std::nullopt}, pmi_size{"PMI_SIZE", std::nullopt}, pmi_rank{"PMI_RANK", std::nullopt},
        procid{"SLURM_PROCID", std::nullopt}, step_tasks{"SLURM_STEP_NUM_TASKS", std::nullopt},
        step_id{"SLURM_STEP_ID", std::nullopt};
};

} // namespace

TEST_CASE("srun --mpi=pmix is detected as a launcher whose dead task ends the job step", "[util][mpi-launch]")
{
    CleanLaunchEnv clean;
    ScopedEnv rank("PMIX_RANK", "2"), tasks("SLURM_STEP_NUM_TASKS", "3"), step("SLURM_STEP_ID", "0"),
        procid("SLURM_PROCID", "2");
    MpiLaunch launch = detect_mpi_launch();
    CHECK(launch.detected);
    CHECK(launch.launcher == "SLURM's srun --mpi=pmix");
    CHECK(launch.expected_size == 3);
    CHECK(launch.expected_rank == 2);
    CHECK_FALSE(launch.survives_rank_loss);
    CHECK_THAT(launch.rank_loss_warning, Catch::Contains("resume") && Catch::Contains("mpirun --enable-recovery"));
}

TEST_CASE("mpirun survives a dead rank only with --enable-recovery, and says how otherwise", "[util][mpi-launch]")
{
    CleanLaunchEnv clean;
    ScopedEnv size("OMPI_COMM_WORLD_SIZE", "4"), rank("OMPI_COMM_WORLD_RANK", "0");
    MpiLaunch plain = detect_mpi_launch();
    CHECK(plain.detected);
    CHECK_FALSE(plain.survives_rank_loss);
    CHECK_THAT(plain.rank_loss_warning, Catch::Contains("mpirun --enable-recovery -n 4"));

    ScopedEnv recovery("OMPI_MCA_orte_enable_recovery", "1");
    MpiLaunch recovering = detect_mpi_launch();
    CHECK(recovering.survives_rank_loss);
    CHECK(recovering.rank_loss_warning.empty());
}

TEST_CASE("a batch script's single srun task, or KFORGE_MPI=off, is a plain run", "[util][mpi-launch]")
{
    CleanLaunchEnv clean;
    ScopedEnv procid("SLURM_PROCID", "0"), tasks("SLURM_STEP_NUM_TASKS", "1");
    CHECK_FALSE(detect_mpi_launch().detected);

    ScopedEnv more("SLURM_STEP_NUM_TASKS", "2");
    CHECK(detect_mpi_launch().detected);
    ScopedEnv off("KFORGE_MPI", "off");
    CHECK_FALSE(detect_mpi_launch().detected);
}
