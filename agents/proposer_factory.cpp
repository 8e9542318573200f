// Choosing and building the proposer for a set of model specs.
#include "agents/proposer_factory.hpp"

#include <algorithm>

#include "agents/builtin_proposer.hpp"
#include "agents/llm_proposer.hpp"
#include "util/error.hpp"

namespace kforge {

std::unique_ptr<Proposer> make_proposer(const std::vector<ModelSpec>& specs, const ProviderSettings& settings,
                                        const PromptLibrary& library)
{
    size_t builtin = static_cast<size_t>(std::count_if(specs.begin(), specs.end(), [](const ModelSpec& s) { return s.is_builtin(); }));
    if (builtin == specs.size())
        return std::make_unique<BuiltinProposer>(settings.recorder);
    if (builtin > 0)
        fail(ErrorKind::usage, "--model builtin cannot be mixed with language models; give either builtin alone "
                               "or only provider:model specs");
    ModelMix mix;
    for (const auto& spec : specs)
        mix.add(make_provider(spec, settings), spec.weight);
    return std::make_unique<LlmProposer>(std::move(mix), library);
}

} // namespace kforge
