// run_model_python(): the PyTorch side of `kforge model` in a child, as `task import` runs the
// importer (src/task/import.cpp): the model's own code runs only there, under a keeper that ends
// every process it starts, within a wall-time limit.
#include <chrono>

#include "model/python.hpp"
#include "util/capture.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "util/torch_python.hpp"

namespace kforge {

Json run_model_python(const std::vector<std::string>& args, double time_limit_s, const std::string& what)
{
    const TorchPython& python = torch_python();
    if (python.executable.empty())
        fail_runtime("cannot {}: {}", what, python.problem);
    std::vector<std::string> argv{"-m", "kforge_torch.model"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto limit = std::chrono::milliseconds(static_cast<int64_t>(time_limit_s * 1000));
    log_info("{} with {} (torch {})", what, python.executable, python.torch_version);
    CaptureResult run = run_captured(python.executable, argv, python.env(), limit);
    for (const auto& line : split(run.err, '\n'))
        if (line.rfind("kforge model: ", 0) == 0)
            log_info("{}", line.substr(14));
    if (run.interrupted)
        fail(ErrorKind::interrupted, "{} stopped at your request", what);
    if (run.timed_out)
        fail_input("cannot {}: it did not finish within {:.0f} s (--time-limit)", what, time_limit_s);
    Json result = Json::parse(run.out, nullptr, false);
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

Json read_model_document(const std::filesystem::path& folder, const std::string& name, const std::string& hint)
{
    std::filesystem::path path = folder / name;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        fail_input("{}: no {} ({})", folder.string(), name, hint);
    Json document = Json::parse(read_file(path), nullptr, false);
    if (!document.is_object())
        fail_input("{}: not JSON; {}", path.string(), hint);
    return document;
}

} // namespace kforge
