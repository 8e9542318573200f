// The variants of one param sweep, shared between the GPU that runs the sweep and idle GPUs of the
// same model that help with it (evaluator-internal; gpu/schedule.cpp, gpu/slot_evaluate.cpp).
//
// Why. A GPU evaluates a candidate whole, its sweep variant by variant. When fewer candidates are
// waiting than there are GPUs (the end of a run, a search whose next items wait for the one at the
// head of the line), whole GPUs sat idle while one of them worked through a sweep alone. A sweep
// only chooses the param point: its screen numbers are compared with each other and the winner is
// timed again, to the requested standard; GPUs of one model stand in for each other (the
// measurement memo already relies on it). So an idle GPU of the same model takes variants off the
// board, one at a time, and the results are read back in variant order: which GPU ran a variant
// changes nothing in what the sweep decides.
//
// The final step. Between its variants the sweep's own GPU may leave to run an earlier job (the
// confirmation the search waits for, say; gpu/schedule.cpp). Such a job can take seconds, and on
// two GPUs the other one then finished the variants and idled, or took later work, while the sweep
// waited for its owner to time the winner: on a real two-GPU run the job behind it held up every
// record after it. So while the owner is away, the final step itself (timing the winner, the
// evaluation) is on the board too: a helper that finds every variant done claims it, runs it on its
// own GPU and delivers the evaluation; the owner, back, finds it delivered. Whoever claims the final
// step first does it; the owner claims it as soon as it is back.
//
// Thread-safe. A variant is unclaimed, claimed (running somewhere) or done; so is the final step. A
// helper whose GPU is lost gives its variant or the final step back, and the sweep's own GPU runs it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "evaluator/measurement_memo.hpp"

namespace kforge {

struct Variant;
struct PreparedJob;

class SweepBoard
{
public:
    // `variants` and `job` (whose plan the variants run) must outlive the board's use: the sweep's
    // owner keeps the job until the board is done with, final step included. `model` is the GPU
    // model name whose GPUs may help; `ticket` orders boards (the lowest is helped first).
    SweepBoard(std::vector<const Variant*> variants, const PreparedJob& job, std::string model, uint64_t ticket);

    // The next unclaimed variant, now claimed; nullopt when none is left.
    std::optional<size_t> claim();
    // `helper`: run by a GPU other than the sweep's own.
    void finish(size_t index, VariantResult result, bool helper);
    // A claimed variant goes back unrun (its helper's GPU was lost).
    void release(size_t index);
    // Waits until every variant is done (true) or one is unclaimed again (false).
    bool wait_done_or_released();
    bool has_unclaimed() const;
    // Anything a helper may take now: an unclaimed variant, or the final step (see final_step_open).
    bool has_helper_work() const;

    // The owner leaves to run another job between its variants (true) and is back (false).
    void set_owner_away(bool away);
    // A helper claims the final step: only while the owner is away, every variant is done and
    // nobody has claimed it. True when it is now the caller's to run.
    bool claim_final_step();
    // The helper's final step is delivered (its evaluation handed to the evaluator).
    void final_step_delivered();
    // The helper's GPU was lost before delivering: the final step goes back to the owner.
    void release_final_step();
    // The owner, back with every variant done: true when the final step is now its own, false when
    // a helper delivered it (waits while a helper runs it).
    bool take_final_step();

    // The sweep's own GPU gave up (it was lost): nothing more is claimed. Waits while a helper runs
    // the final step; true when a helper delivered it (the job is done, not to be run again).
    bool abandon();
    // Nothing more will ever be claimed: the final step is the owner's or delivered, or the sweep
    // was abandoned.
    bool finished() const;
    // Every result, in variant order; call once all are done.
    std::vector<VariantResult> results() const;

    const Variant& variant(size_t index) const { return *m_variants[index]; }
    const std::vector<const Variant*>& variants() const { return m_variants; }
    const PreparedJob& job() const { return m_job; }
    const Plan& plan() const;
    const std::string& model() const { return m_model; }
    uint64_t ticket() const { return m_ticket; }
    // Variants run by GPUs other than the sweep's own.
    size_t helped() const;

private:
    enum class State { unclaimed, claimed, done };
    bool all_done() const; // m_mutex held
    bool final_step_open() const; // m_mutex held

    std::vector<const Variant*> m_variants;
    const PreparedJob& m_job;
    std::string m_model;
    uint64_t m_ticket;
    mutable std::mutex m_mutex;
    std::condition_variable m_changed;
    std::vector<State> m_state;
    std::vector<std::optional<VariantResult>> m_results;
    size_t m_helped = 0;
    bool m_abandoned = false;
    bool m_owner_away = false;
    enum class FinalStep { open, helper, delivered, owner };
    FinalStep m_final = FinalStep::open;
};

} // namespace kforge
