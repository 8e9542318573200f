// A run's task, as it was when the run started.
//
// A run record keeps the task spec text and the kernel files it names (RunInfo::task_spec and
// task_files), so resuming, inspecting and exporting use the task the candidates were measured
// against, not whatever the spec on disk says today. task_files maps each file's path as the spec
// names it (relative to the spec's folder, e.g. "softmax_f32/reference.cu") to its source.
#pragma once

#include <filesystem>
#include <string_view>

#include "core/records.hpp"
#include "core/task.hpp"
#include "util/paths.hpp" // ScratchFolder, for materialize_run_task

namespace kforge {

// Rebuilds the task of `run` from its snapshot: the files are written into a private temporary
// folder and parsed with the ordinary task loader, so every rule of the spec format applies. Throws
// Error(bad_input) naming `archive_label` when the snapshot is missing, escapes its folder
// (absolute or ".." paths) or does not parse. A task hash differing from the run's is logged as a
// warning.
Task load_run_task(const RunInfo& run, std::string_view archive_label);

// The same, but the snapshot is written into `folder` (which must exist) and stays there, with the
// task's paths pointing into it: for a resumed run, whose GPU worker reads the spec from disk.
Task materialize_run_task(const RunInfo& run, std::string_view archive_label,
                          const std::filesystem::path& folder);

} // namespace kforge
