// One variant through verification and timing; the order of the checks is in the header.
#include "evaluator/worker/runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "evaluator/worker/library_steps.hpp"
#include "evaluator/worker/vendor_baseline.hpp"
#include "util/hash.hpp"
#include "util/rng.hpp"

namespace kforge {

namespace {

Verdict make_verdict(VerdictKind kind, std::string message) { return Verdict{kind, std::move(message)}; }

std::string format_value(uint64_t bits, DType type)
{
    double v = kf_bits_to_value(bits, static_cast<int>(type));
    if (!dtype_is_float(type))
        return fmt::format("{}", dtype_is_signed(type) ? fmt::format("{}", static_cast<int64_t>(v)) : fmt::format("{}", bits));
    if (kf_is_nan(v))
        return "nan";
    return fmt::format("{:.9g}", v);
}

bool is_poison(uint64_t bits, DType type)
{
    switch (type) {
    case DType::f32: return bits == 0x7fbadbadu;
    case DType::f64: return bits == 0x7ff4dead7ff4deadULL;
    case DType::bf16:
    case DType::f16: return bits == 0x7fbd;
    default: return false;
    }
}

} // namespace

// A variant with its module loaded and its plan resolved for every shape it will meet.
struct CandidateRunner::Loaded {
    LoadedKernels kernels;
    const VariantRequest& request;
    std::map<std::string, ResolvedPlan, std::less<>> plans; // by shape label
    std::map<std::string, PlanSteps, std::less<>> steps;    // by shape label: plans with library steps
    const PlanSteps* steps_for(const std::string& label) const
    {
        auto it = steps.find(label);
        return it == steps.end() ? nullptr : &it->second;
    }
};

CandidateRunner::CandidateRunner(const Task& task, const GpuContext& context, const InternalKernels& kernels,
                                 Workspace& workspace, Timer& timer, const DevicePeaks& peaks,
                                 const LoadedKernels* reference, const Plan& reference_plan, ParamPoint reference_params,
                                 RangeProfiler& profiler, TorchReference* program)
    : m_task(task), m_context(context), m_kernels(kernels), m_workspace(workspace), m_timer(timer), m_peaks(peaks),
      m_reference(reference), m_reference_plan(reference_plan), m_reference_params(std::move(reference_params)),
      m_profiler(profiler), m_program(program)
{
}

VariantOutcome CandidateRunner::run(const VariantRequest& request)
{
    VariantOutcome outcome;
    std::vector<std::string> kernel_names = launched_kernels(request.plan);

    // Loading can fail for reasons that are the candidate's (a kernel the plan names but the code
    // lacks after preprocessing, too much static shared memory).
    std::optional<Loaded> loaded;
    try {
        loaded.emplace(Loaded{LoadedKernels(request.cubin, kernel_names), request, {}});
    } catch (const CudaError& e) {
        outcome.verdict = make_verdict(VerdictKind::runtime_error, fmt::format("the compiled code could not be loaded: {}", e.what()));
        outcome.restart_worker = e.sticky();
        return outcome;
    }
    for (const auto& [name, info] : loaded->kernels.all())
        outcome.resources[name] = Json{{"registers", info.registers},
                                       {"local_bytes_per_thread", info.local_bytes},
                                       {"static_smem_bytes", info.static_smem},
                                       {"const_bytes", info.const_bytes},
                                       {"max_threads_per_block", info.max_threads_per_block}};

    // Resolve every shape first: a plan that does not fit some shape is a plan error before any run.
    std::vector<const std::vector<Shape>*> lists{&m_task.tests, &m_task.stress, &m_task.bench};
    if (request.verify_held_out)
        lists.push_back(&m_task.held_out);
    try {
        for (const auto* list : lists) {
            for (const auto& shape : *list) {
                ResolvedPlan plan = resolve_plan(m_task, request.plan, shape, request.params);
                if (std::string problem = check_launch_limits(loaded->kernels, plan, m_context.facts()); !problem.empty()) {
                    outcome.verdict = make_verdict(VerdictKind::plan_error, fmt::format("{} (at {})", problem, shape.label));
                    return outcome;
                }
                loaded->plans.emplace(shape.label, std::move(plan));
            }
        }
    } catch (const PlanError& e) {
        outcome.verdict = make_verdict(VerdictKind::plan_error, e.what());
        return outcome;
    }
    // Library steps, prepared for every shape before any run: the library's choices are not timed,
    // and a step it cannot prepare (an algo index past its candidates) is a verdict at once.
    if (std::any_of(request.plan.launches.begin(), request.plan.launches.end(),
                    [](const PlanLaunch& launch) { return launch.library.has_value(); })) {
        Json chosen = Json::object();
        for (const auto& [label, plan] : loaded->plans) {
            PlanSteps steps(VendorLibrary::shared(), plan);
            if (auto failure = steps.failure()) {
                failure->message = fmt::format("{} (at {})", failure->message, label);
                outcome.verdict = *failure;
                return outcome;
            }
            chosen[label] = steps.chosen();
            loaded->steps.emplace(label, std::move(steps));
        }
        outcome.resources["library_steps"] = chosen;
    }
    // Occupancy on the largest bench shape (the one that matters most for speed); a library step's
    // kernels are the library's, so it shows as null.
    if (!m_task.bench.empty()) {
        const ResolvedPlan& plan = loaded->plans.at(m_task.bench.back().label);
        Json occupancy = Json::array();
        for (const auto& launch : plan.launches)
            occupancy.push_back(launch.library ? Json()
                                               : Json(theoretical_occupancy(loaded->kernels.info(launch.kernel), launch,
                                                                            m_context.facts())));
        outcome.resources["theoretical_occupancy"] = occupancy;
    }

    try {
        if (request.verify_tests) {
            std::vector<Shape> shapes = m_task.tests;
            shapes.insert(shapes.end(), m_task.stress.begin(), m_task.stress.end());
            if (auto failure = verify_shapes(*loaded, shapes, false, outcome, request.launch_deadline)) {
                outcome.verdict = *failure;
                return outcome;
            }
        }
        if (request.timing != TimingLevel::none) {
            for (const auto& shape : m_task.bench) {
                if (auto failure = time_shape(*loaded, shape, request.timing, outcome, request.launch_deadline)) {
                    outcome.verdict = *failure;
                    return outcome;
                }
            }
        }
        if (request.profile && !m_task.bench.empty()) // alone too, when the timing is known already
            profile_largest(*loaded, outcome);
        if (request.verify_held_out && !m_task.held_out.empty()) {
            if (auto failure = verify_shapes(*loaded, m_task.held_out, true, outcome, request.launch_deadline)) {
                outcome.verdict = *failure;
                return outcome;
            }
        }
    } catch (const CudaError& e) {
        outcome.verdict = make_verdict(VerdictKind::runtime_error, fmt::format("the kernel failed: {}", e.what()));
        outcome.restart_worker = e.sticky();
        return outcome;
    }
    outcome.verdict = make_verdict(VerdictKind::correct, "");
    return outcome;
}

std::optional<Verdict> CandidateRunner::verify_shapes(const Loaded& loaded, const std::vector<Shape>& shapes,
                                                      bool held_out, VariantOutcome& outcome,
                                                      std::chrono::milliseconds deadline)
{
    const auto& cu = driver();
    int runs = 0;
    for (const auto& shape : shapes) {
        // Trial 0, then trial 1 on other inputs, twice: every run must match the reference, and the
        // two runs of trial 1 are compared bit for bit (races and uninitialised reads differ there).
        if (auto failure = run_and_check(loaded, shape, 0, held_out, outcome, deadline))
            return failure;
        if (auto failure = run_and_check(loaded, shape, 1, held_out, outcome, deadline))
            return failure;
        std::map<std::string, DeviceMemory> first_run;
        for (auto& [name, data] : m_workspace.prepare_view()) {
            if (data.spec->intent == Intent::in)
                continue;
            DeviceMemory copy(data.bytes);
            KF_CU_CHECK(cu.cuMemcpyDtoDAsync(copy.get(), data.buffer.ptr(), data.bytes, m_context.stream()));
            first_run.emplace(name, std::move(copy));
        }
        if (auto failure = run_and_check(loaded, shape, 1, held_out, outcome, deadline))
            return failure;
        for (auto& [name, copy] : first_run) {
            const TensorData& data = m_workspace.prepare_view().at(name);
            CompareOutcome cmp = m_kernels.compare(data.buffer.ptr(), copy.get(), data.count,
                                                   static_cast<int>(data.spec->dtype), true, 0, 0);
            if (cmp.mismatches > 0) {
                outcome.notes["nondeterministic"].push_back(
                    Json{{"shape", shape.label}, {"output", name}, {"differing_elements", cmp.mismatches}});
            }
        }
        runs += 3;
    }
    outcome.notes[held_out ? "held_out_runs" : "verification_runs"] = runs;
    return std::nullopt;
}

std::optional<Verdict> CandidateRunner::compare_outputs(const Shape& shape, int trial, bool held_out,
                                                        const std::string& when)
{
    const auto& cu = driver();
    std::string where = fmt::format("on shape {}{}", shape.label, held_out ? " (a held-out shape)" : "");
    const ReferenceOutputs& ref = m_workspace.reference(shape, trial);
    for (auto& [name, data] : m_workspace.prepare_view()) {
        if (data.spec->intent == Intent::in)
            continue;
        auto [atol, rtol] = ref.tolerance.at(name);
        bool exact = data.spec->check->metric == CheckSpec::Metric::exact;
        int dtype = static_cast<int>(data.spec->dtype);
        CompareOutcome cmp =
            m_kernels.compare(data.buffer.ptr(), ref.outputs.at(name).get(), data.count, dtype, exact, atol, rtol);
        if (cmp.mismatches == 0)
            continue;
        size_t width = dtype_size(data.spec->dtype);
        uint64_t got = 0, expected = 0;
        KF_CU_CHECK(cu.cuMemcpyDtoH(&got, data.buffer.ptr() + cmp.first_index * width, width));
        KF_CU_CHECK(cu.cuMemcpyDtoH(&expected, ref.outputs.at(name).get() + cmp.first_index * width, width));
        std::string rule = exact ? "exact match required"
                                 : fmt::format("allowed |got - expected| <= {:.3g} + {:.3g}*|expected|", atol, rtol);
        std::string unwritten = is_poison(got, data.spec->dtype) ? " (never written: still kforge's NaN poison)" : "";
        return make_verdict(held_out ? VerdictKind::held_out_failed : VerdictKind::incorrect,
                            fmt::format("output '{}' is wrong {}{} (input set {}): {} of {} elements differ; first at "
                                        "{} (flat index {}): expected {}, got {}{}; largest finite error {:.3g}; {} "
                                        "NaN/inf where the reference is finite; {}",
                                        name, where, when, trial + 1, cmp.mismatches, data.count,
                                        format_index(cmp.first_index, data.dims), cmp.first_index,
                                        format_value(expected, data.spec->dtype), format_value(got, data.spec->dtype),
                                        unwritten, cmp.max_abs_error, cmp.not_finite, rule));
    }
    return std::nullopt;
}

CandidateRunner::Bound CandidateRunner::bind(const ResolvedPlan& plan)
{
    Bound bound;
    for (auto& [name, data] : m_workspace.prepare_view())
        bound.buffers[name] = data.buffer.ptr();
    for (const auto& s : plan.scratch) {
        bound.scratch.emplace_back(static_cast<size_t>(s.bytes), hash64(s.name, m_poison_counter), m_kernels);
        bound.buffers[s.name] = bound.scratch.back().ptr();
    }
    return bound;
}

void CandidateRunner::reset(Bound& bound)
{
    uint64_t poison = splitmix64(++m_poison_counter);
    m_workspace.reset_outputs(poison);
    // Scratch starts as garbage every run: a kernel must not rely on zeroed scratch.
    for (size_t i = 0; i < bound.scratch.size(); ++i)
        m_kernels.fill_pattern(bound.scratch[i].ptr(), bound.scratch[i].bytes(), poison + i);
}

std::optional<Verdict> CandidateRunner::check_after_run(const Shape& shape, int trial, const ResolvedPlan& plan,
                                                        Bound& bound, bool held_out)
{
    std::string where = fmt::format("on shape {}{}", shape.label, held_out ? " (a held-out shape)" : "");
    if (std::string problem = m_workspace.check_integrity(); !problem.empty())
        return make_verdict(VerdictKind::runtime_error, fmt::format("the kernel {} {}", problem, where));
    for (size_t i = 0; i < bound.scratch.size(); ++i)
        if (std::string problem = bound.scratch[i].check_guards(plan.scratch[i].name); !problem.empty())
            return make_verdict(VerdictKind::runtime_error, fmt::format("the kernel {} {}", problem, where));
    if (std::string problem = m_workspace.check_reference_integrity(shape, trial); !problem.empty())
        return make_verdict(VerdictKind::runtime_error, fmt::format("the kernel {} {}", problem, where));
    return std::nullopt;
}

std::optional<Verdict> CandidateRunner::run_and_check(const Loaded& loaded, const Shape& shape, int trial,
                                                      bool held_out, VariantOutcome& outcome,
                                                      std::chrono::milliseconds deadline, const std::string& when)
{
    const ResolvedPlan& plan = loaded.plans.at(shape.label);
    m_workspace.prepare(shape, trial);
    Bound bound = bind(plan);
    reset(bound);
    launch_plan(loaded.kernels, plan, bound.buffers, m_context.stream(), loaded.steps_for(shape.label));
    if (wait_for_stream(m_context.stream(), std::chrono::steady_clock::now() + deadline) == WaitStatus::timeout) {
        outcome.restart_worker = true;
        return make_verdict(VerdictKind::timeout,
                            fmt::format("the plan did not finish within {:.1f} s on shape {}{} (an infinite loop, a "
                                        "deadlock between blocks, or far too slow)",
                                        deadline.count() / 1000.0, shape.label, when));
    }
    if (auto failure = check_after_run(shape, trial, plan, bound, held_out))
        return failure;
    return compare_outputs(shape, trial, held_out, when);
}

TimingSubject CandidateRunner::subject_for(const std::string& label, const LoadedKernels& kernels,
                                           const ResolvedPlan& plan, Bound& bound, const PlanSteps* steps)
{
    TimingSubject subject;
    subject.label = label;
    subject.reset = [this, &bound] { reset(bound); };
    subject.launch = [this, &kernels, &plan, &bound, steps] {
        launch_plan(kernels, plan, bound.buffers, m_context.stream(), steps);
    };
    for (const auto& launch : plan.launches) {
        if (launch.library)
            ++subject.library_steps;
        else
            subject.kernel_names.push_back(launch.kernel);
    }
    return subject;
}

Measurement CandidateRunner::to_measurement(const SampleStats& stats, const Shape& shape, const std::string& subject,
                                            TimingLevel level) const
{
    Measurement m;
    m.shape_set = "bench";
    m.shape_label = shape.label;
    m.subject = subject;
    m.median_ns = stats.median_ns;
    m.q1_ns = stats.q1_ns;
    m.q3_ns = stats.q3_ns;
    m.min_ns = stats.min_ns;
    m.samples = static_cast<int>(stats.kept_ns.size());
    m.discarded = stats.discarded;
    m.sm_clock_mhz = stats.mean_clock_mhz;
    m.confirmed = level == TimingLevel::confirm;
    m.roofline_ns = roofline_at(m_task, shape, m_peaks).roofline_ns;
    return m;
}

TimingSettings timing_settings_for(TimingLevel level)
{
    switch (level) {
    case TimingLevel::sweep: return sweep_timing();
    case TimingLevel::confirm: return confirm_timing();
    default: return quick_timing();
    }
}

std::optional<Verdict> CandidateRunner::time_shape(const Loaded& loaded, const Shape& shape, TimingLevel level,
                                                   VariantOutcome& outcome, std::chrono::milliseconds deadline)
{
    const ResolvedPlan& plan = loaded.plans.at(shape.label);
    m_workspace.prepare(shape, 0);
    Bound bound = bind(plan);
    std::vector<TimingSubject> subjects{
        subject_for("candidate", loaded.kernels, plan, bound, loaded.steps_for(shape.label))};
    // Confirmation interleaves the reference kernel sample by sample, so both see the same clocks
    // (a PyTorch program is timed by its own process, with the session's baselines).
    std::optional<ResolvedPlan> ref_plan;
    Bound ref_bound;
    if (level == TimingLevel::confirm && m_reference) {
        ref_plan = resolve_plan(m_task, m_reference_plan, shape, m_reference_params);
        ref_bound = bind(*ref_plan);
        subjects.push_back(subject_for("reference", *m_reference, *ref_plan, ref_bound));
    }
    bool timed_out = false;
    std::vector<SampleStats> stats = m_timer.measure(subjects, timing_settings_for(level), deadline, timed_out);
    if (timed_out) {
        outcome.restart_worker = true;
        return make_verdict(VerdictKind::timeout, fmt::format("a timed run did not finish within {:.1f} s on shape {}",
                                                              deadline.count() / 1000.0, shape.label));
    }
    if (!stats[0].problem.empty())
        return make_verdict(VerdictKind::runtime_error, fmt::format("timing on shape {} is invalid: {}", shape.label, stats[0].problem));
    if (auto failure = check_after_run(shape, 0, plan, bound, false))
        return failure;
    // The output of the last timed run must still be right: defeats "compute only when watched".
    if (auto failure = compare_outputs(shape, 0, false, " after the timed runs"))
        return failure;
    // And on inputs never seen before: defeats results cached across launches.
    if (auto failure = run_and_check(loaded, shape, 1, false, outcome, deadline, " on fresh inputs after timing"))
        return failure;

    Measurement m = to_measurement(stats[0], shape, "candidate", level);
    RooflinePoint roof = roofline_at(m_task, shape, m_peaks);
    if (is_below_floor(m_task, roof, m.median_ns)) {
        // Faster than physics allows (roofline.hpp: the floor already grants the writes L2 absorbs):
        // check once more on new inputs and flag it, never celebrate it.
        m.below_roofline = true;
        if (auto failure = run_and_check(loaded, shape, 2, false, outcome, deadline, " (re-verified: faster than the roofline floor)"))
            return failure;
        outcome.notes["below_roofline"].push_back(Json{{"shape", shape.label},
                                                       {"median_ns", m.median_ns},
                                                       {"floor_ns", roof.floor_ns},
                                                       {"roofline_ns", roof.roofline_ns},
                                                       {"l2_absorbed_bytes", roof.l2_absorbed_bytes},
                                                       {"why", describe_below_floor(m.median_ns, roof)}});
    }
    outcome.measurements.push_back(m);
    if (level == TimingLevel::confirm && stats.size() > 1 && stats[1].problem.empty())
        outcome.measurements.push_back(to_measurement(stats[1], shape, "reference", level));
    return std::nullopt;
}

void CandidateRunner::profile_largest(const Loaded& loaded, VariantOutcome& outcome)
{
    const Shape& shape = m_task.bench.back();
    const ResolvedPlan& plan = loaded.plans.at(shape.label);
    m_workspace.prepare(shape, 0);
    Bound bound = bind(plan);
    std::string problem;
    auto values = m_profiler.profile(
        [&] {
            reset(bound);
            m_timer.enqueue_flush();
        },
        [&] { launch_plan(loaded.kernels, plan, bound.buffers, m_context.stream(), loaded.steps_for(shape.label)); },
        problem);
    if (!problem.empty()) {
        outcome.profile = Json{{"unavailable", problem}};
        return;
    }
    outcome.profile = Json{{"shape", shape.label}};
    for (const auto& [name, value] : values)
        outcome.profile[name] = value;
}

} // namespace kforge
