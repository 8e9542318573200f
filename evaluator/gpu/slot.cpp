// One GPU of a session: starting it, its baselines, and running one variant on it; see
// gpu/slot.hpp. The evaluation of a whole candidate on the slot is in gpu/slot_evaluate.cpp.
#include "evaluator/gpu/slot.hpp"

#include <thread>

#include <fmt/format.h>

#include "evaluator/worker/share.hpp"
#include "evaluator/worker/worker_protocol.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/log.hpp"

namespace kforge {
namespace {

constexpr int k_start_attempts = 3; // a worker that cannot be started this often in a row: the GPU is gone

std::string failure_of(const WorkerReply& reply)
{
    if (reply.failure != WorkerFailure::none)
        return reply.failure_message;
    return reply.body.value("ok", false) ? std::string() : reply.body.value("error", std::string("unknown error"));
}

} // namespace

GpuSlot::GpuSlot(const Task& task, const EvaluatorConfig& config, GpuIdentity identity, std::unique_ptr<GpuLink> link,
                 MeasurementMemo& memo)
    : m_task(task), m_config(config), m_identity(std::move(identity)), m_link(std::move(link)), m_memo(memo)
{
}

void GpuSlot::start(const Json& setup)
{
    WorkerReply device = send(Json{{"op", "device"}}, std::chrono::seconds(60));
    if (device.failure != WorkerFailure::none)
        fail_runtime("the GPU worker for {} could not start: {}", m_identity.label(), device.failure_message);
    if (!device.body.value("ok", false))
        fail_runtime("{}", device.body.value("error", "no NVIDIA driver/GPU found"));
    m_facts = DeviceFacts::from_json(device.body.at("device"));
    m_arch = session_arch(m_config, m_facts);
    if (std::string problem = m_link->set_setup(setup, std::chrono::minutes(10)); !problem.empty())
        fail_runtime("the GPU worker for {} could not set up task '{}': {}", m_identity.label(), m_task.name, problem);
    const Json& ready = m_link->setup_reply();
    log_info("GPU worker for {} set up in {:.1f} s (internal kernels {:.1f} s, reference compile {:.1f} s); timing "
             "the baselines of {} (the reference{}{}, to the confirmation standard)",
             m_identity.label(), ready.value("setup_seconds", 0.0), ready.value("internal_compile_seconds", 0.0),
             ready.value("reference_compile_seconds", 0.0), m_task.name,
             m_task.is_torch() ? " is the PyTorch program in eager mode" : "",
             m_config.time_vendor_baselines && m_task.is_torch()           ? ", with torch.compile"
             : m_config.time_vendor_baselines && !m_task.vendor_baselines.empty() ? " and vendor routines"
                                                                                  : "");
    auto baselines_started = EvalClock::now();
    time_baselines();
    log_info("baselines on {} timed in {:.1f} s", m_identity.label(),
             std::chrono::duration<double>(EvalClock::now() - baselines_started).count());
    // The reference evaluated as a candidate is the binary just timed: its timing is not taken again.
    if (std::string hash = ready.value("reference_behaviour_hash", ""); !hash.empty())
        m_memo.record_reference_timing(
            MeasurementMemo::key_for_behaviour(hash, m_task.reference.plan.json,
                                               enumerate_param_points(m_task.reference.plan, 1).front()),
            m_baselines);
    take_search_turn();
    m_joined = EvalClock::now(); // busy and wall time count from here: starting is not evaluating
    m_busy_ns = 0;
    m_lock_wait_ns = 0;
}

// Polls rather than blocks, so that Ctrl-C ends the wait; an interrupted wait goes on without the
// turn: the session is about to end, and whatever it still measures holds the measuring lock.
void GpuSlot::take_search_turn()
{
    if (m_config.gpu_share_dir.empty() || m_config.gpu_searches <= 0)
        return;
    std::error_code ec;
    std::filesystem::create_directories(m_config.gpu_share_dir, ec);
    auto began = EvalClock::now();
    bool waited = false;
    while (!interrupt_requested()) {
        for (int k = 0; k < m_config.gpu_searches && !m_search_turn.held(); ++k)
            m_search_turn = FileLock::acquire(search_turn_path(m_config.gpu_share_dir, m_facts.uuid, k), LockWait::try_once);
        if (m_search_turn.held())
            break;
        if (!waited)
            log_info("{} is shared: waiting for its search turn (other runs hold all {} of them)", m_identity.label(),
                     m_config.gpu_searches);
        waited = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (waited)
        log_info("{}: {} after waiting {:.1f} s for its search turn", m_identity.label(),
                 m_search_turn.held() ? "searching" : "interrupted",
                 std::chrono::duration<double>(EvalClock::now() - began).count());
}

// Baselines are timed once, to the confirmation standard, before any candidate: the reference and
// the task's vendor routines interleaved. Should that fail because of a vendor routine (it faulted
// and took the worker with it), the reference is timed again alone and the routines are reported
// unavailable with the failure.
void GpuSlot::time_baselines()
{
    // A PyTorch program's baselines include torch.compile, which takes minutes per shape.
    auto limit = m_task.is_torch() ? std::chrono::minutes(30) : std::chrono::minutes(10);
    auto request = [&](bool vendor) {
        return send(Json{{"op", "time_reference"}, {"level", "confirm"}, {"deadline_ms", 60000}, {"vendor", vendor}},
                    limit);
    };
    bool vendor = m_config.time_vendor_baselines && (m_task.is_torch() || !m_task.vendor_baselines.empty());
    WorkerReply reply = request(vendor);
    std::string failure = failure_of(reply);
    std::string vendor_failure;
    if (!failure.empty() && vendor) {
        log_warn("timing the vendor baselines of '{}' on {} failed ({}); timing the reference alone", m_task.name,
                 m_identity.label(), failure);
        vendor_failure = failure;
        reply = request(false);
        failure = failure_of(reply);
    }
    if (!failure.empty())
        fail_runtime("timing the reference of '{}' on {} failed: {}", m_task.name, m_identity.label(), failure);
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
    }
}

std::string GpuSlot::check_program(const std::vector<std::string>& sets)
{
    WorkerReply reply = send(Json{{"op", "check_program"}, {"sets", sets}}, std::chrono::minutes(30));
    if (std::string failure = failure_of(reply); !failure.empty())
        fail_runtime("checking the PyTorch program of '{}' on {} failed: {}", m_task.name, m_identity.label(), failure);
    return reply.body.value("problem", "");
}

// What a candidate's speedup is measured against: the first vendor routine that was timed, else
// the reference (the fallback when the library is missing or disagreed).
Json GpuSlot::baseline_summary(const Evaluation& evaluation) const
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

WorkerReply GpuSlot::send(const Json& request, std::chrono::milliseconds deadline)
{
    auto begin = EvalClock::now();
    WorkerReply reply = m_link->request(request, deadline);
    auto waited = static_cast<int64_t>(reply.body.value("gpu_lock_wait_s", 0.0) * 1e9);
    auto spent = std::chrono::duration_cast<std::chrono::nanoseconds>(EvalClock::now() - begin).count();
    m_busy_ns += std::max<int64_t>(0, spent - waited);
    m_lock_wait_ns += waited;
    m_restarts = m_link->restarts();
    return reply;
}

// One run_variant request, with the line's failures handled: a worker that cannot be started is
// tried again (k_start_attempts in all, a second apart), a crash is run again once on a fresh
// worker, a lost line ends the slot.
WorkerReply GpuSlot::request_variant(const Json& request)
{
    // A backstop only: the worker enforces the per-run deadline itself and answers in time.
    auto deadline = std::chrono::milliseconds(60000) + 10 * m_config.launch_deadline;
    bool retried_crash = false;
    for (int start_failures = 0;;) {
        WorkerReply reply = send(request, deadline);
        switch (reply.failure) {
        case WorkerFailure::lost:
            throw GpuLostError(fmt::format("{} is lost: {}", m_identity.label(), reply.failure_message));
        case WorkerFailure::not_started:
            if (++start_failures >= k_start_attempts)
                throw GpuLostError(fmt::format("the GPU worker for {} could not be started {} times in a row: {}",
                                               m_identity.label(), k_start_attempts, reply.failure_message));
            std::this_thread::sleep_for(std::chrono::seconds(1));
            continue;
        case WorkerFailure::crashed:
            if (retried_crash)
                return reply;
            retried_crash = true;
            log_warn("the GPU worker for {} died under a candidate ({}); running it once more on a fresh worker",
                     m_identity.label(), reply.failure_message);
            continue;
        default: return reply;
        }
    }
}

VariantResult GpuSlot::run_variant(const Variant& variant, const Plan& plan, bool verify_tests, const std::string& timing,
                                   bool held_out, bool profile)
{
    VariantAsk ask{verify_tests, parse_timing_standard(timing).value_or(TimingStandard::quick), held_out, profile};
    VariantResult result = m_memo.run(variant.memo_key, ask, variant.origin,
                                      [&](const VariantAsk& left) { return measure_variant(variant, plan, left); });
    result.params = variant.params;
    result.gpu = m_identity.label();
    return result;
}

// What the memo could not answer, run on this GPU. Results of a failed pipeline (a crash, a reply
// past its deadline) are marked as not the worker's, so the memo never stores them.
VariantResult GpuSlot::measure_variant(const Variant& variant, const Plan& plan, const VariantAsk& ask)
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
    int64_t busy_before = m_busy_ns.load();
    WorkerReply reply = request_variant(request);
    result.gpu_seconds = static_cast<double>(m_busy_ns.load() - busy_before) * 1e-9;
    if (reply.failure == WorkerFailure::crashed) {
        result.verdict = Verdict{VerdictKind::runtime_error,
                                 fmt::format("the GPU worker crashed while running this candidate, twice: {}",
                                             reply.failure_message)};
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

int64_t GpuSlot::since_start_ns() const
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(EvalClock::now() - m_joined).count();
}

GpuUsage GpuSlot::usage() const
{
    GpuUsage usage;
    usage.gpu = m_identity;
    usage.busy_s = static_cast<double>(m_busy_ns.load()) * 1e-9;
    usage.lock_wait_s = static_cast<double>(m_lock_wait_ns.load()) * 1e-9;
    usage.lost = m_lost.load();
    usage.wall_s = static_cast<double>(usage.lost ? m_lost_at_ns.load() : since_start_ns()) * 1e-9;
    usage.evaluations = m_evaluations.load();
    usage.restarts = m_restarts.load();
    return usage;
}

void GpuSlot::stop()
{
    m_link->stop();
    m_search_turn.release();
}

} // namespace kforge
