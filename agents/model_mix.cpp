// Weighted choice among providers; see model_mix.hpp.
#include "agents/model_mix.hpp"

#include <stdexcept>

namespace kforge {

void ModelMix::add(std::shared_ptr<Provider> provider, double weight)
{
    if (!provider || !(weight > 0))
        throw std::invalid_argument("ModelMix::add needs a provider and a positive weight");
    m_providers.push_back(std::move(provider));
    m_weights.push_back(weight);
}

size_t ModelMix::pick_index(Rng& rng) const
{
    if (m_providers.empty())
        throw std::logic_error("ModelMix::pick on an empty mix");
    return m_providers.size() == 1 ? 0 : rng.weighted(m_weights);
}

} // namespace kforge
