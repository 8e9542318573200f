// The model room's PyTorch side (python/kforge_torch/model), run in a killable child.
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


} // namespace kforge
