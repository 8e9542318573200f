// PyTorch beside kforge in `kforge_bench tasks`: runs bench/torch_baselines.py for one task at the
// task's bench shapes (passed exactly, labels included) and reads its JSON. The script times torch
// eager and torch.compile with an L2 flush per sample, as kforge times kernels, and checks each
// result against the task's tolerance; a machine whose python3 cannot import torch (or has no
// python3) gets the reason instead of numbers, which the table shows.
#include <filesystem>

#include <fmt/format.h>

#include "bench/bench.hpp"
#include "util/error.hpp"
#include "util/paths.hpp"

namespace kforge::bench {
namespace {

Json unavailable(const std::string& reason)
{
    return Json{{"available", false}, {"reason", reason}};
}

} // namespace

Json run_torch_baselines(const BenchOptions& options, const Task& task)
{
    if (options.torch == "off")
        return unavailable("switched off (--torch off)");
    std::filesystem::path script = resource_dir() / "bench" / "torch_baselines.py";
    if (!std::filesystem::exists(script))
        return unavailable("no " + script.string());
    Json shapes = Json::array();
    for (const auto& shape : task.bench) {
        Json entry{{"label", shape.label}};
        for (const auto& [name, value] : shape.sizes)
            entry[name] = value;
        shapes.push_back(entry);
    }
    int rc = 0;
    std::string out;
    try {
        out = spawn_capture({"python3", script.string(), "--task", task.name, "--json", "--tasks-dir", options.tasks_dir,
                             "--shapes", shapes.dump(), "--compile-cap", fmt::format("{}", options.torch_compile_cap_s)},
                            rc, CaptureStream::stdout_only);
    } catch (const Error& e) {
        return unavailable(fmt::format("python3 could not be run: {}", e.what()));
    }
    // The document is the last line; anything before it is the script's or torch's chatter.
    std::string last = out.substr(out.rfind('\n', out.size() >= 2 ? out.size() - 2 : 0) + 1);
    Json doc;
    try {
        doc = Json::parse(last);
    } catch (const Json::exception&) {
        return unavailable(fmt::format("bench/torch_baselines.py exited {} without a result: {}", rc, first_line_of(out)));
    }
    if (!doc.value("available", false))
        return unavailable(doc.value("reason", std::string("unknown")));
    Json result{{"available", true}, {"torch", doc.value("torch", "")}, {"device", doc.value("device", "")},
                {"shapes", Json::object()}};
    for (const auto& t : doc.value("tasks", Json::array())) {
        if (t.contains("error"))
            return unavailable(t["error"].get<std::string>());
        for (const auto& s : t.value("shapes", Json::array()))
            result["shapes"][s.value("label", "")] = s;
    }
    return result;
}

double torch_time_ns(const Json& row, std::string& why)
{
    if (!row.is_object() || row.empty()) {
        why = "—";
        return 0;
    }
    if (row.contains("error")) {
        why = row["error"].get<std::string>();
        return 0;
    }
    if (row.value("check", "ok") != "ok") {
        why = "fails the task's check";
        return 0;
    }
    why.clear();
    return row.value("ns", 0.0);
}

} // namespace kforge::bench
