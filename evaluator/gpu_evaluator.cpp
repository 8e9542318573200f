// The GPU evaluator: a steady-state pipeline from source to Evaluation.
//
// Stage 1 (several "prepare" threads, one per compile worker): plan extraction and validation,
// source screening, and NVRTC compiles of every param point through the CompilePool. Stage 2 (one
// thread that owns the GPU worker): each variant is verified and screen-timed; the best correct one
// is timed again to the requested standard (quick, or confirmation interleaved with the reference),
// optionally checked on held-out shapes; fitness, descriptors and metrics are assembled. While the
// GPU works on one candidate, the next ones compile, so the GPU never waits on the compiler when
// work is queued. Every variant run goes through the measurement memo (measurement_memo.hpp), so a
// point measured before is not measured again; waiting jobs are taken lowest ticket first, also
// between a sweep's variants. Every failure on the way is a verdict in the result, never an
// exception.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/plan_check.hpp"
#include "core/source.hpp"
#include "evaluator/compile.hpp"
#include "evaluator/compile_record.hpp"
#include "evaluator/describe.hpp"
#include "evaluator/device_facts.hpp"
#include "evaluator/evaluator.hpp"
#include "evaluator/gpu_client.hpp"
#include "evaluator/measurement_memo.hpp"
#include "evaluator/worker_protocol.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

using Clock = std::chrono::steady_clock;

struct Variant {
    ParamPoint params;
    CompileResult compiled;
    std::string memo_key;                 // MeasurementMemo::key_for (empty when it did not compile)
    Json origin;                          // the job, as reuses of its measurements cite it
};

struct Prepared {
    EvalJob job;
    Clock::time_point started;
    std::optional<Verdict> early_failure; // no_code, plan_error or compile_error before the GPU
    Plan plan;
    std::vector<Variant> variants;
};

// Geomean over the candidate's bench measurements of baseline time / candidate time, the baseline
// being `subject` ("reference" or a vendor routine); 0 when a shape lacks that baseline.
double geomean_speedup(const std::vector<Measurement>& candidate, const std::vector<Measurement>& baseline,
                       const std::string& subject = "reference")
{
    double log_sum = 0;
    int count = 0;
    for (const auto& m : candidate) {
        if (m.subject != "candidate" || m.shape_set != "bench" || m.median_ns <= 0)
            continue;
        auto ref = std::find_if(baseline.begin(), baseline.end(), [&](const Measurement& b) {
            return b.subject == subject && b.shape_label == m.shape_label && b.median_ns > 0;
        });
        if (ref == baseline.end())
            return 0;
        log_sum += std::log(ref->median_ns / m.median_ns);
        ++count;
    }
    return count ? std::exp(log_sum / count) : 0;
}

// Waiting jobs are served lowest ticket first: callers number jobs in the order they need them (the
// search records in order), so the job holding everything up never waits behind later ones.
uint64_t ticket_of(const EvalJob& job) { return job.ticket; }
uint64_t ticket_of(const Prepared& prepared) { return prepared.job.ticket; }

template <typename Queue>
auto lowest_ticket(Queue& queue)
{
    return std::min_element(queue.begin(), queue.end(),
                            [](const auto& a, const auto& b) { return ticket_of(a) < ticket_of(b); });
}

template <typename Queue>
auto take_lowest_ticket(Queue& queue)
{
    auto lowest = lowest_ticket(queue);
    auto taken = std::move(*lowest);
    queue.erase(lowest);
    return taken;
}

class GpuEvaluator final : public CandidateEvaluator
{
public:
    GpuEvaluator(const Task& task, const EvaluatorConfig& config);
    ~GpuEvaluator() override;

