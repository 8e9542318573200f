// `kforge task import PROBLEM.py [-o SPEC.json] [--name N] [--symbols a,b] [--time-limit S] [--device cpu|cuda]
// [--force]` (the command is src/cli/cmd_task.cpp):
// a PyTorch program in KernelBench form becomes a task (docs/torch-tasks.md).
//
// The program runs only in a child process (python/kforge_torch/importer.py under the python3 that
// has torch), in a process group of its own, killed at the time limit or at Ctrl-C: a problem file
// is code someone handed us. What the child found comes back as JSON; the spec is assembled here
// (import_spec.cpp), written next to the program (the program is copied beside the spec when -o
// names another folder, so the spec's files stay inside its folder), and loaded back with the
// ordinary task loader before the command says it succeeded.
#include "task/import.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "core/task.hpp"
#include "core/task/memory.hpp"
#include "util/capture.hpp"
#include "util/error.hpp"
#include "util/limits.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "util/torch_python.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// Refuses what cannot be a Python program before python3 sees it: a missing path, a folder, a
// device or FIFO (reading /dev/zero never ends), a file over the source size bound, a NUL byte
// (Python refuses the file with a traceback of its own).
void check_program_file(const fs::path& problem, const std::string& given)
{
    std::error_code ec;
    fs::file_status status = fs::status(problem, ec);
    if (!fs::exists(status))
        fail_input("{}: no such file", given);
    if (fs::is_directory(status))
        fail_input("{}: a folder, not a program file (name a .py file; `kforge suite run` takes folders)", given);
    if (!fs::is_regular_file(status))
        fail_input("{}: not a regular file (a device, a FIFO or a socket): name a .py file", given);
    std::string text = read_file(problem, k_max_read_bytes, "PyTorch program");
    if (size_t nul = text.find('\0'); nul != std::string::npos) {
        size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n'));
        fail_input("{}: line {} holds a NUL byte (offset {}): a Python program is text", given, line, nul);
    }
}

// The importer's JSON, or a bad-input error with what it said.
Json run_importer(const TaskImportOptions& options, const fs::path& problem)
{
    const TorchPython& python = torch_python();
    if (python.executable.empty())
        fail_runtime("cannot import {}: {}", problem.string(), python.problem);
    std::vector<std::string> args{"-m", "kforge_torch.importer", problem.string()};
    if (!options.symbols.empty())
        args.insert(args.end(), {"--symbols", options.symbols});
    args.insert(args.end(), {"--device", options.device});
    auto limit = std::chrono::milliseconds(static_cast<int64_t>(options.time_limit_s * 1000));
    log_info("importing {} with {} (torch {})", problem.string(), python.executable, python.torch_version);
    CaptureResult run = run_captured(python.executable, args, python.env(), limit);
    if (run.interrupted)
        fail(ErrorKind::interrupted, "import of {} stopped at your request", problem.string());
    Json facts = Json::parse(run.out, nullptr, false);
    std::string said = facts.is_object() ? facts.value("error", "") : "";
    if (run.timed_out)
        fail_input("{}: the program did not finish importing within its {:.0f} s limit (--time-limit): a size or a "
                   "constructor that is too slow to run on a CPU?",
                   problem.string(), options.time_limit_s);
    if (!said.empty()) {
        // A CPU build of PyTorch lacks some kernels in reduced dtypes (fp16 softmax before 2.1).
        bool cpu_kernel_missing = options.device == "cpu" && said.find("not implemented for") != std::string::npos;
        fail_input("{}: {}{}", problem.string(), said,
                   cpu_kernel_missing ? " (PyTorch's CPU kernels lack this: import on a machine with a GPU with "
                                        "--device cuda)"
                                      : "");
    }
    if (run.exit_code != 0 || !facts.is_object()) {
        // The importer reports every exception the program raises; ending without a report means
        // something went around Python: os._exit(), a signal, a crash in native code, memory
        // exhausted. The importer alone does none of those, so the program is the one to name.
        std::string err = trim(run.err);
        if (err.size() > 2000)
            err = "..." + err.substr(err.size() - 2000);
        fail_input("{}: the program ended the importer before it could report ({}: os._exit(), a signal, a crash in "
                   "native code or memory running out){}",
                   problem.string(), run.describe(limit), err.empty() ? "" : "; it printed:\n" + err);
    }
    return facts;
}

// Where the spec goes and the program's path relative to it; copies the program beside a spec
// written in another folder (refusing to replace a different file there).
std::string place_program(const fs::path& problem, const fs::path& spec)
{
    fs::path spec_dir = fs::absolute(spec).parent_path();
    fs::path beside = spec_dir / problem.filename();
    std::error_code ec;
    if (fs::equivalent(beside, problem, ec))
        return problem.filename().string();
    std::string text = read_file(problem);
    if (fs::exists(beside, ec) && read_file(beside) != text)
        fail_input("{} exists and is not {}: the spec's program must sit beside it; choose another -o folder",
                   beside.string(), problem.string());
    write_file_atomic(beside, text);
    log_info("copied {} beside the spec: {}", problem.filename().string(), beside.string());
    return problem.filename().string();
}

} // namespace

int run_task_import(const TaskImportOptions& options)
{
    fs::path problem = fs::absolute(options.problem);
    std::error_code ec;
    check_program_file(problem, options.problem);
    fs::path spec = options.output.empty() ? problem.parent_path() / (problem.stem().string() + ".json")
                                           : fs::path(options.output);
    if (fs::exists(spec, ec) && !options.force)
        fail(ErrorKind::usage, "{} exists: pass --force to replace it, or -o another file", spec.string());
    std::string name = options.name.empty() ? task_name_from_stem(problem.stem().string()) : options.name;
    if (name != task_name_from_stem(name))
        fail(ErrorKind::usage, "--name: a task name is an identifier (letters, digits, _), got '{}'", name);

    auto begin = std::chrono::steady_clock::now();
    Json facts = run_importer(options, problem);
    fs::create_directories(fs::absolute(spec).parent_path(), ec);
    std::string reference = place_program(problem, spec);
    Json spec_json = spec_from_facts(facts, {name, reference});
    write_file_atomic(spec, spec_json.dump(2) + "\n");
    Task task;
    try {
        task = load_task(spec);
    } catch (const Error& e) {
        fail_runtime("internal: the spec written for {} does not load: {}", problem.string(), e.what());
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    log_info("imported {} as task '{}' in {:.1f} s: {} args, {} test, {} bench, {} held-out shapes", problem.string(),
             task.name, seconds, task.args.size(), task.tests.size(), task.bench.size(), task.held_out.size());
    for (const auto& line : describe_facts(facts))
        log_info("  {}", line);
    // The program's sizes are kept as written (the spec is valid); a shape no GPU can hold is said
    // now rather than found at a search's first allocation.
    for (const auto& shape : shapes_over_memory(task, k_largest_gpu_memory_bytes))
        log_warn("{}; more than the largest GPU kforge knows has ({}): no GPU can run it and `kforge task check` "
                 "refuses it; make the program's sizes smaller, or this shape's in {}",
                 shape.describe(), format_bytes(static_cast<double>(k_largest_gpu_memory_bytes)), spec.string());
    log_info("edit {} to change any of this; `kforge task check {}` checks it on a GPU", spec.string(), spec.string());
    fmt::print("{}\n", spec.string());
    return k_exit_ok;
}

} // namespace kforge
