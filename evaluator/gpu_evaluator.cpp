// The GPU evaluator: a steady-state pipeline from source to Evaluation, over every GPU of the
// session.
//
// Stage 1 (several "prepare" threads, one per compile worker): plan extraction and validation,
// source screening, and NVRTC compiles of every param point through the CompilePool — once per
// distinct arch among the session's GPUs, so GPUs of one model share every compile (gpu_prepare).
// Stage 2 (one thread per GPU, each owning a GpuSlot and its worker): a GPU that has nothing to do
// takes the next compiled candidate and evaluates it whole (gpu_slot.hpp). While the GPUs work, the
// next candidates compile, so no GPU waits on the compiler when work is queued.
//
// Scheduling. A job may name the GPU it prefers (EvalOptions::gpu: a confirmation prefers the GPU
// its screen ran on): that GPU takes it when idle; when it is busy, any idle GPU of the same model
// does, since the job is measured whole where it runs (a confirmation times the reference
// interleaved with the candidate) and GPUs of one model stand in for each other (the memo relies on
// it too). A GPU of another model never takes it. Waiting for the preferred GPU cost whole seconds
// of the other GPUs' time on a real two-GPU machine: the search records in order, so the job the
// head of the line waits for held back everything behind it. Among idle GPUs that may take a job,
// the preferred one first, then the one idle longest, which spreads work evenly. A GPU whose line is lost (its MPI
// rank died, its worker cannot be started) puts its job back at the head of the queue and leaves
// the session; the others carry on. With no GPU left, collect() throws: the run stops, resumable.
// Waiting jobs are taken lowest ticket first (callers number jobs in the order they need them: the
// search records in order), also between a sweep's variants, so the job holding everything up never
// waits behind later ones. An idle GPU weighs the variants of running sweeps by the same rule: it
// helps with an earlier sweep before it takes a later job (taking the job first left the earlier
// sweep queued behind its own busy GPU). A sweep's own GPU that leaves between variants for an
// earlier job (a confirmation: seconds on a real GPU) leaves its final step on the board as well,
// so the GPU that finishes the variants also times the winner and delivers the evaluation, rather
// than idle while the sweep waits for its owner (sweep_board.hpp). A job the caller withdraws
// (a confirmation started early and found unneeded) leaves the queue unless a GPU has it already.
// Local GPUs and other ranks' GPUs are slots alike: nothing here depends on where a GPU is. Every
// variant run goes through the measurement memo of its GPU's model (measurement_memo.hpp), so a
// point measured before is not measured again.
#include <algorithm>
#include <atomic>
#include <map>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "evaluator/compile/compile.hpp"
#include "evaluator/evaluator.hpp"
#include "evaluator/gpu_client.hpp"
#include "evaluator/gpu_devices.hpp"
#include "evaluator/gpu_prepare.hpp"
#include "evaluator/gpu_remote.hpp"
#include "evaluator/gpu_slot.hpp"
#include "evaluator/measurement_memo.hpp"
#include "evaluator/sweep_board.hpp"
#include "evaluator/worker/worker_protocol.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/mpi_world.hpp"
#include "util/subprocess.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

uint64_t job_ticket(const EvalJob& job) { return job.ticket; }
uint64_t job_ticket(const PreparedJob& job) { return job.job.ticket; }

// For the debug log's timeline lines (util/log.hpp, scripts/timeline.py).
const char* job_kind(const EvalOptions& options)
{
    return options.confirm ? "confirm" : options.held_out ? "held_out" : "screen";
}

enum class SlotState { starting, ready, failed, lost };

struct SlotEntry {
    std::unique_ptr<GpuSlot> slot;
    SlotState state = SlotState::starting;
    std::string failure;               // why it failed to start
    bool busy = false;
    EvalClock::time_point idle_since = EvalClock::now();
};

class GpuEvaluator final : public CandidateEvaluator
{
public:
    GpuEvaluator(const Task& task, const EvaluatorConfig& config);
    ~GpuEvaluator() override;

