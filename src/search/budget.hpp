// Budgets: what a run may still spend, counting work in flight (DESIGN.md §7, "Budgets").
//
// Every item reserves, when it is scheduled, the calls it may make and an upper estimate of their
// cost (the prompt's size and the largest reply at the priciest model's rates); the reservation
// stands until the item is recorded, when the calls' real costs replace it. An item is scheduled
// only if its reservation fits every budget, so a run never starts a call that could break
// --max-calls or --max-cost. Candidates in flight count against --budget the same way.
//
// Reservations and real costs both enter at the moments items are scheduled and recorded, which
// the search orders deterministically, so budget decisions do not depend on thread timing (wall
// time aside).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/records.hpp"
#include "search/search_config.hpp"
#include "search/work_item.hpp"

namespace kforge {

enum class StopReason {
    none,
    budget,        // --budget candidates scheduled
    max_calls,
    max_cost,
    time,
    patience,
    exhausted,     // the proposer keeps producing nothing new
    calls_failing, // the model could not be reached, many times in a row
    interrupted,   // Ctrl-C (or SIGTERM)
};
std::string_view stop_reason_name(StopReason reason);
std::optional<StopReason> parse_stop_reason(std::string_view name);

// Prices for reserving money (US dollars per token), from the most expensive model of the mix.
struct CostModel {
    double input_usd_per_token = 0;
    double output_usd_per_token = 0;
    int64_t max_output_tokens = 0;
    bool models = false;  // the proposer calls language models (false: the builtin proposer)
};

// An upper estimate of one call whose prompt has `prompt_chars` characters (3 characters a token,
// the largest reply).
double estimate_call_cost(const CostModel& model, size_t prompt_chars);

// Whether a call record counts as a language-model call (the builtin proposer's records do not).
bool is_model_call(const LlmCallRecord& call);

// Calls and dollars recorded so far plus the reservations of items in flight.
class Ledger
{
public:
    // What the archive recorded before this session (resumed runs).
    void start(int64_t calls, double cost_usd);
    void reserve(const WorkItem& item);
    // The item was recorded: its reservation goes, the real calls come.
    void settle(const WorkItem& item, const std::vector<LlmCallRecord>& calls);
    // Calls that were made but belong to no recorded item (an interrupted proposal).
    void add_orphans(const std::vector<LlmCallRecord>& calls);

    int64_t committed_calls() const { return m_calls + m_reserved_calls; }
    double committed_cost() const { return m_cost + m_reserved_cost; }
    int64_t spent_calls() const { return m_calls; }
    double spent_cost() const { return m_cost; }

private:
    int64_t m_calls = 0;
    double m_cost = 0;
    int64_t m_reserved_calls = 0;
    double m_reserved_cost = 0;
};

struct BudgetUse {
    int64_t candidates = 0; // scheduled: recorded and in flight
    double seconds = 0;     // wall time of this session
    int stale_generations = 0;
};

// What stops scheduling `next` now, or StopReason::none. max_calls and max_cost mean "not now":
// the item may fit once items in flight settle below their reservations.
StopReason budget_blocks(const Budgets& budgets, const BudgetUse& use, const Ledger& ledger, const WorkItem& next);

// One line describing why the run stopped, for logs and the summary.
std::string describe_stop(StopReason reason, const Budgets& budgets);

} // namespace kforge
