// The GPU self-tests of `kforge task check` (see selftest.cpp).
#pragma once

#include <string>

#include "core/task.hpp"

namespace kforge {

struct SelfTestOutcome {
    bool ran = false;            // false when no GPU could be used
    std::string skipped_reason;  // why they did not run
    bool passed = false;         // reference correct and every bad candidate rejected
    std::string table;           // one row per self-test
};

SelfTestOutcome run_gpu_self_tests(const Task& task);

} // namespace kforge