    void submit(EvalJob job) override;
    void withdraw(uint64_t ticket) override;
    std::vector<EvalResult> collect(std::chrono::milliseconds wait) override;
    size_t pending() const override;
    double gpu_busy_fraction() const override;
    std::vector<GpuUsage> gpu_usage() const override;
    Json environment() const override { return m_environment; }
    std::vector<Measurement> baselines() const override { return m_primary->baselines(); }
    std::vector<VendorBaselineStatus> vendor_baselines() const override { return m_primary->vendor(); }
    std::string activity() const override;
    std::string check_program(const std::vector<std::string>& sets) override;

private:
    void add_gpus();
    void add_remote_gpus();
    void add_slot(const VisibleGpu& gpu, const std::string& host, int rank, std::unique_ptr<GpuLink> link);
    void start_slots(const Json& setup);
    void describe_environment();
    void slot_loop(size_t index, Json setup);
    std::optional<size_t> job_for(size_t index) const;
    bool may_run_on(size_t index, const PreparedJob& job) const;
    bool idle_and_allowed(size_t index, const PreparedJob& job) const;
    bool may_take(size_t index, const PreparedJob& job) const;
    void run_job(size_t index, PreparedJob& prepared);
    void serve_earlier_jobs(size_t index, uint64_t ticket);
    void offer_sweep(const std::shared_ptr<SweepBoard>& board);
    std::shared_ptr<SweepBoard> sweep_to_help(size_t index);
    void help_sweep(size_t index, SweepBoard& board);
    void finish_sweep_for_owner(size_t index, SweepBoard& board);
    void deliver(const PreparedJob& prepared, Evaluation evaluation);
    void prepare_loop();
    void finish(uint64_t ticket, Evaluation evaluation);
    void stop_threads();

    const Task& m_task;
    EvaluatorConfig m_config;
    std::map<std::string, std::unique_ptr<MeasurementMemo>> m_memos; // by GPU model; outlives the slots
    std::vector<SlotEntry> m_slots;     // fixed once the constructor returns; guarded by m_mutex
    const GpuSlot* m_primary = nullptr; // the first GPU that started: the run record's device
    std::vector<std::string> m_arches;  // distinct archs of the started GPUs
    Json m_environment;
    std::unique_ptr<CompilePool> m_pool;

    mutable std::mutex m_mutex;
    std::condition_variable m_work_ready;
    std::condition_variable m_done_ready;
    std::deque<EvalJob> m_incoming;
    std::deque<PreparedJob> m_compiled;
    std::vector<std::shared_ptr<SweepBoard>> m_sweeps; // sweeps running, that idle GPUs may help with
    std::vector<EvalResult> m_done;
    std::set<uint64_t> m_withdrawn; // withdrawn while being compiled, running or done
    size_t m_pending = 0;
    bool m_stopping = false;
    std::vector<std::thread> m_threads;
    std::atomic<int64_t> m_compiling{0}; // param points being compiled now
};

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
    start_slots(setup);

    CompilePoolConfig pool;
    pool.workers = config.compile_workers;
    pool.deadline = config.compile_deadline;
    pool.cache_dir = config.cache_dir.empty() ? std::filesystem::path() : config.cache_dir;
    pool.worker_executable = config.worker_executable;
    m_pool = std::make_unique<CompilePool>(pool);
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

// May `job` run on slot `index` at all? Not on a GPU of another model than the one it prefers, while
// a GPU of that model serves.
bool GpuEvaluator::may_run_on(size_t index, const PreparedJob& job) const
{
    const SlotEntry& entry = m_slots[index];
    if (entry.state != SlotState::ready)
        return false;
    const auto& wanted = job.job.options.gpu;
    if (!wanted || entry.slot->identity().name == wanted->name)
        return true;
    return std::none_of(m_slots.begin(), m_slots.end(), [&](const SlotEntry& other) {
        return other.state == SlotState::ready && other.slot->identity().name == wanted->name;
    });
}

bool GpuEvaluator::idle_and_allowed(size_t index, const PreparedJob& job) const
{
    return !m_slots[index].busy && may_run_on(index, job);
}

// May idle slot `index` take `job` now? Not when the GPU the job prefers is idle and is another, nor
// when another idle GPU that may take it has waited longer.
bool GpuEvaluator::may_take(size_t index, const PreparedJob& job) const
{
    if (!idle_and_allowed(index, job))
        return false;
    if (const auto& wanted = job.job.options.gpu) {
        bool preferred = m_slots[index].slot->identity() == *wanted;
        for (size_t i = 0; i < m_slots.size(); ++i)
            if (i != index && idle_and_allowed(i, job) && m_slots[i].slot->identity() == *wanted)
                return false;
        if (preferred)
            return true;
    }
    for (size_t i = 0; i < m_slots.size(); ++i)
        if (i != index && idle_and_allowed(i, job) && m_slots[i].idle_since < m_slots[index].idle_since)
            return false;
    return true;
}

// The waiting job slot `index` should take: the lowest ticket among those it may take.
std::optional<size_t> GpuEvaluator::job_for(size_t index) const
{
    std::optional<size_t> pick;
    for (size_t j = 0; j < m_compiled.size(); ++j)
        if ((!pick || m_compiled[j].job.ticket < m_compiled[*pick].job.ticket) && may_take(index, m_compiled[j]))
            pick = j;
    return pick;
}

