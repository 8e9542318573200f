// The template catalog and its loader.
#include "agents/prompt_library.hpp"

#include <cstdlib>

#include "util/error.hpp"
#include "util/paths.hpp"
#include "util/text.hpp"

namespace kforge {

const std::vector<PromptSpec>& prompt_catalog()
{
    static const std::vector<PromptSpec> k_catalog = {
        {PromptId::propose_system, "propose_system.txt",
         {"max_threads_per_block", "max_dynamic_smem", "max_launches", "max_param_points", "library_example"},
         {"library_steps"}},
        {PromptId::propose_user, "propose_user.txt", {"task", "hardware", "parent", "request", "reply_format"},
         {"lessons", "inspirations", "strategy", "target"}},
        {PromptId::section_task, "section_task.txt",
         {"task_name", "description", "args", "bench_shapes", "checks", "roofline"},
         {"category", "symbols", "default_plan", "forbidden", "reference_source", "program_source"}},
        {PromptId::section_hardware, "section_hardware.txt", {"facts"}, {}},
        {PromptId::section_parent, "section_parent.txt", {"source"},
         {"status", "message", "sweep", "times", "metrics", "descriptors", "note"}},
        {PromptId::section_inspiration, "section_inspiration.txt", {"source"},
         {"index", "status", "times", "descriptors", "note"}},
        {PromptId::section_lessons, "section_lessons.txt", {"lessons"}, {}},
        {PromptId::section_strategy, "section_strategy.txt", {"text"}, {}},
        {PromptId::section_target, "section_target.txt", {"hint"}, {}},
        {PromptId::request_new, "request_new.txt", {}, {}},
        {PromptId::request_improve, "request_improve.txt", {}, {}},
        {PromptId::request_repair, "request_repair.txt", {}, {"verdict"}},
        {PromptId::reply_whole_file, "reply_whole_file.txt", {}, {}},
        {PromptId::reply_search_replace, "reply_search_replace.txt", {}, {}},
        {PromptId::meta_system, "meta_system.txt", {}, {"max_chars"}},
        {PromptId::meta_user, "meta_user.txt", {"task_name", "current", "history"},
         {"category", "description", "max_chars"}},
        {PromptId::analyst_system, "analyst_system.txt", {}, {}},
        {PromptId::analyst_user, "analyst_user.txt", {"task_name", "diff", "effect"},
         {"category", "description", "parent_note", "child_note"}},
        {PromptId::plan_system, "plan_system.txt", {}, {}},
        {PromptId::plan_user, "plan_user.txt", {"task", "menu", "request", "reply_format"},
         {"hardware", "parent", "stats", "schedules", "lessons", "strategy", "target", "focus"}},
        {PromptId::section_menu, "section_menu.txt", {"title", "items"}, {"name"}},
        {PromptId::section_technique_stats, "section_technique_stats.txt", {"rows"}, {"category", "scope"}},
        {PromptId::section_schedules, "section_schedules.txt", {"schedules"}, {"category"}},
        {PromptId::section_focus, "section_focus.txt", {"technique"}, {"title", "reason"}},
        {PromptId::request_plan, "request_plan.txt", {}, {}},
        {PromptId::reply_plan, "reply_plan.txt", {}, {}},
        {PromptId::plan_repair, "plan_repair.txt", {"problem", "reply", "reply_format"}, {"menu_ids"}},
        {PromptId::code_user, "code_user.txt", {"task", "plan", "request", "reply_format"}, {"hardware", "parent"}},
        {PromptId::section_plan, "section_plan.txt", {"techniques", "steps"}, {"expected", "why"}},
        {PromptId::request_implement, "request_implement.txt", {}, {}},
    };
    return k_catalog;
}

PromptLibrary PromptLibrary::load(const std::vector<std::filesystem::path>& dirs)
{
    PromptLibrary library;
    for (const auto& spec : prompt_catalog()) {
        std::filesystem::path found;
        for (const auto& dir : dirs) {
            std::error_code ec;
            if (std::filesystem::is_regular_file(dir / spec.file, ec)) {
                found = dir / spec.file;
                break;
            }
        }
        if (found.empty()) {
            std::vector<std::string> searched;
            for (const auto& dir : dirs)
                searched.push_back(dir.string());
            fail_input("prompt template {} not found (searched: {})", spec.file, join(searched, ", "));
        }
        PromptTemplate tmpl = parse_template(read_file(found), found.string());
        check_placeholders(tmpl, spec.required, spec.optional);
        library.m_templates.push_back(std::move(tmpl));
    }
    return library;
}

PromptLibrary PromptLibrary::load_default(const std::filesystem::path& override_dir)
{
    std::vector<std::filesystem::path> dirs;
    if (!override_dir.empty())
        dirs.push_back(override_dir);
    if (const char* env = std::getenv("KFORGE_PROMPTS"); env && *env)
        dirs.emplace_back(env);
    dirs.push_back(resource_dir() / "prompts");
    return load(dirs);
}

std::string PromptLibrary::render(PromptId id, const TemplateValues& values) const
{
    return render_template(m_templates.at(static_cast<size_t>(id)), values);
}

const std::string& PromptLibrary::file_of(PromptId id) const
{
    return m_templates.at(static_cast<size_t>(id)).file;
}

} // namespace kforge
