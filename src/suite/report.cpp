// `kforge suite report SUITE_DIR [--json] [-o FILE.html] [--title TEXT]` (the command is
// src/cli/cmd_suite.cpp): one row per problem and the field's summary (results.hpp), as text, JSON
// or one self-contained HTML page.
//
// Everything is read through the archive API (each archive read-only, in one transaction), and
// nothing is started: the report works while `suite run` (or several shards of it) still writes,
// and it reads the same on any host that sees the folder. With -o, each problem's own `kforge
// report` page is written beside its archive (runs/<id>.html) and linked from the suite's page.
#include "suite/suite.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "report/page.hpp"
#include "suite/manifest.hpp"
#include "suite/page.hpp"
#include "suite/results.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// Writes runs/<id>.html for each problem with an archive; returns id -> path of its page.
std::map<std::string, fs::path> write_problem_pages(const SuiteFolder& folder, const std::vector<ProblemResult>& results)
{
    std::map<std::string, fs::path> pages;
    for (const auto& r : results) {
        if (!r.has_archive)
            continue;
        fs::path archive_path = folder.resolve(r.archive);
        fs::path page = archive_path;
        page.replace_extension(".html");
        try {
            Archive archive = Archive::open(archive_path, OpenMode::read_only);
            ReportData data;
            archive.atomically([&] { data = gather_report_data(archive); });
            write_file_atomic(page, render_report_html(data, default_report_title(data)));
            pages[r.id] = page;
        } catch (const Error& e) {
            log_warn("{}: no report page: {}", r.id, e.what());
        }
    }
    return pages;
}

} // namespace

int run_suite_report(const SuiteReportOptions& o)
{
    SuiteFolder folder(fs::absolute(o.folder).lexically_normal(), false);
    std::optional<SuiteManifest> manifest = folder.read();
    double now = epoch_now();
    std::vector<ProblemResult> results;
    for (const auto& problem : manifest->problems)
        results.push_back(read_problem_result(folder, problem, now));
    SuiteSummary summary = summarize_suite(results);

    if (!o.output.empty()) {
        fs::path output = fs::absolute(o.output);
        SuitePage page;
        page.title = o.title.empty() ? fmt::format("kforge suite: {}", folder.root().filename().string()) : o.title;
        page.folder = folder.root().string();
        page.results = results;
        page.summary = summary;
        page.settings = manifest->settings;
        page.runs = manifest->runs;
        page.generated_at = now;
        for (const auto& [id, path] : write_problem_pages(folder, results))
            page.links[id] = fs::relative(path, output.parent_path()).string();
        write_file_atomic(output, render_suite_html(page));
        log_info("suite report of {} problems: {} (and {} problem pages beside their archives)", results.size(),
                 output.string(), page.links.size());
        if (!o.json)
            fmt::print("{}\n", output.string());
    }
    if (o.json)
        fmt::print("{}\n", suite_report_json(folder.root().string(), results, summary).dump(2));
    else if (o.output.empty())
        fmt::print("{}", render_suite_text(results, summary));
    return k_exit_ok;
}

} // namespace kforge