    void submit(EvalJob job) override;
    std::vector<EvalResult> collect(std::chrono::milliseconds wait) override;
    size_t pending() const override;
    double gpu_busy_fraction() const override;
    Json environment() const override { return m_environment; }
    std::vector<Measurement> baselines() const override { return m_baselines; }
    std::vector<VendorBaselineStatus> vendor_baselines() const override { return m_vendor; }
    std::string activity() const override;

private:
    void prepare_loop();
    void gpu_loop();
    void process(Prepared& prepared);
    void serve_earlier_jobs(uint64_t ticket);
    Prepared prepare(EvalJob job);
    Evaluation evaluate(Prepared& prepared);
    VariantResult run_variant(const Variant& variant, const Plan& plan, bool verify_tests, const std::string& timing,
                              bool held_out, bool profile = false);
    VariantResult measure_variant(const Variant& variant, const Plan& plan, const VariantAsk& ask);
    void finish(uint64_t ticket, Evaluation evaluation);
    void time_baselines();
    Json baseline_summary(const Evaluation& evaluation) const;

    const Task& m_task;
    EvaluatorConfig m_config;
    DeviceFacts m_facts;
    std::string m_arch;
    Json m_environment;
    std::vector<Measurement> m_baselines;
    std::vector<VendorBaselineStatus> m_vendor;
    Json m_vendor_library = Json::object();
    std::unique_ptr<CompilePool> m_pool;
    GpuWorkerClient m_worker;
    MeasurementMemo m_memo;

    mutable std::mutex m_mutex;
    std::condition_variable m_work_ready;
    std::condition_variable m_done_ready;
    std::deque<EvalJob> m_incoming;
    std::deque<Prepared> m_compiled;
    std::vector<EvalResult> m_done;
    size_t m_pending = 0;
    bool m_stopping = false;
    std::vector<std::thread> m_threads;

    Clock::time_point m_created = Clock::now();
    std::atomic<int64_t> m_gpu_busy_ns{0};
    std::atomic<int64_t> m_compiling{0};  // param points being compiled now
};

GpuEvaluator::GpuEvaluator(const Task& task, const EvaluatorConfig& config)
    : m_task(task), m_config(config), m_worker(config.worker_executable, ""), m_memo(config.reuse_measurements)
{
    if (task.spec_path.empty())
        fail_runtime("internal: the GPU evaluator needs a task loaded from a file");
    WorkerReply device = m_worker.request(Json{{"op", "device"}}, std::chrono::seconds(60));
    if (device.failure != WorkerFailure::none)
        fail_runtime("the GPU worker could not start: {}", device.failure_message);
    if (!device.body.value("ok", false))
        fail_runtime("{}", device.body.value("error", "no NVIDIA driver/GPU found"));
    m_facts = DeviceFacts::from_json(device.body.at("device"));
    m_arch = config.arch.empty() ? m_facts.arch() : config.arch;

    Json setup{{"op", "setup"},
               {"task_path", std::filesystem::absolute(task.spec_path).string()},
               {"run_secret", config.run_secret},
               {"cache_dir", config.cache_dir.string()}};
    if (std::string problem = m_worker.set_setup(setup, std::chrono::minutes(10)); !problem.empty())
        fail_runtime("the GPU worker could not set up task '{}': {}", task.name, problem);

    const Json& ready = m_worker.setup_reply();
    log_info("GPU worker set up in {:.1f} s (internal kernels {:.1f} s, reference compile {:.1f} s); timing the "
             "baselines of {} (the reference{}, to the confirmation standard)",
             ready.value("setup_seconds", 0.0), ready.value("internal_compile_seconds", 0.0),
             ready.value("reference_compile_seconds", 0.0), task.name,
             config.time_vendor_baselines && !task.vendor_baselines.empty() ? " and vendor routines" : "");
    auto baselines_started = Clock::now();
    time_baselines();
    log_info("baselines timed in {:.1f} s", std::chrono::duration<double>(Clock::now() - baselines_started).count());
    // The reference evaluated as a candidate is the binary just timed: its timing is not taken again.
    if (std::string hash = ready.value("reference_behaviour_hash", ""); !hash.empty())
        m_memo.record_reference_timing(MeasurementMemo::key_for_behaviour(hash, task.reference.plan.json,
                                                                          enumerate_param_points(task.reference.plan, 1).front()),
                                       m_baselines);

    CompilePoolConfig pool;
    pool.workers = config.compile_workers;
    pool.deadline = config.compile_deadline;
    pool.cache_dir = config.cache_dir.empty() ? std::filesystem::path() : config.cache_dir;
    pool.worker_executable = config.worker_executable;
    m_pool = std::make_unique<CompilePool>(pool);

    const Json& setup_reply = m_worker.setup_reply();
    Json vendor_json = Json::array();
    for (const auto& status : m_vendor)
        vendor_json.push_back(vendor_status_to_json(status));
    m_environment = Json{{"device", m_facts.to_json()},
                         {"arch", m_arch},
                         {"nvrtc", nvrtc_version()},
                         {"peaks", setup_reply.value("peaks", Json::object())},
                         {"compile_workers", m_pool->workers()},
                         {"launch_deadline_ms", config.launch_deadline.count()},
                         {"vendor_baselines", vendor_json},
                         {"vendor_library", m_vendor_library},
                         {"timing", Json{{"method", "CUPTI activity kernel spans, L2 flushed per sample, median"},
                                         {"flush_bytes", std::max<int64_t>(int64_t{256} << 20, 4LL * m_facts.l2_bytes)}}}};

    size_t preparers = std::max<size_t>(1, m_pool->workers());
    for (size_t i = 0; i < preparers; ++i)
        m_threads.emplace_back([this] { prepare_loop(); });
    m_threads.emplace_back([this] { gpu_loop(); });
}

