// A sweep's variants on a board that idle GPUs of the same model help with; see sweep_board.hpp.
#include "evaluator/sweep_board.hpp"

#include <algorithm>

namespace kforge {

SweepBoard::SweepBoard(std::vector<const Variant*> variants, const Plan& plan, std::string model, uint64_t ticket)
    : m_variants(std::move(variants)), m_plan(plan), m_model(std::move(model)), m_ticket(ticket),
      m_state(m_variants.size(), State::unclaimed), m_results(m_variants.size())
{
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
    auto all_done = [this] { return std::all_of(m_state.begin(), m_state.end(), [](State s) { return s == State::done; }); };
    auto some_unclaimed = [this] { return std::find(m_state.begin(), m_state.end(), State::unclaimed) != m_state.end(); };
    m_changed.wait(lock, [&] { return all_done() || some_unclaimed(); });
    return all_done();
}

bool SweepBoard::has_unclaimed() const
{
    std::lock_guard lock(m_mutex);
    return !m_abandoned && std::find(m_state.begin(), m_state.end(), State::unclaimed) != m_state.end();
}

void SweepBoard::abandon()
{
    {
        std::lock_guard lock(m_mutex);
        m_abandoned = true;
    }
    m_changed.notify_all();
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
