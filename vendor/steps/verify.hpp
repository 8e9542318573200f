// The self-test of library steps: small generated problems with host-computed answers.
//
// Each problem is a KforgeStep with its operands in kforge_vendor.h's order, inputs from a fixed
// seed (rounded to the step's dtype first, so the host computes from the very values the device
// sees) and the expected output computed on the host in double precision under an fp32-appropriate
// tolerance that grows with the square root of the reduction length. verify.cpp runs each
// through the C interface, as the GPU worker drives it, for every allowed algorithm.
#pragma once

#include <string>
#include <vector>

#include "kforge_vendor.h"
#include "selftest.hpp"

namespace kforge::vendor {

struct StepProblem {
    std::string label;            // "matmul NT bias relu 64x48x96"
    KforgeStep step{};            // dtype fields point at string literals
    // The operands in kforge_vendor.h's order without the workspace (matmul: A, B, C, D, bias;
    // conv: x, w, y); an absent one has count 0. The output's data, when not empty, is its
    // contents before every run (C and D one buffer); otherwise it is NaN-poisoned.
    std::vector<HostTensor> operands;
    size_t output = 0;            // the output's index in operands
    int shares_output = -1;       // the operand that is the output's buffer (c when C == D), or -1
};

std::vector<StepProblem> matmul_step_problems();
std::vector<StepProblem> conv_step_problems();

} // namespace kforge::vendor
