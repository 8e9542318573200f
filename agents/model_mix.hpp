// Several models in one run, each asked for a share of the calls given by its weight.
//
// The choice is drawn from the caller's Rng (the search's, whose state is archived), so a resumed
// run asks the same models in the same order. A mix of one model draws nothing, so adding the mix
// costs a single-model run no random numbers.
#pragma once

#include <memory>
#include <vector>

#include "agents/provider.hpp"
#include "util/rng.hpp"

namespace kforge {

class ModelMix
{
public:
    // `weight` > 0; Provider::spec().weight is the usual choice.
    void add(std::shared_ptr<Provider> provider, double weight);
    // Index of the provider for the next call; draws one number from `rng` when size() > 1.
    // Requires size() > 0.
    size_t pick_index(Rng& rng) const;
    Provider& pick(Rng& rng) const { return *m_providers[pick_index(rng)]; }
    Provider& at(size_t index) const { return *m_providers.at(index); }
    size_t size() const { return m_providers.size(); }

private:
    std::vector<std::shared_ptr<Provider>> m_providers;
    std::vector<double> m_weights;
};

} // namespace kforge