// Baselines are timed once, to the confirmation standard, before any candidate: the reference and
// the task's vendor routines interleaved. Should that fail because of a vendor routine (it faulted
// and took the worker with it), the reference is timed again alone and the routines are reported
// unavailable with the failure.
void GpuEvaluator::time_baselines()
{
    auto request = [&](bool vendor) {
        return m_worker.request(Json{{"op", "time_reference"}, {"level", "confirm"}, {"deadline_ms", 60000}, {"vendor", vendor}},
                                std::chrono::minutes(10));
    };
    auto failure_of = [](const WorkerReply& reply) {
        if (reply.failure != WorkerFailure::none)
            return reply.failure_message;
        return reply.body.value("ok", false) ? std::string() : reply.body.value("error", std::string("unknown error"));
    };
    bool vendor = m_config.time_vendor_baselines && !m_task.vendor_baselines.empty();
    WorkerReply reply = request(vendor);
    std::string failure = failure_of(reply);
    std::string vendor_failure;
    if (!failure.empty() && vendor) {
        log_warn("timing the vendor baselines of '{}' failed ({}); timing the reference alone", m_task.name, failure);
        vendor_failure = failure;
        reply = request(false);
        failure = failure_of(reply);
    }
    if (!failure.empty())
        fail_runtime("timing the reference of '{}' failed: {}", m_task.name, failure);
    for (const auto& m : reply.body.at("measurements"))
        m_baselines.push_back(measurement_from_json(m));
    m_vendor_library = reply.body.value("vendor_library", Json::object());
    for (const auto& status : reply.body.value("vendor", Json::array()))
        m_vendor.push_back(vendor_status_from_json(status));
    for (auto& status : m_vendor) {
        if (!vendor_failure.empty())
            status.reason = "timing the vendor baselines failed: " + vendor_failure;
        else if (!m_config.time_vendor_baselines)
            status.reason = "vendor baselines are switched off for this run";
        if (status.timed)
            log_info("baseline {} ({}) timed on every bench shape", status.routine, status.library);
        else
            log_warn("vendor baseline {} is unavailable; speedups are against the reference only: {}", status.routine,
                     status.reason);
    }
}

// What a candidate's speedup is measured against: the first vendor routine that was timed, else
// the reference (the fallback when the library is missing or disagreed).
Json GpuEvaluator::baseline_summary(const Evaluation& evaluation) const
{
    Json unavailable = Json::array();
    for (const auto& status : m_vendor) {
        if (!status.timed) {
            unavailable.push_back(vendor_status_to_json(status));
            continue;
        }
        double speedup = geomean_speedup(evaluation.measurements, m_baselines, status.routine);
        if (speedup > 0)
            return Json{{"subject", status.routine}, {"library", status.library}, {"speedup", speedup},
                        {"unavailable", unavailable}};
    }
    return Json{{"subject", "reference"}, {"library", ""}, {"speedup", evaluation.fitness.value_or(0.0)},
                {"unavailable", unavailable}};
}

