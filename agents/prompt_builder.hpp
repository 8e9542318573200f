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

// The edit form actually requested: SEARCH/REPLACE needs a parent to edit, so without one the
// request falls back to a whole file.
EditForm effective_edit_form(const ProposalContext& context);

} // namespace kforge
