// A sweep's variants and final step on a board that idle GPUs of the same model help with; see
// sweep_board.hpp.
#include "evaluator/gpu/sweep_board.hpp"

#include <algorithm>

#include "evaluator/gpu/slot.hpp"

namespace kforge {

SweepBoard::SweepBoard(std::vector<const Variant*> variants, const PreparedJob& job, std::string model, uint64_t ticket)
    : m_variants(std::move(variants)), m_job(job), m_model(std::move(model)), m_ticket(ticket),
      m_state(m_variants.size(), State::unclaimed), m_results(m_variants.size())
{
}

const Plan& SweepBoard::plan() const
{
    return m_job.plan;
}

bool SweepBoard::all_done() const
{
    return std::all_of(m_state.begin(), m_state.end(), [](State s) { return s == State::done; });
}

bool SweepBoard::final_step_open() const
{
    return !m_abandoned && m_owner_away && m_final == FinalStep::open && all_done();
}

std::optional<size_t> SweepBoard::claim()
{
    std::lock_guard lock(m_mutex);
    auto it = std::find(m_state.begin(), m_state.end(), State::unclaimed);
    if (m_abandoned || it == m_state.end())
        return std::nullopt;
    *it = State::claimed;
    return static_cast<size_t>(it - m_state.begin());
}

void SweepBoard::finish(size_t index, VariantResult result, bool helper)
{
    {
        std::lock_guard lock(m_mutex);
        m_results[index] = std::move(result);
        m_state[index] = State::done;
        m_helped += helper ? 1 : 0;
    }
    m_changed.notify_all();
}

void SweepBoard::release(size_t index)
{
    {
        std::lock_guard lock(m_mutex);
        m_state[index] = State::unclaimed;
    }
    m_changed.notify_all();
}

bool SweepBoard::wait_done_or_released()
{
    std::unique_lock lock(m_mutex);
    auto some_unclaimed = [this] { return std::find(m_state.begin(), m_state.end(), State::unclaimed) != m_state.end(); };
    m_changed.wait(lock, [&] { return all_done() || some_unclaimed(); });
    return all_done();
}

bool SweepBoard::has_unclaimed() const
{
    std::lock_guard lock(m_mutex);
    return !m_abandoned && std::find(m_state.begin(), m_state.end(), State::unclaimed) != m_state.end();
}

bool SweepBoard::has_helper_work() const
{
    std::lock_guard lock(m_mutex);
    if (m_abandoned)
        return false;
    return std::find(m_state.begin(), m_state.end(), State::unclaimed) != m_state.end() || final_step_open();
}

void SweepBoard::set_owner_away(bool away)
{
    std::lock_guard lock(m_mutex);
    m_owner_away = away;
}

bool SweepBoard::claim_final_step()
{
    std::lock_guard lock(m_mutex);
    if (!final_step_open())
        return false;
    m_final = FinalStep::helper;
    return true;
}

void SweepBoard::final_step_delivered()
{
    {
        std::lock_guard lock(m_mutex);
        m_final = FinalStep::delivered;
    }
    m_changed.notify_all();
}

void SweepBoard::release_final_step()
{
    {
        std::lock_guard lock(m_mutex);
        m_final = FinalStep::open;
    }
    m_changed.notify_all();
}

bool SweepBoard::take_final_step()
{
    std::unique_lock lock(m_mutex);
    m_changed.wait(lock, [this] { return m_final != FinalStep::helper; });
    if (m_final == FinalStep::delivered)
        return false;
    m_final = FinalStep::owner;
    return true;
}

bool SweepBoard::abandon()
{
    std::unique_lock lock(m_mutex);
    m_abandoned = true;
    m_changed.notify_all();
    m_changed.wait(lock, [this] { return m_final != FinalStep::helper; });
    return m_final == FinalStep::delivered;
}

bool SweepBoard::finished() const
{
    std::lock_guard lock(m_mutex);
    return m_abandoned || m_final == FinalStep::owner || m_final == FinalStep::delivered;
}

std::vector<VariantResult> SweepBoard::results() const
{
    std::lock_guard lock(m_mutex);
    std::vector<VariantResult> all;
    for (const auto& result : m_results)
        all.push_back(result.value_or(VariantResult{}));
    return all;
}

size_t SweepBoard::helped() const
{
    std::lock_guard lock(m_mutex);
    return m_helped;
}

} // namespace kforge
