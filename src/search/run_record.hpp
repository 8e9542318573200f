// The run record a search run starts with, what each session adds to it, and the run secret.
//
// The run secret is mixed into every input seed by the evaluator, so a kernel cannot be tuned to the
// inputs of one run. It is drawn when a run starts, kept in the archive's search state (a resumed
// run must generate the same inputs) and nowhere else: not in the run record, prompts, logs or
// --json output.
#pragma once

#include <cstdint>
#include <string>

#include "archive/archive.hpp"
#include "core/task.hpp"

namespace kforge {

// A new run's record: the task with its snapshot, the configuration and the public seed.
RunInfo new_run_record(const Task& task, const std::string& run_id, const Json& config, uint64_t seed);

// Notes this session's device, toolkit and kforge version (from the evaluator's environment()).
void record_environment(RunInfo& run, const Json& environment);

void store_run_secret(Archive& archive, uint64_t secret);
// Throws Error(bad_input) naming the archive when it holds no secret.
uint64_t stored_run_secret(const Archive& archive);

} // namespace kforge
