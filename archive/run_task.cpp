// A run's task rebuilt from its snapshot (core/task.hpp: snapshot_task_files). The rebuild goes
// through files on disk rather than a second in-memory parser so there is exactly one task loader
// (core/task.cpp).
#include "archive/run_task.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge {

namespace fs = std::filesystem;

Task materialize_run_task(const RunInfo& run, std::string_view archive_label, const fs::path& folder)
{
    if (run.task_spec.empty())
        fail_input("{}: the run record holds no task spec snapshot", archive_label);
    fs::path spec = write_task_snapshot(run.task_spec, run.task_files, folder,
                                        fmt::format("{}: the run's task snapshot", archive_label));
    Task task;
    try {
        task = load_task(spec);
    } catch (const Error& e) {
        // Messages name the temporary copy; say where the spec really came from.
        fail_input("{}: the run's task snapshot does not load: {}", archive_label,
                   replace_all(e.what(), folder.string() + "/", ""));
    }
    if (!run.task_hash.empty() && task.spec_hash != run.task_hash)
        log_warn("{}: the task rebuilt from the run's snapshot hashes to {}, the run recorded {}",
                 archive_label, task.spec_hash, run.task_hash);
    return task;
}

Task load_run_task(const RunInfo& run, std::string_view archive_label)
{
    ScratchFolder scratch;
    Task task = materialize_run_task(run, archive_label, scratch.path());
    // Paths relative to the (vanished) scratch folder, as the spec names them.
    task.spec_path = task.spec_path.filename();
    task.reference.path = task.reference.path.lexically_relative(scratch.path());
    for (auto& seed : task.seeds)
        seed.path = seed.path.lexically_relative(scratch.path());
    return task;
}

} // namespace kforge
