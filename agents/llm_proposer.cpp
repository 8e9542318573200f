// One proposal from a language model; see llm_proposer.hpp.
#include "agents/llm_proposer.hpp"

#include <optional>

#include <fmt/format.h>

#include "agents/reply_parser.hpp"
#include "util/log.hpp"

namespace kforge {
namespace {

// The next trim level that actually removes something from this context, if any.
std::optional<PromptTrim> next_trim(PromptTrim current, const ProposalContext& context)
{
    if (current == PromptTrim::full && !context.lessons.empty())
        return PromptTrim::without_lessons;
    if (current != PromptTrim::without_lessons_and_inspirations && !context.inspirations.empty())
        return PromptTrim::without_lessons_and_inspirations;
    return std::nullopt;
}

std::string_view trim_name(PromptTrim trim)
{
    return trim == PromptTrim::without_lessons ? "lessons" : "lessons and inspirations";
}

} // namespace

LlmProposer::LlmProposer(ModelMix mix, const PromptLibrary& library) : m_mix(std::move(mix)), m_library(library)
{
    for (size_t i = 0; i < m_mix.size(); ++i)
        m_trim.push_back(std::make_unique<std::atomic<int>>(static_cast<int>(PromptTrim::full)));
}

Proposal LlmProposer::propose(const ProposalContext& context, Rng& rng)
{
    size_t index = m_mix.pick_index(rng);
    Provider& provider = m_mix.at(index);
    std::atomic<int>& sticky_trim = *m_trim[index];
    Proposal proposal;
    proposal.origin = context.round == RoundKind::repair ? Origin::repair : Origin::llm;
    CallPurpose purpose = context.round == RoundKind::repair ? CallPurpose::repair : CallPurpose::propose;

    auto ask = [&](PromptTrim trim) {
        Prompt prompt = build_proposal_prompt(m_library, context, trim);
        ChatResult result = provider.complete({purpose, prompt.system, prompt.user});
        proposal.calls.push_back(result.record);
        return result;
    };
    PromptTrim trim = static_cast<PromptTrim>(sticky_trim.load());
    ChatResult result = ask(trim);
    if (result.context_exceeded) {
        if (auto smaller = next_trim(trim, context)) {
            log_info("{}: the prompt exceeds the model's context window; asking again without {}",
                     provider.spec().label(), trim_name(*smaller));
            int wanted = static_cast<int>(*smaller);
            int seen = sticky_trim.load();
            while (seen < wanted && !sticky_trim.compare_exchange_weak(seen, wanted)) {
            }
            result = ask(*smaller);
        }
    }
    if (!result.ok()) {
        proposal.outcome = ProposalOutcome::call_failed;
        std::string advice = result.context_exceeded
                                 ? " The prompt does not fit the model's context window even without lessons and "
                                   "inspirations: use a model with a larger window or a smaller parent kernel."
                                 : "";
        proposal.failure = {VerdictKind::no_code, "The model call failed: " + result.record.error + advice};
        return proposal;
    }

    read_proposal_reply(result, context, provider.spec().max_output_tokens, proposal);
    return proposal;
}

void read_proposal_reply(const ChatResult& result, const ProposalContext& context, int64_t max_output_tokens,
                         Proposal& proposal)
{
    const std::string* parent = context.parent ? &context.parent->source : nullptr;
    ParsedReply parsed = parse_reply(result.record.reply, effective_edit_form(context), parent);
    proposal.note = parsed.note.empty() ? "(no description given)" : parsed.note;
    bool cut_in_code = result.cut_at_max_tokens && (!parsed.source || parsed.from_unclosed_fence);
    if (parsed.source && !cut_in_code) {
        proposal.outcome = ProposalOutcome::source;
        proposal.source = std::move(parsed.source);
        return;
    }
    proposal.outcome = ProposalOutcome::no_code;
    std::string message = parsed.problem;
    if (cut_in_code)
        message = fmt::format("The reply was cut off at the output limit of {} tokens before the code was "
                              "complete. Write a shorter reply: no explanations beyond the CHANGE line{}.",
                              max_output_tokens,
                              context.parent ? ", and consider SEARCH/REPLACE edits instead of the whole file" : "");
    proposal.failure = {VerdictKind::no_code, message};
}

} // namespace kforge
