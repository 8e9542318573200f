// A run's task, as it was when the run started.
//
// A run record keeps the task spec text and the kernel files it names (RunInfo::task_spec and
// task_files), so resuming, inspecting and exporting use the task the candidates were measured
// against, not whatever the spec on disk says today. task_files maps each file's path as the spec
// names it (relative to the spec's folder, e.g. "softmax_f32/reference.cu") to its source.
#pragma once

#include <string_view>

#include "core/records.hpp"
#include "core/task.hpp"

namespace kforge {

// The kernel files of `task` (reference and seeds) keyed by their path relative to the spec's
// folder.
Json snapshot_task_files(const Task& task);

// Rebuilds the task of `run` from its snapshot: the files are written into a private temporary
// folder and parsed with the ordinary task loader, so every rule of the spec format applies. Throws
// Error(bad_input) naming `archive_label` when the snapshot is missing, escapes its folder
// (absolute or ".." paths) or does not parse. A task hash differing from the run's is logged as a
// warning.
Task load_run_task(const RunInfo& run, std::string_view archive_label);

} // namespace kforge
