// The GPU evaluator: a steady-state pipeline from source to Evaluation, over every GPU of the
// session.
//
// Stage 1 (several "prepare" threads, one per compile worker): plan extraction and validation,
// source screening, and NVRTC compiles of every param point through the CompilePool — once per
// distinct arch among the session's GPUs, so GPUs of one model share every compile (gpu_prepare).
// Stage 2 (one thread per GPU, each owning a GpuSlot and its worker): a GPU that has nothing to do
// takes the next compiled candidate and evaluates it whole (gpu/slot.hpp). While the GPUs work, the
// next candidates compile, so no GPU waits on the compiler when work is queued.
//
// Scheduling (which waiting job or running sweep a free GPU takes) is stated in gpu/evaluator.hpp
// and done by the GPU threads in gpu/schedule.cpp; this file holds the evaluator's lifecycle and
// its CandidateEvaluator interface.
#include "evaluator/gpu/evaluator.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "evaluator/gpu/client.hpp"
#include "evaluator/gpu/prepare.hpp"
#include "evaluator/gpu/remote.hpp"
#include "evaluator/worker/worker_protocol.hpp"
#include "util/error.hpp"
#include "util/host_resources.hpp"
#include "util/log.hpp"
#include "util/mpi_world.hpp"
#include "util/subprocess.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

uint64_t job_ticket(const EvalJob& job) { return job.ticket; }
uint64_t job_ticket(const PreparedJob& job) { return job.job.ticket; }

} // namespace

GpuEvaluator::GpuEvaluator(const Task& task, const EvaluatorConfig& config) : m_task(task), m_config(config)
{
    if (task.spec_path.empty())
        fail_runtime("internal: the GPU evaluator needs a task loaded from a file");
    add_gpus();
    // Two sessions that each took one GPU's search turn and waited for the other's would wait for ever.
    if (!config.gpu_share_dir.empty() && m_slots.size() > 1)
        fail(ErrorKind::usage, "--gpu-share: a run on a shared GPU uses one GPU (--gpus I,), not {}", m_slots.size());
    Json setup{{"op", "setup"},
               {"task_path", std::filesystem::absolute(task.spec_path).string()},
               {"run_secret", config.run_secret},
               {"cache_dir", config.cache_dir.string()}};
    if (!config.gpu_share_dir.empty())
        setup["gpu_share_dir"] = std::filesystem::absolute(config.gpu_share_dir).string();

    m_usable_cpus = usable_cpus();
    CompilePoolConfig pool;
    pool.workers = config.compile_workers;
    pool.gpus = m_slots.size(); // under MPI too: the other ranks' GPUs are slots here, compiled for here
    pool.deadline = config.compile_deadline;
    pool.cache_dir = config.cache_dir.empty() ? std::filesystem::path() : config.cache_dir;
    pool.worker_executable = config.worker_executable;
    m_pool = std::make_unique<CompilePool>(pool);
    // The search's first jobs are the reference and the seeds: their compiles (seconds for a
    // header-heavy kernel of many param points) run while the GPUs start and time their
    // baselines, instead of after, while every GPU waits for them.
    if (config.prefetch_task_kernels) {
        prefetch_compiles(task, task.reference.source, true, *m_pool, m_visible_arches);
        for (const auto& seed : task.seeds)
            prefetch_compiles(task, seed.source, false, *m_pool, m_visible_arches);
        log_debug("compile pool: compiling the reference and {} seed{} while the GPUs start", task.seeds.size(),
                  task.seeds.size() == 1 ? "" : "s");
    }
    try {
        start_slots(setup);
    } catch (...) {
        m_pool->cancel(); // no prefetch is wanted now; the pool's destructor waits for none
        throw;
    }
    describe_environment();

    size_t preparers = std::max<size_t>(1, m_pool->workers());
    for (size_t i = 0; i < preparers; ++i)
        m_threads.emplace_back([this] { prepare_loop(); });
}

// One slot per GPU of this host that --gpus selects (under MPI: this rank's share of them), each
// with its own worker pinned by UUID; then, under MPI, the other ranks' GPUs.
void GpuEvaluator::add_gpus()
{
    std::string host = host_name();
    MpiWorld* mpi = m_config.mpi;
    try {
        std::vector<VisibleGpu> chosen = select_gpus(list_visible_gpus(m_config.worker_executable), m_config.gpus, host);
        if (mpi && chosen.size() < static_cast<size_t>(mpi->local_size()))
            log_warn("{} MPI ranks share the {} GPU{} of {}: their timings disturb each other; run one rank per GPU",
                     mpi->local_size(), chosen.size(), chosen.size() == 1 ? "" : "s", host);
        if (mpi)
            chosen = share_for_local_rank(chosen, mpi->local_rank(), mpi->local_size());
        for (const auto& gpu : chosen)
            add_slot(gpu, host, 0, std::make_unique<GpuWorkerClient>(m_config.worker_executable, gpu.facts.uuid));
    } catch (const Error& e) {
        if (!mpi || e.kind() != ErrorKind::runtime)
            throw;
        log_warn("the controller (MPI rank 0) drives no GPU of {}: {}", host, e.what());
    }
    if (mpi)
        add_remote_gpus();
    if (m_slots.empty())
        fail_runtime("no NVIDIA driver/GPU found on any of the {} MPI ranks", mpi ? mpi->size() : 1);
}

