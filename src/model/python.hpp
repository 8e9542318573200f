// The model room's two internal helpers: the PyTorch side (python/kforge_torch/model) run in a
// killable child, and the folder's JSON documents read back.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "util/json_reader.hpp"

namespace kforge {

// Runs `python3 -m kforge_torch.model ARGS` under a keeper within `time_limit_s`; its progress lines
// go to the log, its JSON comes back. Throws Error(bad_input) with what it said ({"error": ...}),
// Error(interrupted) at Ctrl-C, Error(runtime) when no python3 here imports torch.
Json run_model_python(const std::vector<std::string>& args, double time_limit_s, const std::string& what);

// DIR/<name> parsed; Error(bad_input) naming the file when it is missing or not JSON, with `hint`
// (the step that writes it).
Json read_model_document(const std::filesystem::path& folder, const std::string& name, const std::string& hint);

} // namespace kforge
