// `kforge eval TASK FILE.cu`: verify and time one candidate file, or only compile it.
//
// The full path runs the same evaluator the search uses, to the confirmation standard by default
// (the numbers a user quotes), and prints the verdict with its message, a per-shape table against
// the reference, the task's vendor baseline (when timed) and the roofline, and the metrics; a time
// below the roofline floor is flagged with the reason. `--compile-only --arch sm_90a` needs no GPU.
// `kforge eval RUN.kforge --candidate ID` re-measures a run's candidate (cmd_eval_candidate.cpp).
#include <algorithm>
#include <array>
#include <memory>

#include <fmt/format.h>

#include "cli/app.hpp"
#include "cli/eval_command.hpp"
#include "cli/option_checks.hpp"
#include "core/param_sweep.hpp"
#include "core/library_step.hpp"
#include "core/plan_check.hpp"
#include "core/source.hpp"
#include "evaluator/compile/compile.hpp"
#include "evaluator/compile/compile_record.hpp"
#include "evaluator/compile/launch_args.hpp"
#include "evaluator/evaluator.hpp"
#include "evaluator/worker/roofline.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/paths.hpp"
#include "util/text.hpp"
#include "util/text_table.hpp"

namespace kforge {
namespace {

int run_compile_only(const Task& task, const std::string& source, const EvalCommandOptions& options)
{
    std::string arch = options.arch.empty() ? "sm_90a" : options.arch;
    Json report{{"file", options.file}, {"task", task.name}, {"arch", arch}};
    auto fail_with = [&](const Verdict& verdict) {
        report["verdict"] = verdict_name(verdict.kind);
        report["message"] = verdict.message;
        if (options.json)
            fmt::print("{}\n", report.dump(2));
        else
            fmt::print("{}: {}\n{}\n", options.file, verdict_name(verdict.kind), verdict.message);
        return k_exit_negative;
    };
    Plan plan;
    ParamSweep sweep;
    std::vector<std::string> kernels;
    std::vector<std::pair<std::string, std::string>> steps; // bench shape, step
    try {
        plan = source_plan(task, source);
        validate_plan(task, plan, find_kernel_names(source));
        // The points a search would sweep, sample and all.
        sweep = sweep_param_points(plan, static_cast<size_t>(task.limits.max_param_points));
        for (const auto& shapes : {&task.tests, &task.bench, &task.held_out})
            for (const auto& shape : *shapes) {
                if (interrupt_requested())
                    fail(ErrorKind::interrupted, "interrupted");
                for (const auto& point : sweep.points)
                    resolve_plan(task, plan, shape, point);
            }
        // What each library step computes at the bench shapes, in numbers (first param point: the
        // sweep only changes its algorithm index), so a reader sees the call kforge will make.
        for (const auto& shape : task.bench)
            for (const auto& launch : resolve_plan(task, plan, shape, sweep.points.front()).launches)
                if (launch.library)
                    steps.push_back({shape.label, describe_library_step(*launch.library)});
    } catch (const PlanError& e) {
        return fail_with(Verdict{VerdictKind::plan_error, e.what()});
    }
    for (const auto& kernel : launched_kernels(plan))
        if (std::find(kernels.begin(), kernels.end(), kernel) == kernels.end())
            kernels.push_back(kernel);
    if (auto refused = screen_source(task, source, kernels))
        return fail_with(*refused);

    CompilePoolConfig pool_config;
    pool_config.cache_dir = cache_dir() / "cubin";
    CompilePool pool(pool_config);
    TextTable table({{"params"}, {"kernel"}, {"registers", TextTable::Align::right},
                     {"spill st/ld B", TextTable::Align::right}, {"smem B", TextTable::Align::right},
                     {"compile", TextTable::Align::right}});
    Json variants = Json::array();
    bool all_ok = true;
    for (const auto& point : sweep.points) {
        if (interrupt_requested())
            fail(ErrorKind::interrupted, "interrupted");
        CompileRequest request;
        request.source = source;
        request.arch = arch;
        request.params = params_for_compile(source, point);
        request.kernels = kernels;
        CompileResult result = pool.compile(request);
        if (std::string mismatch = check_launch_arguments(task, plan, result); !mismatch.empty())
            return fail_with(Verdict{VerdictKind::plan_error,
                                     point.empty() ? mismatch
                                                   : fmt::format("with {}: {}", describe_param_point(point), mismatch)});
        Json entry{{"params", describe_param_point(point)}, {"ok", result.ok}, {"seconds", result.seconds},
                   {"cache_hit", result.cache_hit}};
        if (!result.ok) {
            all_ok = false;
            entry["message"] = result.message;
            if (!options.json)
                fmt::print("{} with {}: {}\n{}\n", options.file, describe_param_point(point),
                           verdict_name(result.failure), result.message);
        }
        Json resources = kernel_resources_metrics(result.resources, Json());
        for (const auto& k : result.resources) {
            // Without a ptxas report (resources read from the CUBIN) spills are unknown: the stack
            // frame, which includes them, is shown instead.
            std::string spills = k.from_cubin ? fmt::format("? ({} B stack)", k.stack_frame_bytes)
                                              : fmt::format("{}/{}", k.spill_store_bytes, k.spill_load_bytes);
            table.add_row({describe_param_point(point), k.kernel, std::to_string(k.registers), spills,
                           std::to_string(k.static_smem_bytes),
                           result.cache_hit ? "cached" : fmt::format("{:.0f} ms", result.seconds * 1e3)});
        }
        entry["resources"] = resources;
        variants.push_back(entry);
    }
    report["verdict"] = all_ok ? "compiled" : "compile_error";
    report["variants"] = variants;
    report["param_points"] = sweep.to_json();
    Json step_report = Json::array();
    for (const auto& [shape, step] : steps)
        step_report.push_back({{"shape", shape}, {"step", step}});
    report["library_steps"] = step_report;
    if (options.json) {
        fmt::print("{}\n", report.dump(2));
    } else {
        fmt::print("{}: {} for {} ({} param point{}; not run: --compile-only)\n", options.file,
                   all_ok ? "compiles" : "does not compile", arch, variants.size(), variants.size() == 1 ? "" : "s");
        if (sweep.sampled())
            fmt::print("{}\n", sweep.describe());
        fmt::print("{}", table.render());
        for (const auto& [shape, step] : steps)
            fmt::print("library step at {}: {}\n", shape, step);
    }
    return all_ok ? k_exit_ok : k_exit_negative;
}

} // namespace

EvalRun evaluate_source(const Task& task, const std::string& source, const EvalCommandOptions& options)
{
    EvaluatorConfig config;
    config.arch = options.arch;
    config.cache_dir = cache_dir() / "cubin";
    config.run_secret = options.secret;
    config.launch_deadline = std::chrono::milliseconds(static_cast<int64_t>(options.deadline_s * 1000));
    auto evaluator = make_gpu_evaluator(task, config);
    EvalJob job;
    job.ticket = 1;
    job.source = source;
    job.options.confirm = !options.quick;
    job.options.held_out = options.held_out;
    job.options.profile = options.profile;
    evaluator->submit(job);
    std::vector<EvalResult> results;
    while (results.empty())
        results = evaluator->collect(std::chrono::seconds(1));
    EvalRun run;
    run.evaluation = std::move(results.front().evaluation);
    run.environment = evaluator->environment();
    run.baselines = evaluator->baselines();
    run.vendor = evaluator->vendor_baselines();
    return run;
}

int print_evaluation(const Task& task, const EvalRun& run, const EvalCommandOptions& options, const Json& extra)
{
    const Evaluation& evaluation = run.evaluation;
    const Json& environment = run.environment;
    DevicePeaks peaks = DevicePeaks::from_json(environment.value("peaks", Json::object()));
    const std::vector<Measurement>& baselines = run.baselines;
    // The vendor column: the first of the task's vendor routines that was timed.
    const std::vector<VendorBaselineStatus>& vendor_statuses = run.vendor;
    auto vendor_timed = std::find_if(vendor_statuses.begin(), vendor_statuses.end(),
                                     [](const VendorBaselineStatus& v) { return v.timed; });
    std::string vendor_subject = vendor_timed == vendor_statuses.end() ? "" : vendor_timed->routine;

    Json shapes = Json::array();
    std::vector<std::string> flagged;
    TextTable table({{"shape"}, {"median", TextTable::Align::right}, {"IQR", TextTable::Align::right},
                     {"samples", TextTable::Align::right},
                     {baseline_label(task.reference_kind, "reference"), TextTable::Align::right},
                     {"speedup", TextTable::Align::right},
                     {vendor_subject.empty()                ? "vendor"
                      : vendor_subject == "torch_compile" ? baseline_label(task.reference_kind, vendor_subject)
                                                          : vendor_timed->library,
                      TextTable::Align::right},
                     {"vs vendor", TextTable::Align::right}, {"% roofline", TextTable::Align::right},
                     {"% measured BW roofline", TextTable::Align::right}});
    for (const auto& m : evaluation.measurements) {
        if (m.subject != "candidate")
            continue;
        const Measurement* ref = nullptr;
        for (const std::vector<Measurement>* candidates : std::array<const std::vector<Measurement>*, 2>{&evaluation.measurements, &baselines})
            for (const auto& b : *candidates)
                if (!ref && b.subject == "reference" && b.shape_label == m.shape_label)
                    ref = &b;
        const Shape* shape = nullptr;
        for (const auto& s : task.bench)
            if (s.label == m.shape_label)
                shape = &s;
        RooflinePoint roof = shape ? roofline_at(task, *shape, peaks) : RooflinePoint{};
        if (m.below_roofline)
            flagged.push_back(fmt::format("{}: {}", m.shape_label, describe_below_floor(m.median_ns, roof)));
        double speedup = ref && m.median_ns > 0 ? ref->median_ns / m.median_ns : 0;
        auto vendor = std::find_if(baselines.begin(), baselines.end(), [&](const Measurement& b) {
            return !vendor_subject.empty() && b.subject == vendor_subject && b.shape_label == m.shape_label;
        });
        double vendor_ns = vendor == baselines.end() ? 0 : vendor->median_ns;
        double vendor_speedup = vendor_ns > 0 && m.median_ns > 0 ? vendor_ns / m.median_ns : 0;
        shapes.push_back(Json{{"shape", m.shape_label}, {"median_ns", m.median_ns}, {"q1_ns", m.q1_ns},
                              {"q3_ns", m.q3_ns}, {"samples", m.samples}, {"discarded", m.discarded},
                              {"sm_clock_mhz", m.sm_clock_mhz}, {"reference_ns", ref ? ref->median_ns : 0},
                              {"speedup", speedup}, {"vendor_subject", vendor_subject}, {"vendor_ns", vendor_ns},
                              {"vendor_speedup", vendor_speedup}, {"roofline_ns", roof.roofline_ns},
                              {"floor_ns", roof.floor_ns}, {"l2_absorbed_bytes", roof.l2_absorbed_bytes},
                              {"roofline_fraction", m.median_ns > 0 ? roof.roofline_ns / m.median_ns : 0},
                              {"measured_roofline_fraction", m.median_ns > 0 ? roof.measured_roofline_ns / m.median_ns : 0},
                              {"below_roofline", m.below_roofline}});
        table.add_row({m.shape_label, format_duration_ns(m.median_ns), format_duration_ns(m.q3_ns - m.q1_ns),
                       std::to_string(m.samples), ref ? format_duration_ns(ref->median_ns) : "-",
                       speedup > 0 ? fmt::format("{:.2f}x", speedup) : "-",
                       vendor_ns > 0 ? format_duration_ns(vendor_ns) : "-",
                       vendor_speedup > 0 ? fmt::format("{:.2f}x", vendor_speedup) : "-",
                       m.median_ns > 0 ? fmt::format("{:.1f}%", 100 * roof.roofline_ns / m.median_ns) : "-",
                       m.median_ns > 0 ? fmt::format("{:.1f}%", 100 * roof.measured_roofline_ns / m.median_ns) : "-"});
    }
    Json report{{"file", options.file},
                {"flagged", flagged},
                {"task", task.name},
                {"verdict", verdict_name(evaluation.verdict.kind)},
                {"message", evaluation.verdict.message},
                {"fitness", evaluation.fitness ? Json(*evaluation.fitness) : Json()},
                {"params", evaluation.best_params},
                {"shapes", shapes},
                {"baseline", evaluation.metrics.value("baseline", Json::object())},
                {"descriptors", evaluation.descriptors},
                {"metrics", evaluation.metrics},
                {"environment", environment},
                {"eval_seconds", evaluation.eval_seconds}};
    for (const auto& [key, value] : extra.items())
        report[key] = value;
    if (options.json) {
        fmt::print("{}\n", report.dump(2));
    } else {
        fmt::print("{}: {}\n", options.file, verdict_name(evaluation.verdict.kind));
        if (!evaluation.verdict.message.empty())
            fmt::print("{}\n", evaluation.verdict.message);
        if (evaluation.fitness)
            fmt::print("fitness (geomean speedup over the reference): {:.3f}x with {}\n", *evaluation.fitness,
                       describe_param_point(evaluation.best_params));
        if (const Json& sweep = evaluation.metrics.value("param_points", Json()); sweep.is_object())
            fmt::print("{}\n", sweep.value("note", ""));
        if (!table.empty())
            fmt::print("{}", table.render());
        if (!flagged.empty()) {
            fmt::print("FLAGGED: faster than the roofline floor (a search records it but does not count it):\n");
            for (const auto& line : flagged)
                fmt::print("  {}\n", line);
        }
        for (const auto& status : vendor_statuses)
            fmt::print("vendor baseline {} ({}): {}\n", status.routine, status.library,
                       status.timed ? "timed on every bench shape" : "unavailable, speedups are vs the reference: " + status.reason);
        if (evaluation.metrics.contains("profile")) {
            const Json& profile = evaluation.metrics["profile"];
            if (profile.contains("unavailable"))
                fmt::print("profile: unavailable ({})\n", profile["unavailable"].get<std::string>());
            else
                fmt::print("profile on {}: {}\n", profile.value("shape", "?"), profile.dump());
        }
        if (!evaluation.descriptors.empty())
            fmt::print("descriptors: {}\n", evaluation.descriptors.dump());
        fmt::print("device: {} ({}), {} timing, evaluated in {:.1f} s\n",
                   environment["device"].value("name", "?"), environment.value("arch", "?"),
                   options.quick ? "quick" : "confirmed", evaluation.eval_seconds);
        if (extra.contains("acceptance"))
            fmt::print("{}\n", extra["acceptance"].value("message", ""));
    }
    return evaluation.verdict.is_correct() ? k_exit_ok : k_exit_negative;
}

namespace {


int run_eval(const EvalCommandOptions& options)
{
    if (options.candidate)
        return run_eval_candidate(options);
    if (options.accept)
        fail(ErrorKind::usage, "--accept takes a run's candidate: kforge eval RUN.kforge --candidate ID --held-out --accept");
    if (options.file.empty())
        fail(ErrorKind::usage, "kforge eval needs TASK and FILE (or RUN.kforge --candidate ID)");
    Task task = load_task(options.task_path);
    std::string source = read_file(options.file, k_max_source_bytes, "candidate source");
    if (options.compile_only)
        return run_compile_only(task, source, options);
    return print_evaluation(task, evaluate_source(task, source, options), options, Json::object());
}

} // namespace

void add_eval_command(CLI::App& app, CommandSlot& slot)
{
    auto options = std::make_shared<EvalCommandOptions>();
    auto* eval = app.add_subcommand("eval", "verify and time one candidate file against a task");
    eval->add_option("TASK", options->task_path, "task spec (JSON); with --candidate, a run archive (.kforge)")->required();
    eval->add_option("FILE", options->file, "candidate CUDA source (.cu) with a kforge:plan block (not with --candidate)");
    auto* candidate = eval->add_option("--candidate", options->candidate_id,
                                       "re-measure candidate ID of the run archive TASK, against the run's own task")
                          ->check(whole_number(1, INT64_MAX));
    eval->add_flag("--accept", options->accept,
                   "with --candidate and --held-out: a candidate the run flagged as faster than the roofline floor "
                   "counts from now on when the re-measurement is correct");
    eval->add_flag("--compile-only", options->compile_only, "only screen and compile (no GPU needed)");
    eval->add_option("--arch", options->arch, "target arch, e.g. sm_90a (default: the GPU's; sm_90a with --compile-only)")
        ->check(gpu_arch());
    eval->add_flag("--quick", options->quick, "quick-screen timing instead of the confirmation standard");
    eval->add_flag("--held-out", options->held_out, "also verify on the task's held-out shapes");
    eval->add_flag("--profile", options->profile, "collect hardware metrics (CUPTI range profiler) on the largest bench shape");
    eval->add_flag("--json", options->json, "print the result as JSON on stdout");
    eval->add_option("--secret", options->secret, "secret mixed into the input seeds (default 0)")->check(unsigned_number());
    eval->add_option("--deadline", options->deadline_s, "seconds one run of the plan may take before it is killed")
        ->check(real_number(0, 3600, true))
        ->capture_default_str();
    eval->callback([options, candidate, &slot] {
        if (candidate->count() > 0)
            options->candidate = options->candidate_id;
        slot = [options] { return run_eval(*options); };
    });
}

} // namespace kforge
