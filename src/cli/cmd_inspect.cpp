// `kforge inspect ARCHIVE`: the options and their checks; the report is the report room's
// (src/report/inspect_report.hpp).
#include <memory>

#include "cli/app.hpp"
#include "cli/option_checks.hpp"
#include "report/inspect_report.hpp"

namespace kforge {

void add_inspect_command(CLI::App& app, CommandSlot& slot)
{
    auto options = std::make_shared<InspectOptions>();
    auto lineage_id = std::make_shared<int64_t>(0);
    auto* inspect = app.add_subcommand(
        "inspect", "summarise a run archive: best candidates, failures, LLM usage "
                   "(read-only, also while the run writes)");
    inspect->add_option("ARCHIVE", options->archive_path, "run archive (.kforge)")->required();
    inspect->add_option("--top", options->top, "rows in the top-candidates table")
        ->check(whole_number(1, 1000000))
        ->capture_default_str();
    inspect->add_flag("--failures", options->failures,
                      "also list recent failures with their messages");
    inspect->add_flag("--calls", options->calls,
                      "also show LLM usage per model and the recent calls");
    auto* lineage =
        inspect->add_option("--lineage", *lineage_id, "also show the ancestry of candidate ID")
            ->check(whole_number(1, INT64_MAX));
    inspect->add_flag("--grid", options->grid,
                      "also draw each island's MAP-Elites grid as a heatmap of elite fitness");
    inspect->add_option("--limit", options->limit, "rows in the --failures and --calls lists")
        ->check(whole_number(1, 1000000))
        ->capture_default_str();
    inspect->add_flag("--json", options->json, "print the report as one JSON document");
    inspect->callback([options, lineage_id, lineage, &slot] {
        if (lineage->count() > 0)
            options->lineage = *lineage_id;
        slot = [options] { return run_inspect(*options); };
    });
}

} // namespace kforge
