// Finding a python3 with torch: run each candidate once with a short probe.
#include "util/torch_python.hpp"

#include <chrono>
#include <cstdlib>
#include <mutex>

#include <fmt/format.h>

#include "util/capture.hpp"
#include "util/paths.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

// Importing torch takes a second or two, much longer on a cold disk.
constexpr auto k_probe_limit = std::chrono::seconds(120);

TorchPython probe(const std::vector<std::string>& candidates)
{
    TorchPython found;
    std::vector<std::string> failures;
    std::vector<std::string> tried;
    for (const auto& name : candidates) {
        std::string exe = find_on_path(name);
        if (exe.empty()) {
            failures.push_back(fmt::format("{}: not found", name));
            continue;
        }
        bool seen = false;
        for (const auto& t : tried)
            seen = seen || t == exe;
        if (seen)
            continue;
        tried.push_back(exe);
        CaptureResult run = run_captured(
            exe, {"-c", "import torch; print(torch.__version__); print(torch.version.cuda is not None)"}, {},
            k_probe_limit, 1 << 16);
        if (run.exit_code == 0) {
            auto lines = split(trim(run.out), '\n');
            found.executable = exe;
            found.torch_version = lines.empty() ? "" : trim(lines.front());
            found.torch_has_cuda = lines.size() > 1 && trim(lines[1]) == "True";
            return found;
        }
        std::string why = trim(run.err);
        if (auto last = why.rfind('\n'); last != std::string::npos)
            why = why.substr(last + 1);
        failures.push_back(fmt::format("{}: cannot import torch ({})", exe, why.empty() ? run.describe(k_probe_limit) : why));
    }
    found.problem = fmt::format("no python3 here can import torch ({}); install PyTorch (Debian: apt-get install "
                                "python3-torch) or point KFORGE_PYTHON at a python3 that has it",
                                join(failures, "; "));
    return found;
}

} // namespace

std::string kforge_python_dir() { return (resource_dir() / "python").string(); }

std::vector<std::pair<std::string, std::string>> TorchPython::env() const
{
    const char* existing = std::getenv("PYTHONPATH");
    std::string path = kforge_python_dir();
    if (existing && *existing)
        path += std::string(":") + existing;
    return {{"PYTHONPATH", path}, {"PYTHONUNBUFFERED", "1"}, {"PYTHONDONTWRITEBYTECODE", "1"}};
}

const TorchPython& torch_python()
{
    static std::once_flag once;
    static TorchPython found;
    std::call_once(once, [] {
        if (const char* chosen = std::getenv("KFORGE_PYTHON"); chosen && *chosen)
            found = probe({chosen});
        else
            found = probe({"python3", "/usr/bin/python3"});
    });
    return found;
}

} // namespace kforge
