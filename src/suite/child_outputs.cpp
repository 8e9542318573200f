// What a suite's child runs leave behind, read by the supervisor (runner.cpp, runner_lanes.cpp): the GPU
// time and dollars an archive records, the error a child logged, the stop reason of its summary.
#include "suite/child_outputs.hpp"

#include <fstream>

#include "archive/archive.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge {

ArchiveUse read_archive_use(const std::filesystem::path& path)
{
    ArchiveUse use;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        return use;
    try {
        Archive archive = Archive::open(path, OpenMode::read_only);
        archive.atomically([&] {
            for (const auto& gpu : archive.gpu_totals()) {
                use.busy_s += gpu.usage.busy_s;
                use.wall_s += gpu.usage.wall_s;
                use.candidates += gpu.candidates;
            }
            LlmUsage calls = archive.llm_usage_total();
            use.cost_usd = calls.cost_usd;
            use.model_calls = calls.calls;
            use.model_latency_s = calls.latency_s;
        });
    } catch (const Error& e) {
        log_debug("{}: not readable yet: {}", path.string(), e.what());
    }
    return use;
}

uintmax_t file_size_or_zero(const std::filesystem::path& path)
{
    std::error_code ec;
    uintmax_t size = std::filesystem::file_size(path, ec);
    return ec ? 0 : size;
}

// The last "error: ..." line the child wrote to `log` after `offset` (its text after "error: "),
// else its last line; "" when it wrote nothing.
std::string last_error_in_log(const std::filesystem::path& log, uintmax_t offset)
{
    std::ifstream in(log);
    in.seekg(static_cast<std::streamoff>(offset));
    std::string line, error, last;
    while (std::getline(in, line)) {
        std::string text = trim(line);
        if (text.empty())
            continue;
        last = text;
        if (text.rfind("error: ", 0) == 0)
            error = text.substr(7);
    }
    return truncate_text(error.empty() ? last : error, 600);
}

// Why a run that exited 0 stopped: the stop text of its --json summary.
std::string stop_text(const std::filesystem::path& out)
{
    std::string text;
    try {
        text = read_file(out);
    } catch (const Error&) {
        return "finished";
    }
    Json summary = Json::parse(text.substr(std::min(text.find('{'), text.size())), nullptr, false);
    // A child killed while it wrote leaves a summary cut short (no JSON) or, written by another
    // version, fields of other types: then the stop is only known to be "finished".
    if (summary.is_object() && summary.contains("stop") && summary["stop"].is_object() &&
        summary["stop"].contains("text") && summary["stop"]["text"].is_string())
        return summary["stop"]["text"].get<std::string>();
    return "finished";
}

void append_to_log(const std::filesystem::path& log, const std::string& text)
{
    std::ofstream out(log, std::ios::app);
    out << text;
}

} // namespace kforge
