// `kforge report ARCHIVE [-o FILE] [--title TEXT]`: the options; the page is the report room's
// (src/report/page.hpp).
#include <memory>

#include "cli/app.hpp"
#include "report/page.hpp"

namespace kforge {

void add_report_command(CLI::App& app, CommandSlot& slot)
{
    auto options = std::make_shared<ReportOptions>();
    auto* report = app.add_subcommand(
        "report", "write a run archive as one self-contained HTML page with plots, the elite grids "
                  "and the best kernel (read-only, also while the run writes)");
    report->add_option("ARCHIVE", options->archive_path, "run archive (.kforge)")->required();
    report->add_option("-o,--output", options->output,
                       "HTML file to write (default: the archive's path with .html)");
    report->add_option("--title", options->title,
                       "page title (default: \"kforge report: TASK (RUN_ID)\")");
    report->callback([options, &slot] { slot = [options] { return run_report(*options); }; });
}

} // namespace kforge
