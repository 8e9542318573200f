// The command line: one CLI11 app, one file per subcommand (or per group: `task`, `suite`).
//
// Each subcommand file exposes add_<name>_command(app, slot). Registering parses nothing; when
// CLI11 selects a subcommand, its callback stores the function to run in `slot`, and run_cli()
// calls it after parsing, inside the single place where errors become messages and exit codes.
// The files of `suite`, `export`, `inspect`, `report` and `task` hold only options, their checks
// and help, and a call into the room that does the work (src/suite, src/export, src/report,
// src/task), so another front end calls the same functions.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace kforge {

using CommandSlot = std::function<int()>;

int run_cli(int argc, char** argv);

void add_dataset_command(CLI::App& app, CommandSlot& slot);
void add_doctor_command(CLI::App& app, CommandSlot& slot);
void add_eval_command(CLI::App& app, CommandSlot& slot);
void add_export_command(CLI::App& app, CommandSlot& slot);
void add_inspect_command(CLI::App& app, CommandSlot& slot);
void add_lessons_command(CLI::App& app, CommandSlot& slot);
void add_optimize_command(CLI::App& app, CommandSlot& slot);
void add_resume_command(CLI::App& app, CommandSlot& slot);
void add_task_command(CLI::App& app, CommandSlot& slot);
void add_propose_command(CLI::App& app, CommandSlot& slot);
void add_report_command(CLI::App& app, CommandSlot& slot);
void add_suite_command(CLI::App& app, CommandSlot& slot);
void add_model_command(CLI::App& app, CommandSlot& slot);
void add_worker_command(CLI::App& app, CommandSlot& slot);

} // namespace kforge
