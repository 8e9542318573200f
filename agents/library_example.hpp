// The library-step example of the system prompt, written in the task's own names: its input and
// weight tensors, its size symbols where a dimension is one, its constants where a dimension is fixed
// ("n": 2048, not "n": "out_features" when the problem has no such symbol). A generic example with
// other names reads as a recipe to copy, and a model that copies it writes a plan naming tensors and
// symbols the task does not have.
#pragma once

#include <string>

#include "core/task.hpp"

namespace kforge {

// The example launch plan (params, scratch, launches) for `task`: a matmul step over the task's
// GEMM-shaped pair (a 2-D weight and an input whose last dimension matches one of its dims) into
// scratch, then one kernel of the candidate's; or a conv step over a 3-D to 5-D weight; or, where
// the task has neither, the generic example with its names said to be examples.
std::string library_step_example(const Task& task);

} // namespace kforge
