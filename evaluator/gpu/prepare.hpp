// Stage 1 of the GPU evaluator (evaluator-internal): a job made ready for a GPU.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "core/task.hpp"
#include "evaluator/compile/compile.hpp"
#include "evaluator/gpu/slot.hpp"

namespace kforge {

// Extracts and validates the job's plan, screens its source, and compiles every param point (or
// the job's only_params) once per arch in `arches` through `pool`, the compiles running at once.
// Each compiled variant carries its measurement-memo key and the job as its origin. A plan or
// screening failure is the result's early_failure. `compiling` counts the compiles in flight, for
// the progress line.
PreparedJob prepare_job(const Task& task, EvalJob job, CompilePool& pool, const std::vector<std::string>& arches,
                        std::atomic<int64_t>& compiling);

// Starts the compiles that prepare_job() would make for `source` (the task's own code when
// `task_code`) in the background (CompilePool::prefetch), so that its job finds them done. Nothing
// for a source whose plan or screening would fail: its job reports that.
void prefetch_compiles(const Task& task, const std::string& source, bool task_code, CompilePool& pool,
                       const std::vector<std::string>& arches);

} // namespace kforge