GpuEvaluator::~GpuEvaluator()
{
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_work_ready.notify_all();
    for (auto& thread : m_threads)
        thread.join();
    m_worker.stop();
}

void GpuEvaluator::submit(EvalJob job)
{
    {
        std::lock_guard lock(m_mutex);
        m_incoming.push_back(std::move(job));
        ++m_pending;
    }
    m_work_ready.notify_all();
}

std::vector<EvalResult> GpuEvaluator::collect(std::chrono::milliseconds wait)
{
    std::unique_lock lock(m_mutex);
    m_done_ready.wait_for(lock, wait, [this] { return !m_done.empty() || m_pending == 0; });
    std::vector<EvalResult> out;
    out.swap(m_done);
    return out;
}

size_t GpuEvaluator::pending() const
{
    std::lock_guard lock(m_mutex);
    return m_pending;
}

double GpuEvaluator::gpu_busy_fraction() const
{
    double wall = std::chrono::duration<double>(Clock::now() - m_created).count();
    return wall > 0 ? static_cast<double>(m_gpu_busy_ns.load()) * 1e-9 / wall : 0;
}

void GpuEvaluator::finish(uint64_t ticket, Evaluation evaluation)
{
    {
        std::lock_guard lock(m_mutex);
        m_done.push_back(EvalResult{ticket, std::move(evaluation)});
        --m_pending;
    }
    m_done_ready.notify_all();
}

void GpuEvaluator::prepare_loop()
{
    for (;;) {
        EvalJob job;
        {
            std::unique_lock lock(m_mutex);
            m_work_ready.wait(lock, [this] { return m_stopping || !m_incoming.empty(); });
            if (m_stopping)
                return;
            job = take_lowest_ticket(m_incoming);
        }
        Prepared prepared = prepare(std::move(job));
        {
            std::lock_guard lock(m_mutex);
            m_compiled.push_back(std::move(prepared));
        }
        m_work_ready.notify_all();
    }
}

Prepared GpuEvaluator::prepare(EvalJob job)
{
    Prepared prepared;
    prepared.started = Clock::now();
    prepared.job = std::move(job);
    const std::string& source = prepared.job.source;
    try {
        std::optional<Json> plan_json = extract_plan_json(source);
        if (plan_json)
            prepared.plan = parse_plan(*plan_json, "plan");
        else if (m_task.default_plan)
            prepared.plan = *m_task.default_plan;
        else
            throw PlanError("the source has no kforge:plan block and the task has no default plan");
        validate_plan(m_task, prepared.plan, find_kernel_names(source));
    } catch (const PlanError& e) {
        prepared.early_failure = Verdict{VerdictKind::plan_error, e.what()};
        return prepared;
    }
    std::vector<std::string> kernels;
    for (const auto& launch : prepared.plan.launches)
        if (std::find(kernels.begin(), kernels.end(), launch.kernel) == kernels.end())
            kernels.push_back(launch.kernel);
    Task unbound;
    if (prepared.job.options.task_code) {
        unbound = m_task;
        unbound.forbid.clear();
    }
    if (auto refused = screen_source(prepared.job.options.task_code ? unbound : m_task, source, kernels)) {
        prepared.early_failure = *refused;
        return prepared;
    }
    std::vector<ParamPoint> points;
    if (prepared.job.options.only_params)
        points.push_back(*prepared.job.options.only_params);
    else
        points = enumerate_param_points(prepared.plan, static_cast<size_t>(m_task.limits.max_param_points));
    std::vector<std::future<CompileResult>> futures;
    for (const auto& point : points) {
        CompileRequest request;
        request.source = source;
        request.arch = m_arch;
        request.params = point;
        request.kernels = kernels;
        ++m_compiling;
        futures.push_back(std::async(std::launch::async, [this, request] { return m_pool->compile(request); }));
    }
    Json origin{{"ticket", prepared.job.ticket}};
    if (!prepared.job.label.empty())
        origin["label"] = prepared.job.label;
    for (size_t i = 0; i < points.size(); ++i) {
        Variant variant{points[i], futures[i].get(), "", origin};
        --m_compiling;
        if (variant.compiled.ok)
            variant.memo_key = MeasurementMemo::key_for(variant.compiled.cubin, prepared.plan.json, variant.params);
        prepared.variants.push_back(std::move(variant));
    }
    return prepared;
}

