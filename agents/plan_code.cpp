// The planner's and the coder's prompts and calls; see plan_code.hpp.
//
// The planner's prompt carries no inspirations: it decides what to change in one kernel from that
// kernel's measurements, and the statistics and schedules stand for what other kernels taught. The
// coder's prompt carries no lessons or menu: it gets the plan, which already chose among them.
#include "agents/plan_code.hpp"

#include <fmt/format.h>

#include "agents/llm_proposer.hpp"
#include "agents/plan_reply.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

std::string speedup_text(const std::optional<double>& value)
{
    return value ? fmt::format("{:.2f}x", *value) : "-";
}

std::string count_text(int64_t count, int64_t tried)
{
    return tried == 0 ? "-" : std::to_string(count);
}

std::string render_stats(const PromptLibrary& library, const PlanRequest& request)
{
    if (request.stats.empty())
        return "";
    return library.render(PromptId::section_technique_stats, {{"category", request.context.task.category},
                                                              {"scope", request.stats_scope},
                                                              {"rows", describe_technique_stats(request.stats)}});
}

std::string render_focus(const PromptLibrary& library, const PlanRequest& request)
{
    if (request.focus.empty())
        return "";
    const MenuItem* item = request.menu.find(request.focus);
    return library.render(PromptId::section_focus, {{"technique", request.focus},
                                                    {"title", item ? item->title : ""},
                                                    {"reason", request.focus_reason}});
}

std::string menu_ids(const Menu& menu)
{
    std::vector<std::string> ids;
    for (const auto& item : menu.items)
        ids.push_back(item.id);
    return join(ids, ", ");
}

std::string call_failure(const ChatResult& result, std::string_view who)
{
    std::string advice = result.context_exceeded
                             ? " The prompt does not fit the model's context window: use a model with a larger "
                               "window or a smaller parent kernel."
                             : "";
    return fmt::format("The {} call failed: {}{}", who, result.record.error, advice);
}

} // namespace

std::string describe_menu_items(const Menu& menu)
{
    std::vector<std::string> lines;
    for (const auto& item : menu.items) {
        std::string text = fmt::format("- {}: {}\n  When: {}", item.id, item.title, item.when);
        if (!item.profile.empty())
            text += "\n  Profile: " + item.profile;
        lines.push_back(text);
    }
    return join(lines, "\n");
}

std::string describe_technique_stats(const std::vector<TechniqueStatRow>& rows)
{
    size_t width = 9;
    for (const auto& row : rows)
        width = std::max(width, row.id.size());
    std::vector<std::string> lines{fmt::format("{:<{}}  {:>5}  {:>7}  {:>8}  {:>6}  {:>9}  {:>8}", "technique", width,
                                               "tried", "correct", "improved", "gain", "predicted", "measured")};
    for (const auto& row : rows) {
        const TechniqueTally& t = row.tally;
        lines.push_back(fmt::format("{:<{}}  {:>5}  {:>7}  {:>8}  {:>6}  {:>9}  {:>8}", row.id, width, t.tried,
                                    count_text(t.correct, t.tried), count_text(t.improved, t.tried),
                                    speedup_text(t.mean_gain()), speedup_text(t.mean_predicted()),
                                    speedup_text(t.mean_measured())));
    }
    return join(lines, "\n");
}

std::string describe_schedules(const std::vector<Schedule>& schedules)
{
    std::vector<std::string> lines;
    for (const auto& schedule : schedules)
        lines.push_back(fmt::format("- {} ({:.2f}x over its start): {}", schedule.task_name, schedule.speedup,
                                    schedule.describe()));
    return join(lines, "\n");
}

std::string describe_plan_techniques(const TechniquePlan& plan, const Menu& menu)
{
    std::vector<std::string> lines;
    for (const auto& choice : plan.techniques) {
        if (const MenuItem* item = choice.on_menu ? menu.find(choice.id) : nullptr)
            lines.push_back(fmt::format("- {}: {} (applies when: {})", item->id, item->title, item->when));
        else
            lines.push_back(fmt::format("- {} (a technique of the planner's own): {}", choice.id, choice.title));
    }
    return join(lines, "\n");
}

Prompt build_plan_prompt(const PromptLibrary& library, const PlanRequest& request, PromptTrim trim)
{
    const ProposalContext& context = request.context;
    Prompt prompt;
    prompt.system = library.render(PromptId::plan_system, {});
    std::string schedules = request.schedules.empty() ? "" : describe_schedules(request.schedules);
    prompt.user = library.render(
        PromptId::plan_user,
        {{"task", render_task_section(library, context)},
         {"hardware", render_hardware_section(library, context.hardware)},
         {"parent", context.parent ? render_parent_section(library, *context.parent) : ""},
         {"menu", library.render(PromptId::section_menu, {{"name", request.menu.name},
                                                          {"title", request.menu.title},
                                                          {"items", describe_menu_items(request.menu)}})},
         {"stats", render_stats(library, request)},
         {"schedules", schedules.empty() ? "" : library.render(PromptId::section_schedules,
                                                               {{"category", context.task.category},
                                                                {"schedules", schedules}})},
         {"lessons", trim == PromptTrim::full ? render_lessons_section(library, context.lessons) : ""},
         {"strategy", render_optional_section(library, PromptId::section_strategy, "text", context.strategy)},
         {"target", render_optional_section(library, PromptId::section_target, "hint", context.target_hint)},
         {"focus", render_focus(library, request)},
         {"request", library.render(PromptId::request_plan, {})},
         {"reply_format", library.render(PromptId::reply_plan, {})}});
    return prompt;
}

