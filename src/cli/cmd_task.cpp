// `kforge task check TASK`: validates a task spec and the kernels it names.
#include <memory>

#include <fmt/format.h>

#include "cli/app.hpp"
#include "core/task.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace kforge {
namespace {

struct TaskCheckOptions {
    std::string task_path;
};

int run_task_check(const TaskCheckOptions& options)
{
    Task task = load_task(options.task_path);
    fmt::print("{}: valid kforge.task/1 spec '{}' ({})\n", options.task_path, task.name, task.category);
    fmt::print("  args: {}, shapes: {} tests, {} bench, {} held out; reference {}; {} seed kernel(s)\n",
               task.args.size(), task.tests.size(), task.bench.size(), task.held_out.size(),
               task.reference.path.filename().string(), task.seeds.size());
    return k_exit_ok;
}

} // namespace

void add_task_command(CLI::App& app, CommandSlot& slot)
{
    auto* task = app.add_subcommand("task", "work with task specs");
    task->require_subcommand(1);
    auto options = std::make_shared<TaskCheckOptions>();
    auto* check = task->add_subcommand("check", "validate a task spec and the kernels it names");
    check->add_option("TASK", options->task_path, "task spec (JSON)")->required();
    check->callback([options, &slot] { slot = [options] { return run_task_check(*options); }; });
}

} // namespace kforge
