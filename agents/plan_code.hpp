// The two-phase step: a planner model plans, then a coder model writes the kernel.
//
// Phase 1 (request_plan) shows the planner the task, the GPU, the parent's source with its measured
// times, profile and resources, the task's optimisation menu, how each technique has done on this
// category of tasks, schedules that worked on earlier tasks, the lessons, the island's strategy and
// the technique the search suggests, and asks for a plan as JSON (plan_reply.hpp). A reply that
// cannot be read is fixed locally where that is safe, else the planner is asked once more with the
// problem named; what still cannot be read is a failed plan whose problem says why. Phase 2
// (request_code) shows the coder the task, the GPU, the parent and the plan, and reads its reply as
// a proposal, exactly as a one-phase proposal is read.
//
// The search runs the phases as separate steps (the plan is saved in between, so a run killed
// between them resumes with phase 2). Like proposals, nothing here throws for a failed call or a bad
// reply; a rejected API key throws kforge::Error.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agents/menu.hpp"
#include "agents/prompt_builder.hpp"
#include "agents/prompt_library.hpp"
#include "agents/provider.hpp"
#include "core/technique.hpp"

namespace kforge {

// One row of the statistics the planner is shown.
struct TechniqueStatRow {
    std::string id;
    std::string title;
    TechniqueTally tally;
};

struct PlanRequest {
    ProposalContext context;               // the planner sees its lessons, strategy and target too
    Menu menu;
    std::vector<TechniqueStatRow> stats;   // empty: the section is left out
    std::string stats_scope;               // where the numbers come from, in one line
    std::vector<Schedule> schedules;       // earlier runs' chains to their best (empty: none shown)
    std::string focus;                     // the technique id the search suggests ("" for none)
    std::string focus_reason;
};

struct PlanOutcome {
    std::optional<TechniquePlan> plan;
    PlanStatus status = PlanStatus::failed;
    std::string problem;                   // failed: why; repaired: what was wrong at first
    std::vector<LlmCallRecord> calls;      // in order
    bool call_failed = false;              // the planner could not be reached (not a bad plan)
};

Prompt build_plan_prompt(const PromptLibrary& library, const PlanRequest& request, PromptTrim trim);
// The prompt that asks the planner once more, quoting its unreadable `reply` and the `problem`.
Prompt build_plan_repair_prompt(const PromptLibrary& library, const PlanRequest& request, const std::string& reply,
                                const std::string& problem);
// Phase 1: at most three calls (a shorter prompt when the first does not fit the context window,
// one repair). The calls' purpose is `plan`.
PlanOutcome request_plan(Provider& planner, const PromptLibrary& library, const PlanRequest& request);

Prompt build_code_prompt(const PromptLibrary& library, const ProposalContext& context, const Menu& menu,
                         const TechniquePlan& plan);
// Phase 2: one call of purpose `code`; the proposal's origin is llm.
Proposal request_code(Provider& coder, const PromptLibrary& library, const ProposalContext& context, const Menu& menu,
                      const TechniquePlan& plan);

// The section texts, for `kforge propose --print-prompt` and the tests.
std::string describe_menu_items(const Menu& menu);
std::string describe_technique_stats(const std::vector<TechniqueStatRow>& rows);
std::string describe_schedules(const std::vector<Schedule>& schedules);
std::string describe_plan_techniques(const TechniquePlan& plan, const Menu& menu);

} // namespace kforge
