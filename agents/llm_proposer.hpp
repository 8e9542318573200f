// The proposer that asks a language model: prompt from the templates, one call through a provider
// picked from the mix, the reply parsed into a source or a no_code verdict.
//
// A context-length error is answered by shrinking the prompt and retrying once: lessons go first,
// then inspirations. The shrink sticks for that provider, so a model with a small window does not
// waste a failed call on every proposal. A reply cut off at the output limit inside its code, or a
// reply without usable code, becomes a no_code verdict whose message says what to do differently.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "agents/model_mix.hpp"
#include "agents/prompt_builder.hpp"
#include "agents/prompt_library.hpp"
#include "agents/proposer.hpp"

namespace kforge {

class LlmProposer : public Proposer
{
public:
    // `library` must outlive the proposer.
    LlmProposer(ModelMix mix, const PromptLibrary& library);

    // Draws one number from `rng` to pick the model when the mix holds several.
    Proposal propose(const ProposalContext& context, Rng& rng) override;

private:
    ModelMix m_mix;
    const PromptLibrary& m_library;
    std::vector<std::unique_ptr<std::atomic<int>>> m_trim; // per provider: the PromptTrim in force
};

// Reads a successful call's reply into `proposal` (outcome, source, note, failure): a source, or a
// no_code verdict saying what was wrong (a reply cut off at `max_output_tokens` inside its code says
// so). Shared by the two-phase step's coder (plan_code.hpp).
void read_proposal_reply(const ChatResult& result, const ProposalContext& context, int64_t max_output_tokens,
                         Proposal& proposal);

} // namespace kforge