Prompt build_plan_repair_prompt(const PromptLibrary& library, const PlanRequest& request, const std::string& reply,
                                const std::string& problem)
{
    Prompt prompt;
    prompt.system = library.render(PromptId::plan_system, {});
    prompt.user = library.render(PromptId::plan_repair,
                                 {{"problem", problem},
                                  {"reply", truncate_text(reply, 6000)},
                                  {"menu_ids", menu_ids(request.menu)},
                                  {"reply_format", library.render(PromptId::reply_plan, {})}});
    return prompt;
}

PlanOutcome request_plan(Provider& planner, const PromptLibrary& library, const PlanRequest& request)
{
    PlanOutcome outcome;
    auto ask = [&](const Prompt& prompt) {
        ChatResult result = planner.complete({CallPurpose::plan, prompt.system, prompt.user});
        outcome.calls.push_back(result.record);
        return result;
    };
    ChatResult result = ask(build_plan_prompt(library, request, PromptTrim::full));
    if (result.context_exceeded && !request.context.lessons.empty()) {
        log_info("{}: the planner's prompt exceeds the model's context window; asking again without lessons",
                 planner.spec().label());
        result = ask(build_plan_prompt(library, request, PromptTrim::without_lessons));
    }
    if (!result.ok()) {
        outcome.call_failed = true;
        outcome.problem = call_failure(result, "planner");
        return outcome;
    }
    PlanReading reading = read_plan_reply(result.record.reply, request.menu);
    if (reading.plan) {
        outcome.plan = std::move(reading.plan);
        outcome.status = reading.fixed.empty() ? PlanStatus::parsed : PlanStatus::repaired;
        outcome.problem = reading.fixed;
        return outcome;
    }
    std::string first = reading.problem;
    ChatResult again = ask(build_plan_repair_prompt(library, request, result.record.reply, first));
    if (!again.ok()) {
        outcome.problem = fmt::format("{}; asking the planner again failed: {}", first, again.record.error);
        return outcome;
    }
    PlanReading second = read_plan_reply(again.record.reply, request.menu);
    if (!second.plan) {
        outcome.problem = fmt::format("{} (asked once more: {})", first, second.problem);
        return outcome;
    }
    outcome.plan = std::move(second.plan);
    outcome.status = PlanStatus::repaired;
    outcome.problem = "the first reply could not be read: " + first;
    return outcome;
}

Prompt build_code_prompt(const PromptLibrary& library, const ProposalContext& context, const Menu& menu,
                         const TechniquePlan& plan)
{
    Prompt prompt;
    prompt.system = render_propose_system(library, context.task);
    std::vector<std::string> steps;
    for (size_t i = 0; i < plan.steps.size(); ++i)
        steps.push_back(fmt::format("{}. {}", i + 1, plan.steps[i]));
    std::string section = library.render(PromptId::section_plan,
                                         {{"techniques", describe_plan_techniques(plan, menu)},
                                          {"expected", plan.expected_speedup ? speedup_text(plan.expected_speedup) : ""},
                                          {"why", plan.rationale},
                                          {"steps", join(steps, "\n")}});
    PromptId format = effective_edit_form(context) == EditForm::search_replace ? PromptId::reply_search_replace
                                                                                : PromptId::reply_whole_file;
    prompt.user = library.render(PromptId::code_user,
                                 {{"task", render_task_section(library, context)},
                                  {"hardware", render_hardware_section(library, context.hardware)},
                                  {"parent", context.parent ? render_parent_section(library, *context.parent) : ""},
                                  {"plan", section},
                                  {"request", library.render(PromptId::request_implement, {})},
                                  {"reply_format", library.render(format, {})}});
    return prompt;
}

Proposal request_code(Provider& coder, const PromptLibrary& library, const ProposalContext& context, const Menu& menu,
                      const TechniquePlan& plan)
{
    Proposal proposal;
    proposal.origin = Origin::llm;
    Prompt prompt = build_code_prompt(library, context, menu, plan);
    ChatResult result = coder.complete({CallPurpose::code, prompt.system, prompt.user});
    proposal.calls.push_back(result.record);
    if (!result.ok()) {
        proposal.outcome = ProposalOutcome::call_failed;
        proposal.failure = {VerdictKind::no_code, call_failure(result, "coder")};
        return proposal;
    }
    read_proposal_reply(result, context, coder.spec().max_output_tokens, proposal);
    return proposal;
}

} // namespace kforge