// Evaluates `prepared` on slot `index` and reports the result. A lost GPU puts the job back at the
// head of the queue and throws GpuLostError on.
void GpuEvaluator::run_job(size_t index, PreparedJob& prepared)
{
    GpuSlot& slot = *m_slots[index].slot;
    log_debug("timeline {:.3f} {} begin job {} {}", log_clock_s(), slot.identity().label(), prepared.job.ticket,
              job_kind(prepared.job.options));
    std::optional<Evaluation> evaluation;
    try {
        evaluation = slot.evaluate(prepared, [&] { serve_earlier_jobs(index, prepared.job.ticket); },
                                   [&](const std::shared_ptr<SweepBoard>& board) { offer_sweep(board); });
    } catch (const GpuLostError& e) {
        if (!e.job_delivered()) {
            std::lock_guard lock(m_mutex);
            m_compiled.push_front(std::move(prepared));
        }
        throw;
    } catch (const std::exception& e) {
        // The per-candidate wrapper: nothing a candidate does may stop the pipeline.
        evaluation = Evaluation{};
        evaluation->verdict = Verdict{VerdictKind::runtime_error, fmt::format("kforge could not evaluate this "
                                                                              "candidate: {}", e.what())};
    }
    log_debug("timeline {:.3f} {} end job {} {}", log_clock_s(), slot.identity().label(), prepared.job.ticket,
              job_kind(prepared.job.options));
    if (evaluation) // else a helper finished the sweep and delivered it (help_sweep)
        deliver(prepared, std::move(*evaluation));
}

void GpuEvaluator::deliver(const PreparedJob& prepared, Evaluation evaluation)
{
    evaluation.eval_seconds = std::chrono::duration<double>(EvalClock::now() - prepared.started).count();
    finish(prepared.job.ticket, std::move(evaluation));
}

// Between the variants of a sweep on slot `index`: runs here any waiting job with a lower ticket
// than `ticket` (a confirmation of the item the search waits to record, say) that may run on this
// GPU and that no idle GPU could take instead.
void GpuEvaluator::serve_earlier_jobs(size_t index, uint64_t ticket)
{
    for (;;) {
        PreparedJob earlier;
        {
            std::lock_guard lock(m_mutex);
            if (m_stopping)
                return;
            std::optional<size_t> pick;
            for (size_t j = 0; j < m_compiled.size(); ++j) {
                const PreparedJob& job = m_compiled[j];
                if (job.job.ticket >= ticket || (pick && job.job.ticket >= m_compiled[*pick].job.ticket) ||
                    !may_run_on(index, job))
                    continue;
                bool other_idle = false;
                for (size_t i = 0; i < m_slots.size() && !other_idle; ++i)
                    other_idle = i != index && idle_and_allowed(i, job);
                if (!other_idle)
                    pick = j;
            }
            if (!pick)
                return;
            earlier = std::move(m_compiled[*pick]);
            m_compiled.erase(m_compiled.begin() + static_cast<std::ptrdiff_t>(*pick));
        }
        m_work_ready.notify_all(); // this GPU's own sweep is open to idle GPUs meanwhile, final step included
        run_job(index, earlier);
    }
}

// A sweep that has started: idle GPUs of its model may take its variants (sweep_board.hpp).
void GpuEvaluator::offer_sweep(const std::shared_ptr<SweepBoard>& board)
{
    {
        std::lock_guard lock(m_mutex);
        m_sweeps.push_back(board);
    }
    m_work_ready.notify_all();
}

// The sweep idle slot `index` may help with: the lowest ticket among those of its GPU model with a
// variant nobody has claimed. Called with m_mutex held; forgets sweeps with nothing left to claim.
std::shared_ptr<SweepBoard> GpuEvaluator::sweep_to_help(size_t index)
{
    std::erase_if(m_sweeps, [](const std::shared_ptr<SweepBoard>& b) { return b->finished(); });
    if (m_slots[index].state != SlotState::ready)
        return nullptr;
    std::shared_ptr<SweepBoard> pick;
    for (const auto& board : m_sweeps)
        if (board->model() == m_slots[index].slot->identity().name && (!pick || board->ticket() < pick->ticket()) &&
            board->has_helper_work())
            pick = board;
    return pick;
}

