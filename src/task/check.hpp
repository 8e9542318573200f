// `kforge task check`: a task spec, its kernels compiled at every param point a search would sweep,
// and the GPU self-tests (selftest.hpp) where a GPU is present; see check.cpp for the order of the
// checks and what fails them.
#pragma once

#include <string>

namespace kforge {

struct TaskCheckOptions {
    std::string task_path;
    std::string arch = "sm_90a"; // what NVRTC compiles for
};

// Prints the findings on stdout. Returns the exit code: 0 when the spec is usable (self-tests
// passed, or skipped without a GPU), 1 when a shape does not fit the GPU, a kernel does not compile
// or fit its plan, or a self-test fails; throws Error(bad_input) for a spec that does not load.
int run_task_check(const TaskCheckOptions& options);

} // namespace kforge
