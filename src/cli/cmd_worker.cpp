// `kforge __worker KIND`: the entry point of kforge's own worker processes (DESIGN.md §3).
//
// Workers are this same binary, started by the controller with two pipes on fds 3 and 4
// (util/subprocess.hpp). The subcommand is hidden from --help: people never run it. Each kind
// maps to the function that serves its requests until the controller closes the pipe.
#include <map>
#include <memory>
#include <string>

#include "cli/app.hpp"
#include "evaluator/compile/compile.hpp"
#include "evaluator/worker/worker_protocol.hpp"
#include "util/error.hpp"

namespace kforge {
namespace {

using WorkerMain = int (*)();

const std::map<std::string, WorkerMain>& worker_kinds()
{
    static const std::map<std::string, WorkerMain> kinds = {
        {"compile", run_compile_worker},
        {"gpu", run_gpu_worker},
    };
    return kinds;
}

int run_worker(const std::string& kind)
{
    auto it = worker_kinds().find(kind);
    if (it == worker_kinds().end())
        fail(ErrorKind::usage, "unknown worker kind '{}'", kind);
    return it->second();
}

} // namespace

void add_worker_command(CLI::App& app, CommandSlot& slot)
{
    auto* worker = app.add_subcommand("__worker", "");
    worker->group(""); // hidden from --help
    auto kind = std::make_shared<std::string>();
    worker->add_option("KIND", *kind)->required();
    worker->callback([kind, &slot] { slot = [kind] { return run_worker(*kind); }; });
}

} // namespace kforge
