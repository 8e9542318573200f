// Fixture kernels through the real GPU evaluator, each checked against the verdict it must get: the
// [gpu] verdict tests of test_gpu_verdicts.cpp (softmax) and test_gpu_verdicts_torch.cpp (an
// imported PyTorch program) share this.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/task.hpp"
#include "evaluator/evaluator.hpp"

namespace kforge::test {

struct VerdictCase {
    std::string file;              // in the kernel folder
    VerdictKind expected;
    std::string message_contains;  // "" : any message
    bool held_out = false;         // also verify on the held-out shapes
};

// The kernels of tests/fixtures/kernels/<task>/ (good_block_row.cu and the bad_*.cu hacks) in their
// order (faults and a hang between kernels that must still evaluate normally) with the verdict each
// must get; `input` and `output` are the task's input the hacks write into and the output they get
// wrong, as the messages name them.
std::vector<VerdictCase> hack_kernel_cases(const std::string& input, const std::string& output);

// Submits every job and waits for all of them; results by ticket.
std::map<uint64_t, Evaluation> evaluate_all(CandidateEvaluator& evaluator, const std::vector<EvalJob>& jobs);

// Evaluates the cases' kernels from `kernel_dir` in order (one evaluator: faults and hangs between
// kernels must not disturb the ones after) and checks each verdict and message; a correct one must
// have a fitness and a measurement per bench shape, a wrong one no fitness.
void check_verdicts(const Task& task, const std::filesystem::path& kernel_dir, const std::vector<VerdictCase>& cases,
                    const EvaluatorConfig& config);

} // namespace kforge::test