// Runs one variant of another GPU's sweep on slot `index`, or, when every variant is done while
// that GPU runs an earlier job, the sweep's final step, delivering the job's evaluation. A lost
// GPU gives the variant or the step back and throws GpuLostError on; any other failure is the
// variant's or the job's verdict.
void GpuEvaluator::help_sweep(size_t index, SweepBoard& board)
{
    std::optional<size_t> claimed = board.claim();
    if (!claimed) {
        if (board.claim_final_step())
            finish_sweep_for_owner(index, board);
        return;
    }
    VariantResult result;
    log_debug("timeline {:.3f} {} begin variant {}:{}", log_clock_s(), m_slots[index].slot->identity().label(),
              board.ticket(), *claimed);
    try {
        result = m_slots[index].slot->screen_variant(board.variant(*claimed), board.plan());
    } catch (const GpuLostError&) {
        board.release(*claimed);
        throw;
    } catch (const std::exception& e) {
        result.params = board.variant(*claimed).params;
        result.from_worker = false;
        result.verdict = Verdict{VerdictKind::runtime_error, fmt::format("kforge could not evaluate this variant: {}", e.what())};
    }
    board.finish(*claimed, std::move(result), true);
    log_debug("timeline {:.3f} {} end variant {}:{}", log_clock_s(), m_slots[index].slot->identity().label(),
              board.ticket(), *claimed);
}

void GpuEvaluator::finish_sweep_for_owner(size_t index, SweepBoard& board)
{
    GpuSlot& slot = *m_slots[index].slot;
    log_debug("timeline {:.3f} {} begin final {}", log_clock_s(), slot.identity().label(), board.ticket());
    Evaluation evaluation;
    try {
        evaluation = slot.finish_sweep(board);
    } catch (const GpuLostError&) {
        board.release_final_step();
        throw;
    } catch (const std::exception& e) {
        evaluation.verdict = Verdict{VerdictKind::runtime_error, fmt::format("kforge could not evaluate this "
                                                                             "candidate: {}", e.what())};
    }
    log_debug("{}: finished the sweep of job {} while its own GPU ran an earlier job", slot.identity().label(),
              board.ticket());
    log_debug("timeline {:.3f} {} end final {}", log_clock_s(), slot.identity().label(), board.ticket());
    deliver(board.job(), std::move(evaluation));
    board.final_step_delivered(); // last: the owner keeps the job alive until now
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

void GpuEvaluator::slot_loop(size_t index, Json setup)
{
    GpuSlot& slot = *m_slots[index].slot;
    std::string failure;
    try {
        slot.start(setup);
    } catch (const std::exception& e) {
        failure = e.what();
    }
    {
        std::lock_guard lock(m_mutex);
        m_slots[index].state = failure.empty() ? SlotState::ready : SlotState::failed;
        m_slots[index].failure = failure;
        m_slots[index].idle_since = EvalClock::now();
    }
    m_work_ready.notify_all();
    while (failure.empty()) {
        PreparedJob prepared;
        std::shared_ptr<SweepBoard> board;
        {
            std::unique_lock lock(m_mutex);
            std::optional<size_t> next;
            auto idle_from = EvalClock::now();
            m_work_ready.wait(lock, [&] {
                if (m_stopping)
                    return true;
                next = job_for(index);
                board = sweep_to_help(index);
                return next || board;
            });
            if (m_stopping)
                break;
            log_debug("{} waited {:.3f} s for work ({} job{} to compile, {} compiled)", slot.identity().label(),
                      std::chrono::duration<double>(EvalClock::now() - idle_from).count(), m_incoming.size(),
                      m_incoming.size() == 1 ? "" : "s", m_compiled.size());
            // Lowest ticket first, between waiting jobs and running sweeps alike: a later job taken
            // while the variants of an earlier sweep wait for its busy GPU holds up the earlier one.
            if (next && board && board->ticket() < m_compiled[*next].job.ticket)
                next.reset();
            if (next) {
                board.reset();
                prepared = std::move(m_compiled[*next]);
                m_compiled.erase(m_compiled.begin() + static_cast<std::ptrdiff_t>(*next));
            }
            m_slots[index].busy = true;
        }
        m_work_ready.notify_all(); // the next idle GPU in line may now take a job
        try {
            if (board)
                help_sweep(index, *board);
            else
                run_job(index, prepared);
        } catch (const GpuLostError& e) {
            log_warn("{}; {} goes back to the other GPUs", e.what(), board ? "the sweep variant it ran" : "its candidate");
            {
                std::lock_guard lock(m_mutex);
                m_slots[index].state = SlotState::lost;
                m_slots[index].busy = false;
                slot.mark_lost();
            }
            m_work_ready.notify_all();
            m_done_ready.notify_all();
            break;
        }
        {
            std::lock_guard lock(m_mutex);
            m_slots[index].busy = false;
            m_slots[index].idle_since = EvalClock::now();
        }
        m_work_ready.notify_all();
    }
    slot.stop(); // on this thread, which started the worker
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

} // namespace

std::unique_ptr<CandidateEvaluator> make_gpu_evaluator(const Task& task, const EvaluatorConfig& config)
{
    return std::make_unique<GpuEvaluator>(task, config);
}

} // namespace kforge
