// The set of prompt templates kforge uses, loaded from prompts/ and checked as a whole.
//
// The catalog lists every template with the placeholders the code fills for it (required ones
// must appear in the file; optional ones may). Loading reads each file from the first folder that
// has it, so a user can override one template (--prompts DIR or $KFORGE_PROMPTS) and keep the
// others, and fails before any model is called when a file is missing or a placeholder is wrong.
// prompts/README.md documents each template and its placeholders.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "agents/prompt_template.hpp"

namespace kforge {

enum class PromptId {
    propose_system,       // role, the candidate contract, the task's launch limits
    propose_user,         // the assembled proposal prompt: sections, request, reply format
    section_task,         // what the kernel computes, args, shapes, checks, roofline, reference
    section_hardware,     // facts about the GPU
    section_parent,       // the starting point: source, verdict, times, metrics
    section_inspiration,  // one other kernel from the archive
    section_lessons,      // lessons from the knowledge base
    section_strategy,     // the island's meta-prompt
    section_target,       // the strategy the search wants (an empty MAP-Elites cell)
    request_new,          // write a kernel from scratch
    request_improve,      // make the parent faster
    request_repair,       // fix the failed parent
    reply_whole_file,     // reply format: one complete file
    reply_search_replace, // reply format: SEARCH/REPLACE edits of the parent
    meta_system,          // rewriting an island's strategy text
    meta_user,
    analyst_system,       // distilling a lesson from a parent/child pair
    analyst_user,
    plan_system,          // two-phase step, phase 1: the planner's role
    plan_user,            // the planner's prompt: task, parent, menu, statistics, schedules, ...
    section_menu,         // the task's optimisation menu
    section_technique_stats, // how each technique has done on this category of tasks
    section_schedules,    // chains of techniques that worked on earlier tasks
    section_focus,        // the technique the search suggests
    request_plan,         // plan the next step
    reply_plan,           // reply format: the plan as JSON
    plan_repair,          // one more try at a plan that could not be read
    code_user,            // phase 2: the coder's prompt: task, parent, plan
    section_plan,         // the plan the coder implements
    request_implement,    // implement the plan
};

struct PromptSpec {
    PromptId id;
    std::string_view file;
    std::vector<std::string> required;
    std::vector<std::string> optional;
};

// Every template, in PromptId order.
const std::vector<PromptSpec>& prompt_catalog();

class PromptLibrary
{
public:
    // Loads and checks every template of the catalog; each file comes from the first folder of
    // `dirs` that holds it. Throws Error(bad_input) naming the file (and line) on any problem.
    static PromptLibrary load(const std::vector<std::filesystem::path>& dirs);
    // `override_dir` (if given), then $KFORGE_PROMPTS (if set), then resource_dir()/prompts.
    static PromptLibrary load_default(const std::filesystem::path& override_dir = {});

    // Renders one template; every placeholder the catalog lists for it must be in `values`.
    std::string render(PromptId id, const TemplateValues& values) const;
    const std::string& file_of(PromptId id) const;

private:
    std::vector<PromptTemplate> m_templates; // indexed by PromptId
};

} // namespace kforge
