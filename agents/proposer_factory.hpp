// From --model flags to a Proposer.
#pragma once

#include <memory>
#include <vector>

#include "agents/model_spec.hpp"
#include "agents/prompt_library.hpp"
#include "agents/proposer.hpp"
#include "agents/provider.hpp"

namespace kforge {

// The builtin proposer when `specs` is empty or only `builtin`; otherwise an LlmProposer over a
// ModelMix of the specs with their weights. Throws Error(usage) when builtin is mixed with models,
// and Error(bad_input) when a key is missing (see make_provider). `library` must outlive the result.
std::unique_ptr<Proposer> make_proposer(const std::vector<ModelSpec>& specs, const ProviderSettings& settings,
                                        const PromptLibrary& library);

} // namespace kforge
