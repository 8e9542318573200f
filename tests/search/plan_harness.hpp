// Helpers of the two-phase search tests: a run killed between the phases, and what the archive says
// about the plans it kept.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "search/search_harness.hpp"

namespace kforge::test {

// Runs `options` in a child process that dies by SIGKILL right after its `nth` plan is stored.
void run_killed_after_plan(const std::filesystem::path& path, const HarnessOptions& options, int nth);

// The planner prompts (call requests as JSON text) of the plans the saved state holds for items
// not recorded yet: the items a resume must continue with their coder.
std::vector<std::string> pending_plan_prompts(const std::filesystem::path& path);

// How often the planner was sent `request` in the archive at `path`.
int64_t count_plan_prompt(const std::filesystem::path& path, const std::string& request);

} // namespace kforge::test
