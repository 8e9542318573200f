// The fake evaluator's landscape and job threads; see fake_evaluator.hpp.
#include "search/fake_evaluator.hpp"

#include <algorithm>
#include <regex>

#include "core/plan.hpp"
#include "core/source.hpp"
#include "evaluator/describe.hpp"
#include "util/hash.hpp"

namespace kforge::test {
namespace {

std::optional<int64_t> marker(const std::string& source, const char* name)
{
    std::regex pattern(std::string("#define\\s+") + name + "\\s+(-?[0-9]+)");
    std::smatch match;
    if (!std::regex_search(source, match, pattern))
        return std::nullopt;
    return std::stoll(match[1].str());
}

Json cell_descriptors(uint64_t bits)
{
    Json descriptors = Json::object();
    size_t axis = 0;
    for (const auto& [name, bins] : descriptor_axes())
        descriptors[name] = bins[(bits >> axis++) & 1];
    return descriptors;
}

double unit(uint64_t h)
{
    return static_cast<double>(h % 1000003) / 1000003.0;
}

} // namespace

FakeOutcome fake_landscape(const Task& task, const std::string& source)
{
    FakeOutcome outcome;
    if (auto speed = marker(source, "KF_SPEED")) {
        outcome.fitness = static_cast<double>(*speed) / 100.0;
        outcome.descriptors = cell_descriptors(static_cast<uint64_t>(marker(source, "KF_CELL").value_or(0)));
        if (auto verdict = marker(source, "KF_VERDICT"); verdict && *verdict != static_cast<int>(VerdictKind::correct))
            outcome.verdict = {static_cast<VerdictKind>(*verdict), "the fake landscape says so (KF_VERDICT)"};
        outcome.suspicious = marker(source, "KF_SUSPICIOUS").value_or(0) != 0;
        outcome.fails_held_out = marker(source, "KF_HELD_OUT").value_or(1) == 0;
        return outcome;
    }
    if (source == task.reference.source) {
        outcome.fitness = 1.0;
        outcome.descriptors = cell_descriptors(0);
        return outcome;
    }
    std::optional<Plan> plan;
    try {
        if (auto json = extract_plan_json(source))
            plan = parse_plan(*json, "plan");
    } catch (const std::exception&) {
    }
    if (!plan) {
        outcome.verdict = {VerdictKind::plan_error, "the fake evaluator found no plan"};
        return outcome;
    }
    std::string kernels;
    for (const auto& name : find_kernel_names(source))
        kernels += name + ",";
    for (const auto& point : enumerate_param_points(*plan, 64)) {
        std::string key = kernels + describe_param_point(point);
        double fitness = 0.5 + 2.5 * unit(hash64(key));
        if (fitness > outcome.fitness) {
            outcome.fitness = fitness;
            outcome.best_params = point;
            outcome.descriptors = cell_descriptors(hash64(key, 7));
        }
    }
    return outcome;
}

FakeEvaluator::FakeEvaluator(const Task& task, FakeSettings settings) : m_task(task), m_settings(settings)
{
    for (int i = 0; i < std::max(1, m_settings.workers); ++i)
        m_threads.emplace_back([this] { work(); });
}

FakeEvaluator::~FakeEvaluator()
{
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_job_ready.notify_all();
    for (auto& thread : m_threads)
        thread.join();
}

void FakeEvaluator::submit(EvalJob job)
{
    {
        std::lock_guard lock(m_mutex);
        m_history.push_back(job);
        m_queue.push_back(std::move(job));
        ++m_pending;
    }
    m_job_ready.notify_one();
}

std::vector<EvalResult> FakeEvaluator::collect(std::chrono::milliseconds wait)
{
    std::unique_lock lock(m_mutex);
    m_done_ready.wait_for(lock, wait, [this] { return !m_done.empty() || m_pending == 0; });
    std::vector<EvalResult> out;
    out.swap(m_done);
    m_pending -= out.size();
    return out;
}

size_t FakeEvaluator::pending() const
{
    std::lock_guard lock(m_mutex);
    return m_pending;
}

double FakeEvaluator::gpu_busy_fraction() const
{
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_created).count();
    return wall > 0 ? std::min(1.0, static_cast<double>(m_busy_us.load()) * 1e-6 / wall) : 0;
}

