// The GPUs section of `kforge inspect` and `kforge report`: which GPUs measured the run's
// candidates and how busy each was, summed over the run's sessions (archive/gpus.cpp).
//
// The per-GPU candidate counts and the candidates no GPU ran (no code, plan and compile errors,
// duplicates never get a row) add up to the archive's candidate count; the section says so, so a
// reader can check it. Archives written before kforge recorded GPUs have an empty list.
#include <fmt/format.h>

#include "report/inspect_report.hpp"
#include "util/text_table.hpp"

namespace kforge {

Json gpus_section(const Archive& archive)
{
    Json gpus = Json::array();
    int64_t measured = 0;
    for (const auto& row : archive.gpu_totals()) {
        Json gpu = row.usage.to_json();
        gpu["candidates"] = row.candidates;
        gpu["sessions"] = row.sessions;
        gpus.push_back(gpu);
        measured += row.candidates;
    }
    return Json{{"gpus", gpus},
                {"candidates_measured", measured},
                {"candidates_without_gpu", archive.candidate_count() - measured}};
}

std::string render_gpus_text(const Json& section)
{
    const Json& gpus = section["gpus"];
    if (gpus.empty())
        return "GPUs: not recorded (an archive written before kforge recorded which GPU measured what)\n";
    std::string out = fmt::format("GPUs ({}): candidates measured and busy time, over all sessions\n", gpus.size());
    TextTable table({{"gpu"},
                     {"host"},
                     {"name"},
                     {"candidates", TextTable::Align::right},
                     {"evaluations", TextTable::Align::right},
                     {"busy", TextTable::Align::right},
                     {"busy %", TextTable::Align::right},
                     {"restarts", TextTable::Align::right},
                     {"state"}});
    for (const auto& gpu : gpus)
        table.add_row({gpu["label"].get<std::string>(), gpu["host"].get<std::string>(), gpu["name"].get<std::string>(),
                       std::to_string(gpu["candidates"].get<int64_t>()), std::to_string(gpu["evaluations"].get<int64_t>()),
                       fmt::format("{:.1f} s", gpu["busy_s"].get<double>()),
                       fmt::format("{:.0f}%", 100 * gpu["busy"].get<double>()), std::to_string(gpu["restarts"].get<int>()),
                       gpu["lost"].get<bool>() ? "lost" : "served"});
    out += table.render();
    out += fmt::format("  {} candidates measured on a GPU + {} that no GPU ran (no code, plan or compile errors)\n",
                       section["candidates_measured"].get<int64_t>(), section["candidates_without_gpu"].get<int64_t>());
    return out;
}

} // namespace kforge
