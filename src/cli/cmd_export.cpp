// `kforge export ARCHIVE (--best | --candidate ID) -o FILE [--launcher | --torch]`: the options and
// their checks; the export itself is the export room's (src/export/export.hpp).
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "cli/app.hpp"
#include "cli/option_checks.hpp"
#include "export/export.hpp"

namespace kforge {

void add_export_command(CLI::App& app, CommandSlot& slot)
{
    auto options = std::make_shared<ExportOptions>();
    auto candidate_id = std::make_shared<int64_t>(0);
    auto* cmd = app.add_subcommand(
        "export", "write one candidate as a standalone .cu file (nvcc compiles it as is)");
    cmd->add_option("ARCHIVE", options->archive_path, "run archive (.kforge)")->required();
    auto* best =
        cmd->add_flag("--best", options->best, "the correct candidate with the highest fitness");
    auto* id = cmd->add_option("--candidate", *candidate_id, "the candidate with this id")
                   ->check(whole_number(1, INT64_MAX));
    best->excludes(id);
    cmd->add_option("-o,--output", options->output, "file to write ('-' for stdout)")->required();
    auto* launcher =
        cmd->add_flag("--launcher")
            ->description("also write the host launcher kforge_<task>() that runs the plan, and "
                          "FILE.h");
    auto* torch = cmd->add_flag("--torch")->description(
        "also write the PyTorch operator kforge::<task>, and FILE_load.py that builds it");
    launcher->excludes(torch);
    cmd->callback([options, candidate_id, best, id, launcher, torch, &slot] {
        if (best->count() + id->count() != 1)
            throw CLI::ValidationError("export", "give one of --best or --candidate ID");
        if (launcher->count() + torch->count() > 0) {
            options->host = launcher->count() > 0 ? HostCode::launcher : HostCode::torch;
            if (std::filesystem::path(options->output).extension() != ".cu")
                throw CLI::ValidationError(
                    "export", fmt::format("with {}, -o names the .cu file to write (FILE.cu; {} "
                                          "goes beside it), got '{}'",
                                          launcher->count() > 0 ? "--launcher" : "--torch",
                                          launcher->count() > 0 ? "FILE.h" : "FILE_load.py",
                                          options->output));
        }
        if (id->count() > 0)
            options->candidate_id = *candidate_id;
        slot = [options] { return run_export(*options); };
    });
}

} // namespace kforge
