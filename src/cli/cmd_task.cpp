// `kforge task check TASK [--arch sm_90a]` and `kforge task import PROBLEM.py ...`: the options and
// their checks; what the commands do is the task room's (src/task/check.hpp, src/task/import.hpp).
#include <memory>

#include "cli/app.hpp"
#include "cli/option_checks.hpp"
#include "task/check.hpp"
#include "task/import.hpp"
#include "util/limits.hpp"

namespace kforge {
namespace {

// `task import`, registered under `task` below.
void add_task_import_command(CLI::App& task, CommandSlot& slot)
{
    auto options = std::make_shared<TaskImportOptions>();
    auto* cmd = task.add_subcommand("import", "make a task of a PyTorch program (KernelBench form: Model, "
                                              "get_inputs, get_init_inputs)");
    cmd->add_option("PROBLEM", options->problem, "the program (.py)")->required();
    cmd->add_option("-o,--output", options->output, "the spec to write (default: PROBLEM with .json)");
    cmd->add_option("--name", options->name, "the task's name (default: from the file name)");
    cmd->add_option("--symbols", options->symbols,
                    "the module variables that are sizes, comma-separated (default: the ints that shape the inputs)");
    cmd->add_option("--time-limit", options->time_limit_s, "seconds the import may take")
        ->check(real_number(0, k_max_import_seconds, true))
        ->capture_default_str();
    cmd->add_option("--device", options->device, "where the import's checking forwards run")
        ->check(CLI::IsMember({"cpu", "cuda"}))
        ->capture_default_str();
    cmd->add_flag("--force", options->force, "replace an existing spec");
    cmd->callback([options, &slot] { slot = [options] { return run_task_import(*options); }; });
}

} // namespace

void add_task_command(CLI::App& app, CommandSlot& slot)
{
    auto* task = app.add_subcommand("task", "work with task specs");
    task->require_subcommand(1);
    auto options = std::make_shared<TaskCheckOptions>();
    auto* check = task->add_subcommand("check", "validate a task spec and compile the kernels it names");
    check->add_option("TASK", options->task_path, "task spec (JSON)")->required();
    check->add_option("--arch", options->arch, "GPU architecture to compile for")->check(gpu_arch())->capture_default_str();
    check->callback([options, &slot] { slot = [options] { return run_task_check(*options); }; });
    add_task_import_command(*task, slot);
}

} // namespace kforge
