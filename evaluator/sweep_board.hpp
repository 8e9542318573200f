// The variants of one param sweep, shared between the GPU that runs the sweep and idle GPUs of the
// same model that help with it (evaluator-internal; gpu_evaluator.cpp, gpu_slot_evaluate.cpp).
//
// Why. A GPU evaluates a candidate whole, its sweep variant by variant. When fewer candidates are
// waiting than there are GPUs (the end of a run, a search whose next items wait for the one at the
// head of the line), whole GPUs sat idle while one of them worked through a sweep alone. A sweep
// only chooses the param point: its screen numbers are compared with each other and the winner is
// timed again, to the requested standard, on the sweep's own GPU; GPUs of one model stand in for
// each other (the measurement memo already relies on it). So an idle GPU of the same model takes
// variants off the board, one at a time, and the results are read back in variant order: which GPU
// ran a variant changes nothing in what the sweep decides.
//
// Thread-safe. A variant is unclaimed, claimed (running somewhere) or done; a helper whose GPU is lost
// gives its variant back, and the sweep's own GPU runs it.
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

class SweepBoard
{
public:
    // `variants` and `plan` must outlive the board's use (the sweep's job owns them); `model` is the
    // GPU model name whose GPUs may help; `ticket` orders boards (the lowest is helped first).
    SweepBoard(std::vector<const Variant*> variants, const Plan& plan, std::string model, uint64_t ticket);

    // The next unclaimed variant, now claimed; nullopt when none is left.
    std::optional<size_t> claim();
    // `helper`: run by a GPU other than the sweep's own.
    void finish(size_t index, VariantResult result, bool helper);
    // A claimed variant goes back unrun (its helper's GPU was lost).
    void release(size_t index);
    // Waits until every variant is done (true) or one is unclaimed again (false).
    bool wait_done_or_released();
    bool has_unclaimed() const;
    // The sweep's own GPU gave up (it was lost): nothing more is claimed.
    void abandon();
    // Every result, in variant order; call once all are done.
    std::vector<VariantResult> results() const;

    const Variant& variant(size_t index) const { return *m_variants[index]; }
    const Plan& plan() const { return m_plan; }
    const std::string& model() const { return m_model; }
    uint64_t ticket() const { return m_ticket; }
    // Variants run by GPUs other than the sweep's own.
    size_t helped() const;

private:
    enum class State { unclaimed, claimed, done };
    std::vector<const Variant*> m_variants;
    const Plan& m_plan;
    std::string m_model;
    uint64_t m_ticket;
    mutable std::mutex m_mutex;
    std::condition_variable m_changed;
    std::vector<State> m_state;
    std::vector<std::optional<VariantResult>> m_results;
    size_t m_helped = 0;
    bool m_abandoned = false;
};

} // namespace kforge
