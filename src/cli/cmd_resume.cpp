// `kforge resume ARCHIVE`: continue a run where it stopped (interrupted, killed, or finished with
// budget to spare or given more).
//
// The archive's writer lock is taken first, so a run that another process is still writing is
// refused with that process named. The run continues with the configuration, task snapshot, RNG
// state, islands, strategy texts and run secret stored in the archive; only budgets, parallelism,
// progress, the knowledge base and the models may change. A resume that would stop at once (its
// budget used up) is refused with the flag that extends it. As for optimize, the GPU evaluator
// starts before anything in the archive changes (Archive::open_for_resume reads it through a
// read-only connection; begin_writing() upgrades its schema only then), so a resume on a machine
// without a GPU leaves the archive as it was, byte for byte.
#include <fmt/format.h>

#include "archive/run_task.hpp"
#include "cli/app.hpp"
#include "cli/cmd_optimize_common.hpp"
#include "evaluator/gpu/remote.hpp"
#include "search/loop_state.hpp"
#include "search/run_record.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace kforge {
namespace {

struct ResumeOptions {
    std::string archive_path;
    SessionOptions session;
};

// Refuses a resume whose budgets are already spent, naming the flag that extends them.
void check_budget_left(const RunConfig& config, const LoopState& state, const BudgetBase& used, const std::string& path)
{
    const Budgets& b = config.search.budgets;
    if (used.candidates >= b.candidates && state.pending.empty())
        fail(ErrorKind::usage, "{}: the run has used its budget of {} candidates; continue with --budget +N", path,
             b.candidates);
    if (b.max_calls && used.calls >= *b.max_calls)
        fail(ErrorKind::usage, "{}: the run has made its {} model calls (--max-calls); continue with --max-calls +N",
             path, *b.max_calls);
    if (b.max_cost_usd && used.cost_usd >= *b.max_cost_usd)
        fail(ErrorKind::usage, "{}: the run has spent ${:.2f} of its ${:.2f} (--max-cost); continue with --max-cost +X",
             path, used.cost_usd, *b.max_cost_usd);
}

int run_resume(const ResumeOptions& options)
{
    std::unique_ptr<MpiWorld> mpi = join_mpi_launch(); // null on a plain run
    if (mpi && mpi->rank() != 0)
        return serve_gpus(*mpi, ""); // the services need neither the archive nor the task
    MpiController controller(std::move(mpi));
    std::string label = options.archive_path;
    // Locked, read, and left as it is until the session has started (the GPU evaluator is up):
    // a resume that cannot start must not upgrade or otherwise change the user's archive.
    Archive archive = Archive::open_for_resume(options.archive_path);
    RunInfo run = archive.run_info();
    RunConfig config = RunConfig::from_json(run.config, label + ": run config");
    auto saved = archive.search_state(k_loop_state_key);
    if (!saved)
        fail_input("{}: the run has no saved search state (it did not get past its start); start a new run", label);
    LoopState state = LoopState::from_json(*saved, config.search.islands, label + ": search state");

    BudgetBase used;
    used.candidates = state.recorded_candidates;
    LlmUsage spent = archive.llm_usage_total(); // model calls only, not the builtin proposer's
    used.calls = spent.calls;
    used.cost_usd = spent.cost_usd;
    apply_session_options(options.session, used, config);
    check_budget_left(config, state, used, label);

    ScratchFolder folder; // the GPU worker reads the task's files from here
    Task task = materialize_run_task(run, label, folder.path());
    Session session(task, config);
    log_info("kforge resume {}: task {}, {} candidates recorded, budget {}, proposer: {}", label, run.task_name,
             state.recorded_candidates, config.search.budgets.candidates, session.proposer_label());
    session.start_evaluator(config, stored_run_secret(archive), controller.world(), options.session.gpu_share,
                            options.session.gpu_searches);
    archive.begin_writing();
    run.config = config.to_json();
    record_environment(run, session.evaluator().environment());
    archive.update_run(run);
    return run_and_report(archive, task, config, session, options.session.json);
}

} // namespace

void add_resume_command(CLI::App& app, CommandSlot& slot)
{
    auto o = std::make_shared<ResumeOptions>();
    auto* cmd = app.add_subcommand("resume", "continue a run from its archive: same settings, same random sequence, "
                                             "budgets extendable (--budget +N)");
    cmd->footer("The run keeps its task snapshot, search settings, seed, islands and strategy texts; budgets, "
                "--parallel, --progress, the knowledge base, the models and the strategy (--strategy, --planner-model) "
                "may change. Budgets count the whole run: "
                "--budget +50 allows 50 more candidates than recorded so far.\nRefused while another process writes "
                "the archive, and when the run's budget is used up (the message names the flag to extend it).\nExit "
                "codes: 0 finished, 2 usage (budget used up), 3 bad input (not a kforge optimize archive, or a "
                "damaged one: a missing table, a malformed JSON value, named by row and column; the file is left as "
                "it was), 4 runtime failure (no GPU, archive locked, the model unreachable), 130 interrupted.");
    cmd->add_option("ARCHIVE", o->archive_path, "run archive (.kforge)")->required();
    add_session_options(cmd, o->session, true);
    cmd->callback([o, &slot] { slot = [o] { return run_resume(*o); }; });
}

} // namespace kforge
