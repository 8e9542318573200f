// `kforge suite run` and `kforge suite report`: many problems in one command. Here are their
// commands and help (the run's options and the checks of what a suite stores are in
// cli/suite_options.hpp, shared with `model optimize`), and the calls into the suite room (src/suite/suite.hpp), which runs the
// problems (runner.hpp), reads the results (results.hpp) and keeps the suite folder (manifest.hpp).
#include <memory>

#include <fmt/format.h>

#include "cli/app.hpp"
#include "cli/option_checks.hpp"
#include "cli/suite_options.hpp"
#include "suite/suite.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

void add_suite_run_command(CLI::App& suite, CommandSlot& slot)
{
    auto o = std::make_shared<SuiteRunOptions>();
    auto* cmd = suite.add_subcommand("run", "optimize many problems, one run archive each, every GPU on a problem of its "
                                            "own; resumable");
    cmd->footer(
        "PATH: PyTorch programs (.py, imported into SUITE_DIR/problems/), task specs (.json, used in place) or folders "
        "of them (their top level, sorted). SUITE_DIR gets suite.json (the manifest), runs/<id>.kforge, logs/<id>.log.\n"
        "Each problem runs as its own `kforge optimize` (or `kforge resume`) child on one GPU; with more problems than "
        "GPUs each GPU works on problems of its own, several at once (--per-gpu, auto by default: enough to keep it "
        "busy while their models think), all searching; no two ever measure at once (SUITE_DIR/gpus/ holds each GPU's "
        "measuring lock), and a run's --time leaves out its waits for that lock. Run it again on the same SUITE_DIR (PATHs optional) to resume: "
        "finished problems are skipped, interrupted ones resumed.\n"
        "--model replay:DIR/ gives each problem DIR/<stem>.jsonl (the builtin proposer where there is none and the task "
        "has seeds, else the problem is skipped).\n"
        "Clusters: --shard I/N runs the problems whose index in the sorted list is I modulo N; several shards may share "
        "one SUITE_DIR (under mpirun or srun each rank is a shard: one rank per host).\n"
        "Exit codes: 0 every problem finished or skipped, 1 some failed, 2 usage, 3 bad input, 4 runtime failure (no "
        "GPU), 130 interrupted (run it again to resume).");
    cmd->add_option("PATH", o->paths, "problem files or folders (optional when SUITE_DIR holds a suite)");
    cmd->add_option("-o,--output", o->output, "the suite folder (created, or resumed when it holds a suite)")->required();
    add_suite_run_options(cmd, *o);
    cmd->callback([o, &slot] { slot = [o] { return run_suite(suite_run_request(*o)); }; });
}

void add_suite_report_command(CLI::App& suite, CommandSlot& slot)
{
    auto o = std::make_shared<SuiteReportOptions>();
    auto* cmd = suite.add_subcommand("report", "one row per problem and the suite's correctness rate, fast_p against "
                                               "torch eager and torch.compile, geometric-mean speedup, dollars, GPU "
                                               "hours (read-only, also while it runs)");
    cmd->footer("Without -o, a table on stdout. fast_p: problems correct and more than p times faster than the "
                "baseline, over the problems that have it; problems without a correct kernel count as not correct.");
    cmd->add_option("SUITE_DIR", o->folder, "the suite folder (what `suite run -o` made)")->required();
    cmd->add_flag("--json", o->json, "the rows and the summary as one JSON document");
    cmd->add_option("-o,--output", o->output, "write a self-contained HTML page, and each problem's report page beside "
                                              "its archive");
    cmd->add_option("--title", o->title, "the page's title (default: \"kforge suite: FOLDER\")");
    cmd->callback([o, &slot] { slot = [o] { return run_suite_report(*o); }; });
}

} // namespace

void add_suite_command(CLI::App& app, CommandSlot& slot)
{
    auto* suite = app.add_subcommand("suite", "many problems in one command: run them over every GPU, resumable, and "
                                              "report the field's metrics (correctness, fast_p)");
    suite->require_subcommand(1);
    add_suite_run_command(*suite, slot);
    add_suite_report_command(*suite, slot);
}

} // namespace kforge
