// Budget accounting; see budget.hpp.
#include "search/budget.hpp"

#include <array>

#include <fmt/format.h>

#include "agents/model_spec.hpp"

namespace kforge {
namespace {

constexpr double k_chars_per_token = 3;
constexpr std::array k_reasons = {StopReason::none,     StopReason::budget,    StopReason::max_calls,
                                  StopReason::max_cost, StopReason::time,      StopReason::patience,
                                  StopReason::exhausted, StopReason::calls_failing, StopReason::interrupted};

} // namespace

std::string_view stop_reason_name(StopReason reason)
{
    switch (reason) {
    case StopReason::none: return "none";
    case StopReason::budget: return "budget";
    case StopReason::max_calls: return "max_calls";
    case StopReason::max_cost: return "max_cost";
    case StopReason::time: return "time";
    case StopReason::patience: return "patience";
    case StopReason::exhausted: return "exhausted";
    case StopReason::calls_failing: return "calls_failing";
    case StopReason::interrupted: return "interrupted";
    }
    return "none";
}

std::optional<StopReason> parse_stop_reason(std::string_view name)
{
    for (StopReason reason : k_reasons)
        if (stop_reason_name(reason) == name)
            return reason;
    return std::nullopt;
}

double estimate_call_cost(const CostModel& model, size_t prompt_chars)
{
    double input_tokens = static_cast<double>(prompt_chars) / k_chars_per_token;
    return input_tokens * model.input_usd_per_token +
           static_cast<double>(model.max_output_tokens) * model.output_usd_per_token;
}

bool is_model_call(const LlmCallRecord& call)
{
    return call.provider != k_provider_builtin;
}

void Ledger::start(int64_t calls, double cost_usd)
{
    m_calls = calls;
    m_cost = cost_usd;
    m_reserved_calls = 0;
    m_reserved_cost = 0;
}

void Ledger::reserve(const WorkItem& item)
{
    m_reserved_calls += item.reserved_calls;
    m_reserved_cost += item.reserved_cost_usd;
}

void Ledger::settle(const WorkItem& item, const std::vector<LlmCallRecord>& calls)
{
    m_reserved_calls -= item.reserved_calls;
    m_reserved_cost -= item.reserved_cost_usd;
    add_orphans(calls);
}

void Ledger::add_orphans(const std::vector<LlmCallRecord>& calls)
{
    for (const auto& call : calls) {
        if (!is_model_call(call))
            continue;
        ++m_calls;
        m_cost += call.cost_usd;
    }
}

StopReason budget_blocks(const Budgets& budgets, const BudgetUse& use, const Ledger& ledger, const WorkItem& next)
{
    if (budgets.max_seconds && use.seconds >= *budgets.max_seconds)
        return StopReason::time;
    if (budgets.patience && use.stale_generations >= *budgets.patience)
        return StopReason::patience;
    if (yields_candidate(next.kind) && use.candidates + 1 > budgets.candidates)
        return StopReason::budget;
    if (budgets.max_calls && ledger.committed_calls() + next.reserved_calls > *budgets.max_calls)
        return StopReason::max_calls;
    // A tolerance of a millionth of a cent keeps float sums from refusing an exact fit.
    if (budgets.max_cost_usd && ledger.committed_cost() + next.reserved_cost_usd > *budgets.max_cost_usd + 1e-8)
        return StopReason::max_cost;
    return StopReason::none;
}

std::string describe_stop(StopReason reason, const Budgets& budgets)
{
    switch (reason) {
    case StopReason::none: return "still running";
    case StopReason::budget: return fmt::format("the budget of {} candidates is used up", budgets.candidates);
    case StopReason::max_calls:
        return fmt::format("the next model call would exceed --max-calls {}", budgets.max_calls.value_or(0));
    case StopReason::max_cost:
        return fmt::format("the next model call could exceed --max-cost ${:.2f}", budgets.max_cost_usd.value_or(0));
    case StopReason::time: return fmt::format("the time limit of {:.0f} s was reached", budgets.max_seconds.value_or(0));
    case StopReason::patience:
        return fmt::format("the best did not improve for {} generations (--patience)", budgets.patience.value_or(0));
    case StopReason::exhausted: return "the proposer produced nothing new many times in a row";
    case StopReason::calls_failing: return "the model could not be reached many times in a row";
    case StopReason::interrupted: return "interrupted";
    }
    return "stopped";
}

} // namespace kforge