void GpuEvaluator::gpu_loop()
{
    for (;;) {
        Prepared prepared;
        {
            std::unique_lock lock(m_mutex);
            m_work_ready.wait(lock, [this] { return m_stopping || !m_compiled.empty(); });
            if (m_stopping)
                return;
            prepared = take_lowest_ticket(m_compiled);
        }
        process(prepared);
    }
}

// Runs any job with a lower ticket that became ready meanwhile (a confirmation of the item the
// caller is waiting to record, say) before the next variant of a sweep.
void GpuEvaluator::serve_earlier_jobs(uint64_t ticket)
{
    for (;;) {
        Prepared earlier;
        {
            std::lock_guard lock(m_mutex);
            if (m_stopping || m_compiled.empty() || lowest_ticket(m_compiled)->job.ticket >= ticket)
                return;
            earlier = take_lowest_ticket(m_compiled);
        }
        process(earlier);
    }
}

void GpuEvaluator::process(Prepared& prepared)
{
    Evaluation evaluation;
    try {
        evaluation = evaluate(prepared);
    } catch (const std::exception& e) {
        // The per-candidate wrapper: nothing a candidate does may stop the pipeline.
        evaluation.verdict = Verdict{VerdictKind::runtime_error, fmt::format("kforge could not evaluate this "
                                                                             "candidate: {}", e.what())};
    }
    evaluation.eval_seconds = std::chrono::duration<double>(Clock::now() - prepared.started).count();
    finish(prepared.job.ticket, std::move(evaluation));
}

std::string GpuEvaluator::activity() const
{
    size_t waiting = 0, queued = 0;
    {
        std::lock_guard lock(m_mutex);
        waiting = m_compiled.size();
        queued = m_incoming.size();
    }
    std::vector<std::string> parts;
    if (int64_t compiling = m_compiling.load(); compiling > 0)
        parts.push_back(fmt::format("compiling {} variant{}", compiling, compiling == 1 ? "" : "s"));
    if (queued > 0)
        parts.push_back(fmt::format("{} job{} waiting to compile", queued, queued == 1 ? "" : "s"));
    if (waiting > 0)
        parts.push_back(fmt::format("{} job{} waiting for the GPU", waiting, waiting == 1 ? "" : "s"));
    return join(parts, ", ");
}

// Every run goes through the measurement memo, which answers what earlier runs of the same point
// already established and sends the rest to the worker (measure_variant).
VariantResult GpuEvaluator::run_variant(const Variant& variant, const Plan& plan, bool verify_tests,
                                        const std::string& timing, bool held_out, bool profile)
{
    VariantAsk ask{verify_tests, parse_timing_standard(timing).value_or(TimingStandard::quick), held_out, profile};
    VariantResult result = m_memo.run(variant.memo_key, ask, variant.origin,
                                      [&](const VariantAsk& left) { return measure_variant(variant, plan, left); });
    result.params = variant.params;
    return result;
}

