// The outcome of evaluating one candidate.
//
// Verdicts are data: stored, shown to the LLM, never thrown. The ladder orders them from "nothing
// usable" to "proved correct everywhere"; runtime_error and timeout share a rung. Every verdict
// carries the message a model needs to repair the candidate: the compiler log, the first mismatching
// index with expected and actual values, the fault.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kforge {

enum class VerdictKind {
    no_code,         // the reply had no usable source, or its edits did not apply
    plan_error,      // the launch plan is malformed or does not fit the task
    compile_error,   // NVRTC refused it (or the include/feature screen did)
    runtime_error,   // a fault, a launch failure, hidden work, a touched canary
    timeout,         // a compile or a launch ran past its deadline
    incorrect,       // ran, but an output is wrong on a test shape
    held_out_failed, // right on tests and bench shapes, wrong on a held-out shape
    correct,
};

struct Verdict {
    VerdictKind kind = VerdictKind::no_code;
    std::string message;

    bool is_correct() const { return kind == VerdictKind::correct; }
};

std::string_view verdict_name(VerdictKind kind);
std::optional<VerdictKind> parse_verdict(std::string_view name);
// Position on the ladder (0 = no_code); runtime_error and timeout share one.
int verdict_rank(VerdictKind kind);

} // namespace kforge
