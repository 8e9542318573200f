// The library steps of a resolved plan, inside the GPU worker (docs/library-steps.md).
//
// core resolved every number of a step and checked every operand's extent against its allocation;
// here a step becomes the vendor library's call (vendor/kforge_vendor.h): prepared once per shape and
// param point — descriptors, the heuristic's allowed candidates, the one `algo` picks, a cuDNN
// execution plan; none of it timed — and run with each run's buffer addresses, which change from run
// to run (scratch is allocated per run). A step the library cannot prepare is the candidate's verdict:
// plan_error when `algo` is past the allowed candidates (the message says how many there are),
// runtime_error otherwise (the library missing, a call refused).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <cuda.h>

#include "core/plan_check.hpp"
#include "core/verdict.hpp"
#include "evaluator/worker/plan.hpp"
#include "evaluator/worker/vendor_baseline.hpp"
#include "evaluator/worker/vendor_step_api.hpp"

namespace kforge {

// The vendor library's description of a resolved step. The dtype strings point at static storage.
KforgeStep to_vendor_step(const ResolvedLibraryStep& step);

// The run's operand addresses in the vendor library's order (KFORGE_STEP_*_OPERANDS of them), from
// the run's buffers; 0 for a role the step lacks. Throws Error(runtime) for a name with no address
// (the caller's bug: every tensor and scratch buffer of the plan is bound).
std::vector<unsigned long long> step_operand_addresses(const ResolvedLibraryStep& step, const BufferBindings& buffers);

// One prepared step; releases the library's state when destroyed (not after a lost context). Move-only.
class PreparedStep
{
public:
    PreparedStep() = default;
    ~PreparedStep();
    PreparedStep(PreparedStep&& other) noexcept;
    PreparedStep& operator=(PreparedStep&& other) noexcept;
    PreparedStep(const PreparedStep&) = delete;
    PreparedStep& operator=(const PreparedStep&) = delete;

    // Enqueues the step with the run's buffers on `stream`: "" or the library's error.
    std::string run(const BufferBindings& buffers, CUstream stream) const;
    // What the library chose ("cuBLASLt algo 21 (...), 1 of 8 candidates").
    std::string chosen() const;

private:
    friend class PlanSteps;
    const VendorStepApi* m_api = nullptr;
    void* m_state = nullptr;
    const ResolvedLibraryStep* m_step = nullptr;
};

// Every library step of one resolved plan, prepared in launch order.
class PlanSteps
{
public:
    PlanSteps() = default;
    // Prepares each step of `plan` (which must outlive this) in the current context. A failure
    // stops there: failure() says which step and why.
    PlanSteps(const VendorLibrary& library, const ResolvedPlan& plan);

    std::optional<Verdict> failure() const { return m_failure; }
    // Enqueues the step of launch `index`; throws CudaError (a runtime_error for the candidate)
    // with the library's message when it refuses.
    void run(size_t index, const BufferBindings& buffers, CUstream stream) const;
    // Per step, in launch order: {"launch", "step" (the row-major description), "chosen"}.
    Json chosen() const;
    size_t count() const { return m_steps.size(); }

private:
    std::vector<std::pair<size_t, PreparedStep>> m_steps; // launch index, prepared step
    std::optional<Verdict> m_failure;
};

} // namespace kforge