Json FakeEvaluator::environment() const
{
    return Json{{"device", {{"name", "Fake GPU"}, {"arch", "sm_90a"}, {"sm_count", 132}, {"l2_bytes", 50 << 20},
                            {"max_smem_per_block_optin", 232448}, {"total_memory_bytes", int64_t{80} << 30},
                            {"driver_version", "13.0"}}},
                {"peaks", {{"measured_dram_bytes_per_s", 3.0e12}, {"dram_bytes_per_s", 3.35e12}, {"fp32_flops", 6.7e13}}},
                {"nvrtc", "fake"}};
}

std::vector<Measurement> FakeEvaluator::baselines() const
{
    std::vector<Measurement> out;
    for (size_t i = 0; i < m_task.bench.size(); ++i) {
        Measurement m;
        m.shape_set = "bench";
        m.shape_label = m_task.bench[i].label;
        m.subject = "reference";
        m.median_ns = m.q1_ns = m.q3_ns = m.min_ns = 1000.0 * static_cast<double>(i + 1);
        m.samples = 30;
        m.confirmed = true;
        out.push_back(m);
    }
    return out;
}

std::vector<EvalJob> FakeEvaluator::jobs() const
{
    std::lock_guard lock(m_mutex);
    return m_history;
}

void FakeEvaluator::work()
{
    for (;;) {
        EvalJob job;
        {
            std::unique_lock lock(m_mutex);
            m_job_ready.wait(lock, [this] { return m_stopping || !m_queue.empty(); });
            if (m_stopping)
                return;
            auto lowest = std::min_element(m_queue.begin(), m_queue.end(),
                                           [](const EvalJob& a, const EvalJob& b) { return a.ticket < b.ticket; });
            job = std::move(*lowest);
            m_queue.erase(lowest);
        }
        auto delay = std::chrono::milliseconds(0);
        if (m_settings.delay_of)
            delay = m_settings.delay_of(job);
        else if (m_settings.max_delay.count() > 0)
            delay = std::chrono::milliseconds(
                static_cast<int64_t>(hash64(job.source, job.ticket % 3) % static_cast<uint64_t>(m_settings.max_delay.count() + 1)));
        std::this_thread::sleep_for(delay);
        m_busy_us += std::chrono::duration_cast<std::chrono::microseconds>(delay).count();
        EvalResult result{job.ticket, evaluate(job)};
        {
            std::lock_guard lock(m_mutex);
            m_done.push_back(std::move(result));
        }
        m_done_ready.notify_all();
    }
}

Evaluation FakeEvaluator::evaluate(const EvalJob& job) const
{
    FakeOutcome outcome = fake_landscape(m_task, job.source);
    Evaluation evaluation;
    evaluation.verdict = outcome.verdict;
    if (!outcome.verdict.is_correct())
        return evaluation;
    if (job.options.held_out && outcome.fails_held_out) {
        evaluation.verdict = {VerdictKind::held_out_failed, "wrong on a held-out shape (fake)"};
        return evaluation;
    }
    double fitness = outcome.fitness;
    if (job.options.confirm)
        fitness *= 1 + m_settings.confirm_noise * (2 * unit(hash64(job.source, 99)) - 1);
    evaluation.fitness = fitness;
    evaluation.best_params = job.options.only_params ? *job.options.only_params : outcome.best_params;
    evaluation.descriptors = outcome.descriptors;
    if (outcome.suspicious)
        evaluation.metrics["suspicious"] = true;
    if (job.options.profile)
        evaluation.metrics["profile"] = Json{{"dram_throughput_pct", 50.0 * fitness}};
    for (size_t i = 0; i < m_task.bench.size(); ++i) {
        Measurement m;
        m.shape_set = "bench";
        m.shape_label = m_task.bench[i].label;
        m.subject = "candidate";
        m.median_ns = m.q1_ns = m.q3_ns = m.min_ns = 1000.0 * static_cast<double>(i + 1) / fitness;
        m.samples = job.options.confirm ? 200 : 30;
        m.confirmed = job.options.confirm;
        evaluation.measurements.push_back(m);
    }
    evaluation.eval_seconds = 0.001;
    return evaluation;
}

} // namespace kforge::test
