// `kforge suite`: many problems in one command. `suite run` works through them (cmd_suite_run.cpp,
// suite_runner.hpp) and `suite report` reads the results (cmd_suite_report.cpp); the suite folder
// and its manifest are described in suite_manifest.hpp.
#include "cli/app.hpp"

namespace kforge {

void add_suite_command(CLI::App& app, CommandSlot& slot)
{
    auto* suite = app.add_subcommand("suite", "many problems in one command: run them over every GPU, resumable, and "
                                              "report the field's metrics (correctness, fast_p)");
    suite->require_subcommand(1);
    add_suite_run_command(*suite, slot);
    add_suite_report_command(*suite, slot);
}

} // namespace kforge
