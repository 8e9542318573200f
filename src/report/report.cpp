// `kforge report ARCHIVE [-o FILE] [--title TEXT]` (the command is src/cli/cmd_report.cpp): the run
// as one self-contained HTML page.
//
// The archive is opened read-only and read in one transaction, so the report works while a run
// writes and shows one consistent moment of it. The data are inspect's report document plus what
// only a picture needs (the fitness series, the LLM cost series, the elite grids, the best's
// source); page.hpp describes the split between gathering and rendering. The file is written
// atomically, so a browser reloading it never sees half a page.
#include "report/page.hpp"

#include <chrono>
#include <limits>

#include <fmt/format.h>

#include "report/inspect_report.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr size_t k_top_rows = 10; // rows of the top-candidates table

} // namespace

int run_report(const ReportOptions& options)
{
    auto started = std::chrono::steady_clock::now();
    std::filesystem::path output = options.output;
    if (output.empty())
        output = std::filesystem::path(options.archive_path).replace_extension(".html");
    output_file_target(output); // a FIFO or a device is refused before any work, never replaced
    Archive archive = Archive::open(options.archive_path, OpenMode::read_only);
    ReportData data;
    archive.atomically([&] { data = gather_report_data(archive); });
    std::string title = options.title.empty() ? default_report_title(data) : options.title;
    std::string html = render_report_html(data, title);

    write_file_atomic(output, html);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    log_info("report of {} candidates: {} in {:.2f} s", data.series.size(),
             format_bytes(static_cast<double>(html.size())), seconds);
    fmt::print("{}\n", output.string());
    return k_exit_ok;
}

ReportData gather_report_data(const Archive& archive)
{
    ReportData data;
    data.best = archive.best_candidate();
    InspectOptions inspect;
    inspect.archive_path = archive.path().string();
    inspect.top = k_top_rows;
    inspect.calls = true;
    inspect.limit = 0; // the page lists no recent calls, only the usage per model
    inspect.gpu_work = false; // not on the page, and it reads every candidate
    if (data.best)
        inspect.lineage = data.best->id;
    data.inspect = build_inspect_report(archive, inspect);
    // A page with holes would pass for a whole run: a damaged archive gets no report (inspect shows
    // what is left of it).
    if (data.inspect.contains("damaged"))
        throw DamagedArchive(data.inspect["damaged"][0].get<std::string>() +
                             "; no report written (`kforge inspect` shows what can still be read)");

    data.series = archive.fitness_series();
    data.calls = archive.llm_calls(std::numeric_limits<int64_t>::max(), CallText::omit);
    data.elites = archive.elites();
    // Elites are correct candidates, so one pass over the correct ones finds every elite's params.
    std::map<int64_t, bool> is_elite;
    for (const auto& elite : data.elites)
        is_elite[elite.candidate_id] = true;
    if (!is_elite.empty())
        for (auto& summary : archive.top_candidates(std::numeric_limits<int64_t>::max()))
            if (is_elite.count(summary.id))
                data.elite_params[summary.id] = std::move(summary.best_params);
    data.islands = run_island_count(data.inspect["run"]["config"], data.elites);
    data.generated_at = std::chrono::duration<double>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    return data;
}

std::string default_report_title(const ReportData& data)
{
    const Json& run = data.inspect["run"];
    return fmt::format("kforge report: {} ({})", run["task"].get<std::string>(),
                       run["run_id"].get<std::string>());
}

} // namespace kforge
