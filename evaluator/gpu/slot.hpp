// One GPU of a session, as the GPU evaluator drives it (evaluator-internal).
//
// A slot owns the line to its GPU's worker (gpu/link.hpp), the device's facts, and the baselines
// it timed itself when it started. It evaluates a whole candidate — the param sweep, the final
// timing to the requested standard, held-out shapes, the comparison with the reference — so every
// number of one evaluation comes from one GPU and its fitness from that GPU's own baselines.
//
// Failures of the line are kept apart from the candidate's: a worker that dies under a candidate
// runs it again once on a fresh worker before the crash counts against the candidate (a GPU worker
// can be killed from outside: the OOM killer, a user); a worker that cannot be started again after
// three tries, or a line that is lost (its MPI rank died), throws GpuLostError, and the evaluator
// puts the candidate back in the queue for another GPU.
//
// Every variant run goes through the measurement memo of the slot's GPU model
// (measurement_memo.hpp): a (binary, plan, params) point measured before, on this GPU or another
// of the same model, is not measured again.
//
// On a GPU shared with other runs (EvaluatorConfig::gpu_share_dir, worker/gpu_share.hpp) the slot's
// busy time leaves out what its worker waited for the measuring lock, and when runs search in turns
// (EvaluatorConfig::gpu_searches) it takes one of the GPU's turns after its baselines and keeps it
// until stop().
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/candidate.hpp"
#include "core/records.hpp"
#include "core/task.hpp"
#include "evaluator/compile/compile.hpp"
#include "evaluator/worker/device_facts.hpp"
#include "evaluator/evaluator.hpp"
#include "evaluator/gpu/link.hpp"
#include "evaluator/measurement_memo.hpp"
#include "evaluator/gpu/sweep_board.hpp"
#include "util/file_lock.hpp"

namespace kforge {

using EvalClock = std::chrono::steady_clock;

// One param point of a candidate, compiled for one arch.
struct Variant {
    ParamPoint params;
    CompileResult compiled;
    std::string memo_key; // MeasurementMemo::key_for (empty when it did not compile)
    Json origin;          // the job, as reuses of its measurements cite it
};

// A job after plan validation, screening and compiling, waiting for a GPU.
struct PreparedJob {
    EvalJob job;
    EvalClock::time_point started;
    std::optional<Verdict> early_failure; // no_code, plan_error or compile_error before the GPU
    Plan plan;
    std::map<std::string, std::vector<Variant>> variants; // by arch: every param point swept
    Json param_points;           // ParamSweep::to_json(): set when the sweep is a sample
};

// The line to a GPU is gone for good; the job that was running goes back to the queue, unless
// another GPU already delivered its evaluation (`job_delivered`: a sweep's final step taken over
// while this GPU ran an earlier job; sweep_board.hpp).
class GpuLostError : public std::runtime_error
{
public:
    explicit GpuLostError(const std::string& what, bool job_delivered = false)
        : std::runtime_error(what), m_job_delivered(job_delivered)
    {
    }
    bool job_delivered() const { return m_job_delivered; }

private:
    bool m_job_delivered = false;
};

// The arch a session compiles for on a GPU described by `facts`: --arch when given, else the GPU's.
inline std::string session_arch(const EvaluatorConfig& config, const DeviceFacts& facts)
{
    return config.arch.empty() ? facts.arch() : config.arch;
}

class GpuSlot
{
public:
    // `memo` is shared by the session's GPUs of this one's model and outlives the slot.
    GpuSlot(const Task& task, const EvaluatorConfig& config, GpuIdentity identity, std::unique_ptr<GpuLink> link,
            MeasurementMemo& memo);