VariantResult GpuEvaluator::measure_variant(const Variant& variant, const Plan& plan, const VariantAsk& ask)
{
    VariantResult result;
    result.params = variant.params;
    result.from_worker = false;
    Json params = Json::object();
    for (const auto& [name, value] : variant.params)
        params[name] = value;
    Json request{{"op", "run_variant"},
                 {"cubin", Json::binary(std::vector<std::uint8_t>(variant.compiled.cubin.begin(), variant.compiled.cubin.end()))},
                 {"plan", plan.json},
                 {"params", params},
                 {"verify_tests", ask.verify_tests},
                 {"verify_held_out", ask.held_out},
                 {"timing", timing_standard_name(ask.timing)},
                 {"profile", ask.profile},
                 {"deadline_ms", m_config.launch_deadline.count()}};
    // A backstop only: the worker enforces the per-run deadline itself and answers in time.
    auto deadline = std::chrono::milliseconds(60000) + 10 * m_config.launch_deadline;
    auto begin = Clock::now();
    WorkerReply reply = m_worker.request(request, deadline);
    auto busy = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - begin);
    m_gpu_busy_ns += busy.count();
    result.gpu_seconds = std::chrono::duration<double>(busy).count();
    if (reply.failure == WorkerFailure::crashed) {
        result.verdict = Verdict{VerdictKind::runtime_error,
                                 fmt::format("the GPU worker crashed while running this candidate: {}", reply.failure_message)};
        return result;
    }
    if (reply.failure == WorkerFailure::timed_out) {
        result.verdict = Verdict{VerdictKind::timeout, reply.failure_message};
        return result;
    }
    if (!reply.body.value("ok", false)) {
        result.verdict = Verdict{VerdictKind::runtime_error, reply.body.value("error", "the GPU worker failed")};
        return result;
    }
    result.from_worker = true;
    const Json& verdict = reply.body.at("verdict");
    result.verdict.kind = parse_verdict(verdict.value("kind", "runtime_error")).value_or(VerdictKind::runtime_error);
    result.verdict.message = verdict.value("message", "");
    for (const auto& m : reply.body.value("measurements", Json::array()))
        result.measurements.push_back(measurement_from_json(m));
    result.resources = reply.body.value("resources", Json::object());
    result.notes = reply.body.value("notes", Json::object());
    result.profile = reply.body.value("profile", Json::object());
    return result;
}