// Each other rank's share of its host's selected GPUs, driven through its evaluation service.
void GpuEvaluator::add_remote_gpus()
{
    MpiWorld& world = *m_config.mpi;
    Json task{{"spec_text", m_task.spec_text}, {"files", snapshot_task_files(m_task)}};
    for (const auto& remote : gather_remote_hosts(world, std::chrono::minutes(2))) {
        if (!remote.problem.empty()) {
            log_warn("MPI rank {} on {} offers no GPU: {}", remote.rank, remote.host, remote.problem);
            continue;
        }
        std::vector<VisibleGpu> chosen = select_gpus(remote.devices, m_config.gpus, remote.host);
        if (chosen.size() < static_cast<size_t>(remote.local_size) && remote.local_rank == 0)
            log_warn("{} MPI ranks share the {} GPU{} of {}: their timings disturb each other; run one rank per GPU",
                     remote.local_size, chosen.size(), chosen.size() == 1 ? "" : "s", remote.host);
        int tag = k_first_gpu_tag;
        for (const auto& gpu : share_for_local_rank(chosen, remote.local_rank, remote.local_size))
            add_slot(gpu, remote.host, remote.rank,
                     std::make_unique<RemoteGpuLink>(world, remote.rank, tag++, gpu.facts.uuid, task));
    }
}

void GpuEvaluator::add_slot(const VisibleGpu& gpu, const std::string& host, int rank, std::unique_ptr<GpuLink> link)
{
    std::string arch = session_arch(m_config, gpu.facts);
    if (std::find(m_visible_arches.begin(), m_visible_arches.end(), arch) == m_visible_arches.end())
        m_visible_arches.push_back(arch);
    GpuIdentity identity = identify_gpu(gpu, host, rank);
    // Results from one GPU stand in on another of the same model, never on another model.
    auto& memo = m_memos[identity.name];
    if (!memo)
        memo = std::make_unique<MeasurementMemo>(m_config.reuse_measurements);
    m_slots.push_back(SlotEntry{std::make_unique<GpuSlot>(m_task, m_config, std::move(identity), std::move(link), *memo)});
}

// Each slot starts on its own thread (which then serves it), all at once: every GPU times its own
// baselines. A GPU that fails to start is left out with a warning; none starting is an error.
void GpuEvaluator::start_slots(const Json& setup)
{
    for (size_t i = 0; i < m_slots.size(); ++i)
        m_threads.emplace_back([this, i, setup] { slot_loop(i, setup); });
    std::unique_lock lock(m_mutex);
    m_work_ready.wait(lock, [this] {
        return std::none_of(m_slots.begin(), m_slots.end(), [](const SlotEntry& e) { return e.state == SlotState::starting; });
    });
    std::string first_failure;
    for (const auto& entry : m_slots) {
        if (entry.state == SlotState::ready) {
            if (!m_primary)
                m_primary = entry.slot.get();
            if (std::find(m_arches.begin(), m_arches.end(), entry.slot->arch()) == m_arches.end())
                m_arches.push_back(entry.slot->arch());
        } else if (first_failure.empty()) {
            first_failure = entry.failure;
        }
    }
    if (!m_primary) {
        lock.unlock();
        stop_threads();
        throw Error(ErrorKind::runtime, first_failure);
    }
    for (const auto& entry : m_slots)
        if (entry.state == SlotState::failed)
            log_warn("{} is left out of this session: {}", entry.slot->identity().label(), entry.failure);
}

void GpuEvaluator::describe_environment()
{
    const GpuSlot& primary = *m_primary;
    Json vendor_json = Json::array();
    for (const auto& status : primary.vendor()) {
        vendor_json.push_back(vendor_status_to_json(status));
        if (status.timed)
            log_info("baseline {} ({}) timed on every bench shape", status.routine, status.library);
        else
            log_warn("vendor baseline {} is unavailable; speedups are against the reference only: {}", status.routine,
                     status.reason);
    }
    Json gpus = Json::array();
    std::vector<std::string> labels;
    for (const auto& entry : m_slots)
        if (entry.state == SlotState::ready) {
            Json gpu = entry.slot->identity().to_json();
            gpu["arch"] = entry.slot->arch();
            gpus.push_back(gpu);
            labels.push_back(fmt::format("{} ({})", entry.slot->identity().label(), entry.slot->identity().name));
        }
    if (labels.size() > 1)
        log_info("{} GPUs: {}", labels.size(), join(labels, ", "));
    m_environment = Json{{"device", primary.facts().to_json()},
                         {"arch", primary.arch()},
                         {"gpus", gpus},
                         {"nvrtc", nvrtc_version()},
                         {"peaks", primary.setup_reply().value("peaks", Json::object())},
                         {"compile_workers", m_pool->workers()},
                         {"launch_deadline_ms", m_config.launch_deadline.count()},
                         {"vendor_baselines", vendor_json},
                         {"vendor_library", primary.vendor_library()},
                         {"timing", Json{{"method", "CUPTI activity kernel spans, L2 flushed per sample, median"},
                                         {"flush_bytes", std::max<int64_t>(int64_t{256} << 20, 4LL * primary.facts().l2_bytes)}}}};
}

