// Assembling the proposal prompt from the templates and a ProposalContext.
//
// The system prompt carries the role and the candidate contract with the task's limits; the user
// prompt the task, the GPU, lessons, inspirations, the parent, the island's strategy, the wanted
// cell, the request (new / improve / repair) and the reply format. When a model's context window
// is too small, the caller asks for a trimmed prompt: lessons go first, then inspirations.
#pragma once

#include <string>

#include "agents/prompt_library.hpp"
#include "agents/proposer.hpp"

namespace kforge {

enum class PromptTrim {
    full,
    without_lessons,
    without_lessons_and_inspirations,
};

struct Prompt {
    std::string system;
    std::string user;
};

Prompt build_proposal_prompt(const PromptLibrary& library, const ProposalContext& context, PromptTrim trim);

// The system prompt of every kernel-writing call: the role, the candidate contract, `task`'s limits.
std::string render_propose_system(const PromptLibrary& library, const Task& task);

// Sections shared with the two-phase step's prompts (plan_code.hpp), rendered as in a proposal.
std::string render_task_section(const PromptLibrary& library, const ProposalContext& context);
std::string render_parent_section(const PromptLibrary& library, const CandidateView& parent);
// "" when there are no lessons, or no hardware facts.
std::string render_lessons_section(const PromptLibrary& library, const std::vector<Lesson>& lessons);
std::string render_hardware_section(const PromptLibrary& library, const Json& hardware);
// Template `id` with `key` = `text`, or "" when `text` is blank.
std::string render_optional_section(const PromptLibrary& library, PromptId id, const std::string& key,
                                    const std::string& text);

// The edit form actually requested: SEARCH/REPLACE needs a parent to edit, so without one the
// request falls back to a whole file.
EditForm effective_edit_form(const ProposalContext& context);

} // namespace kforge
