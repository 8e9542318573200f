// Text of the pieces a prompt is made of: the task, the hardware, a candidate's results.
//
// These turn kforge's records into the plain lines that fill template placeholders. They decide
// what a model sees and what it never sees: the task's bench shapes but never its held-out ones,
// a verdict message cut to a readable size, metrics flattened to "name: value" lines.
#pragma once

#include <string>

#include "agents/proposer.hpp"
#include "core/task.hpp"
#include "util/json_reader.hpp"

namespace kforge {

// "- x: f32 tensor [M, N], input (const float*)" per argument, in kernel-parameter order; for a
// PyTorch-program task also what the program makes there and the dims at each bench shape.
std::string describe_args(const Task& task);
// "the program's input 0 (get_inputs()[0])", "the model's `gemm.weight`", ...
std::string describe_program_slot(const ProgramSlot& slot);
// ", [8192, 16384] at the bench shape": the argument's dims at each bench shape.
std::string concrete_dims(const Task& task, const ArgSpec& arg);
// Size symbols with their bounds, and the task's constraints.
std::string describe_symbols(const Task& task);
// One line per bench shape. Held-out shapes are never described.
std::string describe_bench_shapes(const Task& task);
// The check of each output.
std::string describe_checks(const Task& task);
// FLOP and byte formulas, and their values per bench shape with the floor time when `hardware`
// gives memory_bandwidth_gbps (and peak_fp32_tflops for compute).
std::string describe_roofline(const Task& task, const Json& hardware);
std::string describe_default_plan(const Task& task);
std::string describe_forbidden(const Task& task);
// "- name: value" per fact; "" for an empty object.
std::string describe_hardware(const Json& hardware);

// A candidate's state in one line: "correct; 2.31x the baseline (geometric mean over bench shapes)".
std::string describe_status(const CandidateView& view);
std::string describe_times(const std::vector<ShapeTiming>& times);
// "name: value" lines of a (nested) metrics object, at most `max_lines`.
std::string describe_metrics(const Json& metrics, size_t max_lines = 40);
// "name=value, ..." of a descriptors object.
std::string describe_descriptors(const Json& descriptors);
// The verdict message, cut to a size a prompt can carry.
std::string describe_message(const CandidateView& view);


} // namespace kforge