GpuEvaluator::~GpuEvaluator()
{
    stop_threads();
}

void GpuEvaluator::stop_threads()
{
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    // Nothing compiled from here on is recorded: compiles still queued or running end now, so an
    // interrupted session leaves without waiting for NVRTC.
    if (m_pool)
        m_pool->cancel();
    m_work_ready.notify_all();
    for (auto& thread : m_threads)
        if (thread.joinable())
            thread.join();
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

void GpuEvaluator::withdraw(uint64_t ticket)
{
    {
        std::lock_guard lock(m_mutex);
        auto same = [&](const auto& waiting) { return job_ticket(waiting) == ticket; };
        if (auto it = std::find_if(m_incoming.begin(), m_incoming.end(), same); it != m_incoming.end()) {
            m_incoming.erase(it);
            --m_pending;
        } else if (auto at = std::find_if(m_compiled.begin(), m_compiled.end(), same); at != m_compiled.end()) {
            m_compiled.erase(at);
            --m_pending;
        } else {
            m_withdrawn.insert(ticket); // a preparer drops it once compiled; a running one finishes
        }
    }
    m_done_ready.notify_all();
}

std::vector<EvalResult> GpuEvaluator::collect(std::chrono::milliseconds wait)
{
    std::unique_lock lock(m_mutex);
    m_done_ready.wait_for(lock, wait, [this] { return !m_done.empty() || m_pending == 0; });
    std::vector<EvalResult> out;
    out.swap(m_done);
    if (out.empty() && m_pending > 0 &&
        std::none_of(m_slots.begin(), m_slots.end(), [](const SlotEntry& e) { return e.state == SlotState::ready; }))
        fail_runtime("every GPU of this session has stopped serving ({} job{} left); the run can be resumed",
                     m_pending, m_pending == 1 ? "" : "s");
    return out;
}

size_t GpuEvaluator::pending() const
{
    std::lock_guard lock(m_mutex);
    return m_pending;
}

std::vector<GpuUsage> GpuEvaluator::gpu_usage() const
{
    std::lock_guard lock(m_mutex);
    std::vector<GpuUsage> usage;
    for (const auto& entry : m_slots)
        if (entry.state != SlotState::failed)
            usage.push_back(entry.slot->usage());
    return usage;
}

double GpuEvaluator::gpu_busy_fraction() const
{
    double busy = 0, wall = 0;
    for (const auto& usage : gpu_usage()) {
        busy += usage.busy_s;
        wall += usage.wall_s;
    }
    return wall > 0 ? busy / wall : 0;
}

void GpuEvaluator::finish(uint64_t ticket, Evaluation evaluation)
{
    {
        std::lock_guard lock(m_mutex);
        m_done.push_back(EvalResult{ticket, std::move(evaluation)});
        m_withdrawn.erase(ticket);
        --m_pending;
    }
    m_done_ready.notify_all();
}

std::string GpuEvaluator::check_program(const std::vector<std::string>& sets)
{
    GpuSlot* slot = nullptr;
    {
        std::lock_guard lock(m_mutex);
        if (m_pending > 0)
            fail_runtime("internal: check_program while {} jobs are pending", m_pending);
        for (auto& entry : m_slots)
            if (entry.state == SlotState::ready && !entry.busy && !slot)
                slot = entry.slot.get();
    }
    if (!slot)
        fail_runtime("no GPU is serving to check the PyTorch program on");
    return slot->check_program(sets);
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
        parts.push_back(fmt::format("{} job{} waiting for a GPU", waiting, waiting == 1 ? "" : "s"));
    return join(parts, ", ");
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
            auto lowest = std::min_element(m_incoming.begin(), m_incoming.end(), [](const EvalJob& a, const EvalJob& b) {
                return a.ticket < b.ticket;
            });
            job = std::move(*lowest);
            m_incoming.erase(lowest);
        }
        PreparedJob prepared = prepare_job(m_task, std::move(job), *m_pool, m_arches, m_compiling);
        {
            std::lock_guard lock(m_mutex);
            if (m_withdrawn.erase(prepared.job.ticket) > 0) {
                --m_pending;
                m_done_ready.notify_all();
                continue;
            }
            m_compiled.push_back(std::move(prepared));
        }
        m_work_ready.notify_all();
    }
}

std::unique_ptr<CandidateEvaluator> make_gpu_evaluator(const Task& task, const EvaluatorConfig& config)
{
    return std::make_unique<GpuEvaluator>(task, config);
}

} // namespace kforge