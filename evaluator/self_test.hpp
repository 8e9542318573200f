// Built-in bad candidates that every task's checks must reject (DESIGN.md §5).
//
// A spec whose check cannot tell wrong from right is itself wrong. `kforge task check` evaluates
// these on the GPU like any candidate; each must fail, and the reference itself, submitted as a
// candidate, must pass. They are generated from the task alone, so they work for every spec:
//   zeros         writes 0 to every output byte
//   copy_input    copies the first input's bytes into every output
//   perturbed     the reference, then one element of the first output set to 12345
//   skipped_shape the reference, except that on the largest test shape the first output is zeroed
// A task whose reference is a PyTorch program has no reference kernel to submit or to flaw: it gets
// zeros and copy_input, and the program itself is checked by the evaluator (check_program).
#pragma once

#include <string>
#include <vector>

#include "core/task.hpp"

namespace kforge {

struct SelfTestCandidate {
    std::string name;
    std::string source;
    bool must_pass = false;   // true only for the reference itself
};

std::vector<SelfTestCandidate> make_self_tests(const Task& task);

} // namespace kforge