Evaluation GpuEvaluator::evaluate(Prepared& prepared)
{
    Evaluation evaluation;
    if (prepared.early_failure) {
        evaluation.verdict = *prepared.early_failure;
        return evaluation;
    }
    const EvalOptions& options = prepared.job.options;
    Json compile_info = Json::array();
    std::vector<const Variant*> compiled;
    std::optional<Verdict> compile_failure;
    for (const auto& variant : prepared.variants) {
        Json params = Json::object();
        for (const auto& [name, value] : variant.params)
            params[name] = value;
        compile_info.push_back(Json{{"params", params},
                                    {"ok", variant.compiled.ok},
                                    {"seconds", variant.compiled.seconds},
                                    {"cache_hit", variant.compiled.cache_hit}});
        if (variant.compiled.ok)
            compiled.push_back(&variant);
        else if (!compile_failure)
            compile_failure = Verdict{variant.compiled.failure,
                                      fmt::format("{}{}", prepared.variants.size() > 1
                                                              ? fmt::format("with {}: ", describe_param_point(variant.params))
                                                              : "",
                                                  variant.compiled.message)};
    }
    evaluation.compile_info = Json{{"variants", compile_info}};
    if (compiled.empty()) {
        evaluation.verdict = compile_failure.value_or(Verdict{VerdictKind::compile_error, "nothing compiled"});
        return evaluation;
    }

    std::string final_timing = options.confirm ? "confirm" : "quick";
    std::vector<VariantResult> results;
    const Variant* best = nullptr;
    double best_fitness = 0;
    if (compiled.size() == 1) {
        results.push_back(run_variant(*compiled[0], prepared.plan, true, final_timing, options.held_out, options.profile));
        if (results.back().verdict.is_correct()) {
            best = compiled[0];
            best_fitness = geomean_speedup(results.back().measurements, m_baselines);
        }
    } else {
        // Sweep: verify and screen-time every point, then time the winner properly.
        for (const Variant* variant : compiled) {
            serve_earlier_jobs(prepared.job.ticket);
            results.push_back(run_variant(*variant, prepared.plan, true, "sweep", false));
            double fitness = results.back().verdict.is_correct() ? geomean_speedup(results.back().measurements, m_baselines) : 0;
            if (fitness > best_fitness) {
                best_fitness = fitness;
                best = variant;
            }
        }
        if (best) {
            results.push_back(run_variant(*best, prepared.plan, false, final_timing, options.held_out, options.profile));
            best_fitness = results.back().verdict.is_correct() ? geomean_speedup(results.back().measurements, m_baselines) : 0;
        }
    }
    Json sweep = Json::array();
    for (const auto& r : results) {
        Json params = Json::object();
        for (const auto& [name, value] : r.params)
            params[name] = value;
        sweep.push_back(Json{{"params", params},
                             {"verdict", verdict_name(r.verdict.kind)},
                             {"fitness", r.verdict.is_correct() ? geomean_speedup(r.measurements, m_baselines) : 0}});
    }
    evaluation.metrics["sweep"] = sweep;
    evaluation.metrics["runs"] = variant_runs_to_json(results);

    const VariantResult& last = results.back();
    if (best && !last.verdict.is_correct()) {
        // The winner of the sweep failed its final run (held-out shapes, or on closer timing).
        evaluation.verdict = last.verdict;
        if (results.size() > 1)
            evaluation.verdict.message = fmt::format("with {}: {}", describe_param_point(last.params), last.verdict.message);
        evaluation.metrics["resources"] = last.resources;
        return evaluation;
    }
    if (!best) {
        // No point is correct: report the failure that got furthest up the ladder.
        const VariantResult* furthest = &results.front();
        for (const auto& r : results)
            if (verdict_rank(r.verdict.kind) > verdict_rank(furthest->verdict.kind))
                furthest = &r;
        evaluation.verdict = furthest->verdict;
        if (results.size() > 1)
            evaluation.verdict.message = fmt::format("with {}: {}", describe_param_point(furthest->params),
                                                     furthest->verdict.message);
        evaluation.metrics["resources"] = furthest->resources;
        return evaluation;
    }

    evaluation.verdict = last.verdict;
    evaluation.best_params = best->params;
    evaluation.measurements = last.measurements;
    // Fitness uses the reference timed in the same interleaved run when there is one.
    double fitness = options.confirm ? geomean_speedup(last.measurements, last.measurements) : 0;
    evaluation.fitness = fitness > 0 ? fitness : best_fitness;
    evaluation.metrics["resources"] = last.resources;
    evaluation.metrics["notes"] = last.notes;
    evaluation.metrics["baseline"] = baseline_summary(evaluation);
    if (!last.profile.empty())
        evaluation.metrics["profile"] = last.profile;
    evaluation.metrics["ptxas"] = kernel_resources_metrics(best->compiled.resources, last.resources);
    if (last.notes.contains("below_roofline"))
        evaluation.metrics["suspicious"] = true;

    // Descriptors at the largest bench shape.
    const Shape& largest = m_task.bench.back();
    DescriptorInputs inputs;
    inputs.source = prepared.job.source;
    inputs.plan = resolve_plan(m_task, prepared.plan, largest, best->params);
    for (const auto& arg : m_task.args)
        if (arg.is_tensor && arg.intent != Intent::in)
            inputs.output_elements += m_task.element_count(arg, largest);
    size_t heaviest = 0;
    double most_threads = 0;
    for (size_t i = 0; i < inputs.plan.launches.size(); ++i) {
        const auto& l = inputs.plan.launches[i];
        double threads = 1.0 * l.grid[0] * l.grid[1] * l.grid[2] * l.block[0] * l.block[1] * l.block[2];
        if (threads > most_threads) {
            most_threads = threads;
            heaviest = i;
        }
    }
    const Json& occupancy = last.resources.value("theoretical_occupancy", Json::array());
    if (heaviest < occupancy.size())
        inputs.occupancy = occupancy[heaviest].get<double>();
    evaluation.descriptors = describe_candidate(inputs);
    return evaluation;
}

} // namespace

std::unique_ptr<CandidateEvaluator> make_gpu_evaluator(const Task& task, const EvaluatorConfig& config)
{
    return std::make_unique<GpuEvaluator>(task, config);
}

} // namespace kforge
