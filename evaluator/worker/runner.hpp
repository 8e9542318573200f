// Evaluating one compiled variant (a candidate at one param point) inside the GPU worker.
//
// The order of the checks is the design (DESIGN.md §6.2-6.3):
//  1. resolve the plan for every shape and check it against the loaded kernels' limits;
//  2. verify on every test shape (and held-out shape when asked): two trials with different seeded
//     inputs; the second trial runs twice and the two outputs are compared bit for bit (races and
//     uninitialised reads show there); after every run: guards, input checksums, the reference's own
//     checksums, then each output against the reference;
//  3. time on every bench shape (Timer), re-check the output of the last timed run, then run once
//     more on fresh inputs (a new seed) and check that too, so a kernel that caches results across
//     launches or only computes when watched fails;
//  4. a time below the roofline floor is flagged and the shape re-verified on another fresh seed.
// Every failure becomes a Verdict with a message a model can act on; faults and hangs also ask the
// worker to restart, because the context is unusable after them.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/candidate.hpp"
#include "core/task.hpp"
#include "evaluator/worker/profile.hpp"
#include "evaluator/worker/timing.hpp"
#include "evaluator/worker/workspace.hpp"
#include "evaluator/worker/roofline.hpp"
#include "evaluator/worker/vendor_status.hpp"

namespace kforge {

enum class TimingLevel { none, sweep, quick, confirm };

struct VariantRequest {
    std::string cubin;
    Plan plan;
    ParamPoint params;
    bool verify_tests = true;
    bool verify_held_out = false;
    TimingLevel timing = TimingLevel::quick;
    bool profile = false;                    // range-profiler metrics on the largest bench shape (also
                                             // with timing none: the memo may ask for it alone)
    std::chrono::milliseconds launch_deadline{10000};
};

struct VariantOutcome {
    Verdict verdict;
    bool restart_worker = false;             // the context is unusable (sticky error or hang)
    std::vector<Measurement> measurements;   // candidate, and the reference when interleaved
    Json resources = Json::object();         // per kernel: registers, local bytes, smem, occupancy
    Json notes = Json::object();             // nondeterminism, roofline flags, trials run
    Json profile = Json::object();           // metric -> value, or {"unavailable": why}
};

// The baselines of a session: the reference and the task's vendor routines on every bench shape.
struct BaselineTimings {
    std::vector<Measurement> measurements;    // subject "reference" or a routine name ("cublas_sgemm")
    std::vector<VendorBaselineStatus> vendor; // one per routine the task names, in its order
    std::string problem;                      // non-empty: the reference itself could not be timed
};

class VendorBaseline;
class VendorLibrary;

// The timing settings of a level (quick for none).
TimingSettings timing_settings_for(TimingLevel level);

class CandidateRunner
{
public:
    // `reference` is the task's reference kernel, or null when the reference is a PyTorch program
    // (`program`, which then also stands for the reference in the baselines).
    CandidateRunner(const Task& task, const GpuContext& context, const InternalKernels& kernels, Workspace& workspace,
                    Timer& timer, const DevicePeaks& peaks, const LoadedKernels* reference,
                    const Plan& reference_plan, ParamPoint reference_params, RangeProfiler& profiler,
                    TorchReference* program = nullptr);

    VariantOutcome run(const VariantRequest& request);
    // Times the reference on every bench shape and, with a `library`, the task's vendor routines
    // interleaved with it sample by sample (worker/baselines.cpp). Each routine is first prepared on
    // the shape's generated inputs and checked against the reference outputs under the task's
    // tolerance; one that cannot be prepared, disagrees or fails is left out with the reason (a
    // disagreement means kforge's operand mapping for it is wrong). A routine is timed on all bench
    // shapes or on none. Without a library every routine is reported as switched off.
    BaselineTimings time_baselines(TimingLevel level, const VendorLibrary* library, std::chrono::milliseconds deadline);
    // PyTorch-program tasks: the program in eager mode is the reference (subject "reference") and,
    // with `compile`, torch.compile a baseline ("torch_compile"), both timed by the reference
    // process on this GPU with an L2 flush per sample (torch_reference.hpp).
    BaselineTimings time_program_baselines(bool compile);
    // PyTorch-program tasks: torch.compile's CPU work for every bench shape, done ahead without
    // running anything on the GPU (TorchReference::warm_compile), so that time_program_baselines,
    // run under a shared GPU's measuring lock, holds it for little more than the timing.
    void warm_program_compile();
    // PyTorch-program tasks: the program's own outputs (in its dtypes) against the expected ones
    // under the task's check, on every shape of `shapes`: "" when it passes everywhere, else the
    // first failure. A program that fails its own check has a tolerance too tight for it.
    std::string check_program(const std::vector<const Shape*>& shapes);

private:
    struct Loaded;
    // A plan's buffers for one run: the workspace's tensors plus fresh guarded scratch.
    struct Bound {
        BufferBindings buffers;
        std::vector<GuardedBuffer> scratch;
    };
    Bound bind(const ResolvedPlan& plan);
    void reset(Bound& bound);
    std::optional<Verdict> verify_shapes(const Loaded& loaded, const std::vector<Shape>& shapes, bool held_out,
                                         VariantOutcome& outcome, std::chrono::milliseconds deadline);
    std::optional<Verdict> run_and_check(const Loaded& loaded, const Shape& shape, int trial, bool held_out,
                                         VariantOutcome& outcome, std::chrono::milliseconds deadline,
                                         const std::string& when = "");
    std::optional<Verdict> check_after_run(const Shape& shape, int trial, const ResolvedPlan& plan, Bound& bound,
                                           bool held_out);
    std::optional<Verdict> compare_outputs(const Shape& shape, int trial, bool held_out, const std::string& when);
    std::optional<Verdict> time_shape(const Loaded& loaded, const Shape& shape, TimingLevel level,
                                      VariantOutcome& outcome, std::chrono::milliseconds deadline);
    void profile_largest(const Loaded& loaded, VariantOutcome& outcome);
    TimingSubject subject_for(const std::string& label, const LoadedKernels& kernels, const ResolvedPlan& plan,
                              Bound& bound, const PlanSteps* steps = nullptr);
    // Runs a prepared vendor routine once on the loaded shape and checks it: "" or the problem.
    std::string check_vendor_run(const VendorBaseline& baseline, const Shape& shape,
                                 std::chrono::milliseconds deadline);
    Measurement to_measurement(const SampleStats& stats, const Shape& shape, const std::string& subject,
                               TimingLevel level) const;

    const Task& m_task;
    const GpuContext& m_context;
    const InternalKernels& m_kernels;
    Workspace& m_workspace;
    Timer& m_timer;
    const DevicePeaks& m_peaks;
    const LoadedKernels* m_reference;
    const Plan& m_reference_plan;
    ParamPoint m_reference_params;
    RangeProfiler& m_profiler;
    TorchReference* m_program;
    uint64_t m_poison_counter = 1;
};

} // namespace kforge
