// Filling the proposal templates; see prompt_builder.hpp for the layout.
#include "agents/prompt_builder.hpp"

#include <fmt/format.h>

#include "agents/prompt_sections.hpp"
#include "agents/library_example.hpp"
#include "core/library_step.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

std::string render_task(const PromptLibrary& library, const ProposalContext& context)
{
    const Task& task = context.task;
    return library.render(PromptId::section_task,
                          {{"task_name", task.name},
                           {"category", task.category},
                           {"description", task.description},
                           {"args", describe_args(task)},
                           {"symbols", describe_symbols(task)},
                           {"bench_shapes", describe_bench_shapes(task)},
                           {"checks", describe_checks(task)},
                           {"roofline", describe_roofline(task, context.hardware)},
                           {"default_plan", describe_default_plan(task)},
                           {"forbidden", describe_forbidden(task)},
                           {"reference_source", task.is_torch() ? "" : task.reference.source},
                           {"program_source", task.is_torch() ? task.reference.source : ""}});
}

std::string render_parent(const PromptLibrary& library, const CandidateView& parent)
{
    return library.render(PromptId::section_parent, {{"source", parent.source},
                                                     {"status", describe_status(parent)},
                                                     {"message", describe_message(parent)},
                                                     {"sweep", parent.sweep_note},
                                                     {"times", describe_times(parent.times)},
                                                     {"metrics", describe_metrics(parent.metrics)},
                                                     {"descriptors", describe_descriptors(parent.descriptors)},
                                                     {"note", parent.note}});
}

std::string render_inspirations(const PromptLibrary& library, const std::vector<CandidateView>& inspirations)
{
    std::vector<std::string> parts;
    for (size_t i = 0; i < inspirations.size(); ++i) {
        const CandidateView& view = inspirations[i];
        parts.push_back(trim(library.render(PromptId::section_inspiration,
                                       {{"index", std::to_string(i + 1)},
                                        {"source", view.source},
                                        {"status", describe_status(view)},
                                        {"times", describe_times(view.times)},
                                        {"descriptors", describe_descriptors(view.descriptors)},
                                        {"note", view.note}})));
    }
    return join(parts, "\n\n");
}

std::string render_lessons(const PromptLibrary& library, const std::vector<Lesson>& lessons)
{
    if (lessons.empty())
        return "";
    std::vector<std::string> lines;
    for (const auto& lesson : lessons) {
        std::string where = lesson.task_name.empty() ? "" : " (" + lesson.task_name + ")";
        lines.push_back("- " + trim(lesson.text) + where);
    }
    return library.render(PromptId::section_lessons, {{"lessons", join(lines, "\n")}});
}

std::string render_if(const PromptLibrary& library, PromptId id, const std::string& key, const std::string& text)
{
    return trim(text).empty() ? "" : library.render(id, {{key, trim(text)}});
}

} // namespace

EditForm effective_edit_form(const ProposalContext& context)
{
    return context.parent ? context.edit_form : EditForm::whole_file;
}

std::string render_propose_system(const PromptLibrary& library, const Task& task)
{
    const Limits& limits = task.limits;
    return library.render(PromptId::propose_system,
                          {{"max_threads_per_block", std::to_string(limits.max_threads_per_block)},
                           {"max_dynamic_smem", std::to_string(limits.max_dynamic_smem)},
                           {"max_launches", std::to_string(limits.max_launches)},
                           {"max_param_points", std::to_string(limits.max_param_points)},
                           {"library_steps", task_suits_library_steps(task) ? "yes" : ""},
                           {"library_example", task_suits_library_steps(task) ? library_step_example(task) : ""}});
}

Prompt build_proposal_prompt(const PromptLibrary& library, const ProposalContext& context, PromptTrim trim_level)
{
    Prompt prompt;
    prompt.system = render_propose_system(library, context.task);

    std::string request;
    if (!context.parent)
        request = library.render(PromptId::request_new, {});
    else if (context.round == RoundKind::repair)
        request = library.render(PromptId::request_repair,
                                 {{"verdict", context.parent->verdict
                                                  ? std::string(verdict_name(context.parent->verdict->kind))
                                                  : std::string("failed")}});
    else
        request = library.render(PromptId::request_improve, {});
    PromptId format =
        effective_edit_form(context) == EditForm::search_replace ? PromptId::reply_search_replace : PromptId::reply_whole_file;

    bool lessons = trim_level == PromptTrim::full;
    bool inspirations = trim_level != PromptTrim::without_lessons_and_inspirations;
    std::string hardware = describe_hardware(context.hardware);
    prompt.user = library.render(
        PromptId::propose_user,
        {{"task", render_task(library, context)},
         {"hardware", hardware.empty() ? "" : library.render(PromptId::section_hardware, {{"facts", hardware}})},
         {"lessons", lessons ? render_lessons(library, context.lessons) : ""},
         {"inspirations", inspirations ? render_inspirations(library, context.inspirations) : ""},
         {"parent", context.parent ? render_parent(library, *context.parent) : ""},
         {"strategy", render_if(library, PromptId::section_strategy, "text", context.strategy)},
         {"target", render_if(library, PromptId::section_target, "hint", context.target_hint)},
         {"request", request},
         {"reply_format", library.render(format, {})}});
    return prompt;
}

// The sections other prompts share (the two-phase step's planner and coder prompts).

std::string render_task_section(const PromptLibrary& library, const ProposalContext& context)
{
    return render_task(library, context);
}

std::string render_parent_section(const PromptLibrary& library, const CandidateView& parent)
{
    return render_parent(library, parent);
}

std::string render_lessons_section(const PromptLibrary& library, const std::vector<Lesson>& lessons)
{
    return render_lessons(library, lessons);
}

std::string render_hardware_section(const PromptLibrary& library, const Json& hardware)
{
    std::string facts = describe_hardware(hardware);
    return facts.empty() ? "" : library.render(PromptId::section_hardware, {{"facts", facts}});
}

std::string render_optional_section(const PromptLibrary& library, PromptId id, const std::string& key,
                                    const std::string& text)
{
    return render_if(library, id, key, text);
}

} // namespace kforge
