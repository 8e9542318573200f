// run_model_python(): the PyTorch side of `kforge model` in a child, as `task import` runs the
// importer (src/task/import.cpp): the model's own code runs only there, under a keeper that ends
// every process it starts, within a wall-time limit.
#include <chrono>

#include "model/python.hpp"
#include "util/capture.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"
#include "util/text.hpp"
#include "util/text_table.hpp"
#include "util/torch_python.hpp"

namespace kforge {

Json run_model_python(const std::vector<std::string>& args, double time_limit_s, const std::string& what)
{
    const TorchPython& python = torch_python();
    if (python.executable.empty())
        fail_runtime("cannot {}: {}", what, python.problem);
    // The result comes back in a file of our own, not on stdout: the model's code runs in that
    // process, and what it prints (even through fd 1) must not stand in for the result.
    ScratchFolder scratch;
    std::filesystem::path result_file = scratch.path() / "result.json";
    std::vector<std::string> argv{"-m", "kforge_torch.model"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--result", result_file.string()});
    auto limit = std::chrono::milliseconds(static_cast<int64_t>(time_limit_s * 1000));
    log_info("{} with {} (torch {})", what, python.executable, python.torch_version);
    CaptureResult run = run_captured(python.executable, argv, python.env(), limit);
    for (const auto& line : split(run.err, '\n'))
        if (line.rfind("kforge model: ", 0) == 0)
            log_info("{}", line.substr(14));
    if (!trim(run.out).empty())
        log_info("{} printed on stdout (not read as its result): {}", what, first_line(run.out, 300));
    if (run.interrupted)
        fail(ErrorKind::interrupted, "{} stopped at your request", what);
    if (run.timed_out)
        fail_input("cannot {}: it did not finish within {:.0f} s (--time-limit)", what, time_limit_s);
    std::error_code ec;
    Json result = std::filesystem::is_regular_file(result_file, ec) ? Json::parse(read_file(result_file), nullptr, false)
                                                                    : Json();
    if (result.is_object() && result.contains("error"))
        fail_input("cannot {}: {}", what, result["error"].is_string() ? result["error"].get<std::string>() : "?");
    if (run.exit_code != 0 || !result.is_object()) {
        std::string err = trim(run.err);
        if (err.size() > 2000)
            err = "..." + err.substr(err.size() - 2000);
        fail_input("cannot {}: the PyTorch side ended without a report ({}){}", what, run.describe(limit),
                   err.empty() ? "" : "; it printed:\n" + err);
    }
    return result;
}

} // namespace kforge