    // Asks the worker for its device, sets it up with `setup` (replayed to every later worker) and
    // times the baselines; on a GPU shared in turns, then waits for a search turn (however long: the
    // run before it on this GPU searches meanwhile; Ctrl-C ends the wait). Call it on the thread that will use the slot: a local worker dies with
    // the thread that started it. Throws Error(runtime) naming the GPU when any step fails. The
    // reference's baseline timing goes into the memo as its own point's timing.
    void start(const Json& setup);
    // The whole evaluation of one compiled candidate. Failures of the candidate are verdicts;
    // throws GpuLostError when the GPU stops serving (see above). `between_variants` runs before
    // each variant of a sweep this slot runs after its first (the evaluator serves jobs with lower
    // tickets there); `offer_sweep` is handed the board of a sweep as it starts, so that idle GPUs
    // of this model may take some of its variants, and its final step while this slot is away in
    // `between_variants` (sweep_board.hpp). Nullopt when a helper did the final step and delivered
    // the evaluation itself.
    std::optional<Evaluation> evaluate(const PreparedJob& prepared, const std::function<void()>& between_variants = {},
                                       const std::function<void(const std::shared_ptr<SweepBoard>&)>& offer_sweep = {});
    // One variant of another slot's sweep (verify the tests shapes, screen timing), on this GPU.
    // Throws GpuLostError when the GPU stops serving.
    VariantResult screen_variant(const Variant& variant, const Plan& plan);
    // The final step of another slot's sweep whose variants are all done (the winner timed to the
    // requested standard, on this GPU, against this GPU's baselines): the job's evaluation. Throws
    // GpuLostError when the GPU stops serving.
    Evaluation finish_sweep(const SweepBoard& board);
    // Ends the worker.
    void stop();

    const GpuIdentity& identity() const { return m_identity; }
    const DeviceFacts& facts() const { return m_facts; }
    // The arch candidates are compiled for on this GPU (the run's --arch, else the device's).
    const std::string& arch() const { return m_arch; }
    const std::vector<Measurement>& baselines() const { return m_baselines; }
    const std::vector<VendorBaselineStatus>& vendor() const { return m_vendor; }
    const Json& vendor_library() const { return m_vendor_library; }
    const Json& setup_reply() const { return m_link->setup_reply(); }
    // PyTorch-program tasks: the program's own outputs against the expected ones on these shape
    // sets ("tests", "bench", "held_out"): "" when it passes. Only while the slot runs no job.
    std::string check_program(const std::vector<std::string>& sets);

    // Safe from any thread.
    GpuUsage usage() const;
    bool lost() const { return m_lost.load(); }
    void mark_lost() { m_lost = true; m_lost_at_ns = since_start_ns(); }

private:
    // Which of a job's variants compiled for this slot's arch, and the compile record.
    struct CompiledVariants {
        std::vector<const Variant*> compiled;
        Json info;
        std::optional<Verdict> failure; // nothing compiled, or not for this arch
    };
    CompiledVariants compiled_variants(const PreparedJob& prepared) const;
    // The sweep's winner timed to the job's standard and the evaluation built around it.
    Evaluation time_winner(const PreparedJob& prepared, const CompiledVariants& variants,
                           std::vector<VariantResult> results);
    Evaluation complete(const PreparedJob& prepared, const CompiledVariants& variants, std::vector<VariantResult> results,
                        const Variant* best, double best_fitness) const;
    // Through the memo, which sends to the worker (measure_variant) only what it cannot answer.
    VariantResult run_variant(const Variant& variant, const Plan& plan, bool verify_tests, const std::string& timing,
                              bool held_out, bool profile = false);
    VariantResult measure_variant(const Variant& variant, const Plan& plan, const VariantAsk& ask);
    WorkerReply request_variant(const Json& request);
    WorkerReply send(const Json& request, std::chrono::milliseconds deadline);
    void time_baselines();
    void take_search_turn();
    Json baseline_summary(const Evaluation& evaluation) const;
    void describe(const PreparedJob& prepared, const Variant& best, const Json& resources, Evaluation& evaluation) const;
    int64_t since_start_ns() const;

    const Task& m_task;
    const EvaluatorConfig& m_config;
    GpuIdentity m_identity;
    std::unique_ptr<GpuLink> m_link;
    MeasurementMemo& m_memo;
    DeviceFacts m_facts;
    std::string m_arch;
    std::vector<Measurement> m_baselines;
    std::vector<VendorBaselineStatus> m_vendor;
    Json m_vendor_library = Json::object();

    EvalClock::time_point m_joined = EvalClock::now();
    std::atomic<int64_t> m_busy_ns{0};
    std::atomic<int64_t> m_lock_wait_ns{0};
    FileLock m_search_turn;
    std::atomic<int64_t> m_evaluations{0};
    std::atomic<int> m_restarts{0};
    std::atomic<bool> m_lost{false};
    std::atomic<int64_t> m_lost_at_ns{0};
};

// Geomean over the candidate's bench measurements of baseline time / candidate time, the baseline
// being `subject` ("reference" or a vendor routine); 0 when a shape lacks that baseline.
double geomean_speedup(const std::vector<Measurement>& candidate, const std::vector<Measurement>& baseline,
                       const std::string& subject = "reference");

} // namespace kforge
