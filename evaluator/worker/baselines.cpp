// The session's baselines: the task's reference and its vendor routines (cuBLAS, CUB, cuSPARSE),
// timed in the GPU worker on the same generated inputs, interleaved sample by sample.
//
// A vendor routine is a trusted library, but kforge's mapping of the task's operands onto it
// (row-major vs column-major, leading dimensions, which buffer is which) is ours, so before it is
// timed on a shape it runs once on that shape's inputs and must match the reference outputs under
// the task's tolerance, write nothing outside its outputs, and leave the inputs unchanged. It is
// then a library call for the Timer: no kernel list, so all the kernels it launches between the
// sample's probes count. Its unmeasured preparation (saxpy's copy of y into z, spmv's
// zeroing of y) runs with the output reset, before the L2 flush. A routine that fails anywhere is
// dropped, with the reason, on every shape: a baseline timed on some shapes only would make a
// geomean speedup compare different things.
#include <algorithm>

#include <fmt/format.h>

#include "evaluator/worker/runner.hpp"
#include "evaluator/worker/vendor_baseline.hpp"
#include "util/error.hpp"

namespace kforge {

namespace {

// One vendor routine prepared on the loaded shape, as a timing subject.
struct VendorRun {
    size_t status_index = 0;
    VendorBaseline baseline;
    std::string error; // the first failure of stage/run during timing
};

std::vector<VendorBaselineStatus> initial_statuses(const Task& task, const VendorLibrary* library)
{
    std::vector<VendorBaselineStatus> statuses;
    for (const auto& routine : task.vendor_baselines) {
        VendorBaselineStatus status;
        status.routine = routine;
        status.library = std::string(vendor_baseline_library(routine));
        if (!library)
            status.reason = "vendor baselines are switched off for this session";
        else
            status.reason = library->routine_status(routine);
        statuses.push_back(std::move(status));
    }
    return statuses;
}

} // namespace

std::string CandidateRunner::check_vendor_run(const VendorBaseline& baseline, const Shape& shape,
                                              std::chrono::milliseconds deadline)
{
    Bound no_scratch;
    reset(no_scratch);
    std::string error = baseline.stage(m_context.stream());
    if (error.empty())
        error = baseline.run(m_context.stream());
    if (!error.empty())
        return fmt::format("failed on {}: {}", shape.label, error);
    if (wait_for_stream(m_context.stream(), std::chrono::steady_clock::now() + deadline) == WaitStatus::timeout) {
        mark_context_lost();
        throw CudaError(CUDA_ERROR_LAUNCH_TIMEOUT, fmt::format("vendor baseline {} did not finish within {:.1f} s on {}",
                                                               baseline.routine(), deadline.count() / 1000.0, shape.label));
    }
    if (std::string problem = m_workspace.check_integrity(); !problem.empty())
        return fmt::format("{} on {}", problem, shape.label);
    if (auto wrong = compare_outputs(shape, 0, false, ""))
        return "disagrees with the task's reference, so kforge's operand mapping for it is wrong: " + wrong->message;
    return "";
}

BaselineTimings CandidateRunner::time_baselines(TimingLevel level, const VendorLibrary* library,
                                                std::chrono::milliseconds deadline)
{
    if (!m_reference)
        fail_runtime("internal: time_baselines needs a reference kernel (a PyTorch program is timed by "
                     "time_program_baselines)");
    BaselineTimings out;
    out.vendor = initial_statuses(m_task, library);
    auto usable = [&](size_t i) { return out.vendor[i].reason.empty(); };

    for (const auto& shape : m_task.bench) {
        std::map<std::string, uint64_t, std::less<>> addresses;
        for (auto& [name, data] : m_workspace.prepare(shape, 0))
            addresses[name] = data.buffer.ptr();
        std::vector<VendorRun> runs;
        for (size_t i = 0; i < out.vendor.size(); ++i) {
            if (!usable(i))
                continue;
            VendorRun run{i, library->prepare(out.vendor[i].routine, bind_vendor_operands(m_task, shape, addresses)), ""};
            std::string problem = run.baseline.ready() ? check_vendor_run(run.baseline, shape, deadline)
                                                       : fmt::format("cannot be prepared on {}: {}", shape.label,
                                                                     run.baseline.problem());
            if (problem.empty())
                runs.push_back(std::move(run));
            else
                out.vendor[i].reason = problem;
        }

        ResolvedPlan plan = resolve_plan(m_task, m_reference_plan, shape, m_reference_params);
        Bound bound = bind(plan);
        Bound no_scratch;
        // A routine that fails while being timed is dropped and the shape measured again without it.
        for (;;) {
            std::vector<TimingSubject> subjects{subject_for("reference", *m_reference, plan, bound)};
            for (auto& run : runs) {
                TimingSubject subject;
                subject.label = run.baseline.routine();
                subject.reset = [this, &run, &no_scratch] {
                    reset(no_scratch);
                    if (run.error.empty())
                        run.error = run.baseline.stage(m_context.stream());
                };
                subject.launch = [this, &run] {
                    if (run.error.empty())
                        run.error = run.baseline.run(m_context.stream());
                };
                subjects.push_back(std::move(subject));
            }
            bool timed_out = false;
            std::vector<SampleStats> stats = m_timer.measure(subjects, timing_settings_for(level), deadline, timed_out);
            auto failed = std::find_if(runs.begin(), runs.end(), [&](const VendorRun& run) {
                size_t k = static_cast<size_t>(&run - runs.data()) + 1;
                return !run.error.empty() || (k < stats.size() && !stats[k].problem.empty());
            });
            if (!timed_out && failed != runs.end()) {
                size_t k = static_cast<size_t>(failed - runs.begin()) + 1;
                out.vendor[failed->status_index].reason =
                    fmt::format("failed while timed on {}: {}", shape.label,
                                failed->error.empty() ? stats[k].problem : failed->error);
                runs.erase(failed);
                continue;
            }
            if (timed_out || stats.empty() || !stats[0].problem.empty()) {
                out.problem = timed_out ? fmt::format("the baselines timed out on {}", shape.label)
                                        : fmt::format("timing the reference on {} failed: {}", shape.label,
                                                      stats.empty() ? "no samples" : stats[0].problem);
                return out;
            }
            out.measurements.push_back(to_measurement(stats[0], shape, "reference", level));
            for (size_t k = 0; k < runs.size(); ++k)
                out.measurements.push_back(to_measurement(stats[k + 1], shape, runs[k].baseline.routine(), level));
            break;
        }
    }

    // Timed on every shape, or not at all.
    for (auto& status : out.vendor) {
        status.timed = status.reason.empty() && !m_task.bench.empty();
        if (!status.timed) {
            if (status.reason.empty())
                status.reason = "the task has no bench shapes";
            std::erase_if(out.measurements, [&](const Measurement& m) { return m.subject == status.routine; });
        }
    }
    return out;
}

} // namespace kforge
