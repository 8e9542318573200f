// The GPU evaluator's class (evaluator-internal; callers get it through make_gpu_evaluator in
// evaluator.hpp). Its members live in two files: gpu/evaluator.cpp, the lifecycle (the slots'
// start, the environment, the prepare threads, shutting down) and the CandidateEvaluator interface;
// gpu/schedule.cpp, the GPU threads and the scheduling policy this header states.
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
//
// Threads. m_mutex guards the queues, the sweeps and the slots' states: a member that says "with
// m_mutex held" is called under it, the others take it themselves. m_slots is fixed once the
// constructor returns.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/task.hpp"
#include "evaluator/compile/compile.hpp"
#include "evaluator/evaluator.hpp"
#include "evaluator/gpu/devices.hpp"
#include "evaluator/gpu/link.hpp"
#include "evaluator/gpu/slot.hpp"
#include "evaluator/measurement_memo.hpp"
#include "evaluator/gpu/sweep_board.hpp"

namespace kforge {

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
    enum class SlotState { starting, ready, failed, lost };

    struct SlotEntry {
        std::unique_ptr<GpuSlot> slot;
        SlotState state = SlotState::starting;
        std::string failure;               // why it failed to start
        bool busy = false;
        EvalClock::time_point idle_since = EvalClock::now();
    };

    // --- lifecycle (gpu/evaluator.cpp) ---
    void add_gpus();
    void add_remote_gpus();
    void add_slot(const VisibleGpu& gpu, const std::string& host, int rank, std::unique_ptr<GpuLink> link);
    void start_slots(const Json& setup);
    void describe_environment();
    void prepare_loop();
    void finish(uint64_t ticket, Evaluation evaluation);
    void stop_threads();

    // --- the GPU threads and the scheduling policy (gpu/schedule.cpp) ---
    // Slot `index`'s thread: starts its worker, then takes work by the policy above until the
    // evaluator stops or the GPU is lost.
    void slot_loop(size_t index, Json setup);
    // The policy's decisions, with m_mutex held: the waiting job an idle slot takes (lowest ticket
    // among those it may take), whether a job may run on a slot at all (its preferred GPU's model),
    // whether an idle slot may take it now (the preferred GPU first, then the one idle longest).
    std::optional<size_t> job_for(size_t index) const;
    bool may_run_on(size_t index, const PreparedJob& job) const;
    bool idle_and_allowed(size_t index, const PreparedJob& job) const;
    bool may_take(size_t index, const PreparedJob& job) const;
    // Runs a job whole on slot `index` and delivers its evaluation; between its sweep's variants
    // the slot serves earlier jobs that no idle GPU could take, and offers its sweep to idle GPUs.
    void run_job(size_t index, PreparedJob& prepared);
    void serve_earlier_jobs(size_t index, uint64_t ticket);
    void offer_sweep(const std::shared_ptr<SweepBoard>& board);
    // With m_mutex held: the running sweep an idle slot helps with (lowest ticket of its model).
    std::shared_ptr<SweepBoard> sweep_to_help(size_t index);
    // A helper's share of another GPU's sweep: one variant, or the final step while the sweep's
    // own GPU runs an earlier job (the handoff), which delivers the job's evaluation.
    void help_sweep(size_t index, SweepBoard& board);
    void finish_sweep_for_owner(size_t index, SweepBoard& board);
    void deliver(const PreparedJob& prepared, Evaluation evaluation);
    // A GPU waited `seconds` for work while compiles waited for a free worker (m_mutex held).
    void note_compile_starved(double seconds);

    const Task& m_task;
    EvaluatorConfig m_config;
    std::map<std::string, std::unique_ptr<MeasurementMemo>> m_memos; // by GPU model; outlives the slots
    std::vector<SlotEntry> m_slots;     // fixed once the constructor returns; guarded by m_mutex
    const GpuSlot* m_primary = nullptr; // the first GPU that started: the run record's device
    std::vector<std::string> m_arches;  // distinct archs of the started GPUs
    std::vector<std::string> m_visible_arches; // distinct archs of the GPUs chosen, before they start
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
    EvalClock::time_point m_started = EvalClock::now();
    size_t m_usable_cpus = 0;            // read once, at the start (util/host_resources.hpp)
    double m_compile_starved_s = 0;      // GPU-seconds idle while compiles were queued; m_mutex
    bool m_compile_hint_given = false;
};

} // namespace kforge
