// A PyTorch program's baselines and its own check (tasks whose reference is a PyTorch program).
//
// For such a task the program in eager mode is the reference every speedup is measured against
// (KernelBench's baseline), and torch.compile of it a second baseline. Both run in the reference
// process on this GPU (TorchReference::time): CUDA events around the forward alone, an L2 flush of
// the size kforge's own timing uses before every sample, TF32 off. Kernel timestamps of another
// process are out of CUPTI's reach here, so the method differs from kforge's (events include the
// gaps between the program's kernels, which a user running it pays too); each measurement says so.
// On a GPU that several runs share, torch.compile's CPU work is done ahead (warm_program_compile),
// outside the measuring lock the timing is done under (worker/share.hpp).
#include <fmt/format.h>

#include "evaluator/worker/runner.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace kforge {
namespace {

constexpr const char* k_compile_routine = "torch_compile";

} // namespace

BaselineTimings CandidateRunner::time_program_baselines(bool compile)
{
    if (!m_program)
        fail_runtime("internal: time_program_baselines needs a PyTorch-program task");
    BaselineTimings out;
    VendorBaselineStatus compiled{k_compile_routine, "PyTorch", false, ""};
    if (!compile)
        compiled.reason = "switched off for this session";
    for (const auto& shape : m_task.bench) {
        bool with_compile = compiled.reason.empty();
        std::vector<ProgramTiming> timings =
            m_program->time(shape, m_workspace.input_seed(shape, 0), with_compile, m_timer.flush_bytes());
        const ProgramTiming& eager = timings.front();
        if (!eager.problem.empty()) {
            out.problem = fmt::format("timing the PyTorch program on {} failed: {}", shape.label, eager.problem);
            return out;
        }
        auto measurement = [&](const ProgramTiming& t, const char* subject) {
            Measurement m;
            m.shape_set = "bench";
            m.shape_label = shape.label;
            m.subject = subject;
            m.median_ns = t.median_ns;
            m.q1_ns = t.q1_ns;
            m.q3_ns = t.q3_ns;
            m.min_ns = t.min_ns;
            m.samples = t.samples;
            m.confirmed = true;
            m.roofline_ns = roofline_at(m_task, shape, m_peaks).roofline_ns;
            return m;
        };
        out.measurements.push_back(measurement(eager, "reference"));
        if (with_compile) {
            const ProgramTiming& t = timings.back();
            if (t.problem.empty())
                out.measurements.push_back(measurement(t, k_compile_routine));
            else
                compiled.reason = fmt::format("torch.compile on {}: {}", shape.label, t.problem);
        }
    }
    compiled.timed = compiled.reason.empty() && !m_task.bench.empty();
    if (!compiled.timed)
        std::erase_if(out.measurements, [](const Measurement& m) { return m.subject == k_compile_routine; });
    out.vendor.push_back(compiled);
    return out;
}

void CandidateRunner::warm_program_compile()
{
    if (!m_program)
        fail_runtime("internal: warm_program_compile needs a PyTorch-program task");
    for (const auto& shape : m_task.bench)
        if (std::string why = m_program->warm_compile(shape, m_workspace.input_seed(shape, 0)); !why.empty()) {
            log_debug("torch.compile not warmed ahead on {}: {}", shape.label, why);
            return; // the other shapes would not warm either; their compiles run as ever
        }
}

std::string CandidateRunner::check_program(const std::vector<const Shape*>& shapes)
{
    if (!m_program)
        fail_runtime("internal: check_program needs a PyTorch-program task");
    for (const Shape* each : shapes) {
        const Shape& shape = *each;
        m_workspace.prepare(shape, 0);
        m_workspace.reset_outputs(m_poison_counter++);
        m_workspace.write_program_outputs();
        if (auto wrong = compare_outputs(shape, 0, false, ""))
            return fmt::format("the program itself, in its own dtypes: {}", wrong->message);
    }
    return "";
}

} // namespace kforge
