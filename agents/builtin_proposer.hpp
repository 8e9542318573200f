// The offline proposer: new candidates without any model, from the task's seed kernels.
//
// It is what `kforge optimize` uses when no API key is set, so a first run works anywhere. Each
// proposal takes a base — the parent, or (always without a parent, sometimes with one) a seed
// kernel of the task — and changes its plan's declared param values (plan_variation.hpp), so that
// candidates pin different regions of the param space for the evaluator's sweep. Only the
// kforge:plan block of the source is rewritten. It never proposes the same source and plan twice
// (remember() lets a resumed search tell it what the archive already holds). Each proposal carries
// an LlmCallRecord with provider "builtin", zero tokens and zero cost, so accounting stays uniform.
#pragma once

#include <mutex>
#include <set>
#include <string>

#include "agents/proposer.hpp"

namespace kforge {

struct BuiltinOptions {
    double seed_probability = 0.2; // chance of starting from a seed when there is a parent
    int attempts = 64;             // draws before giving up on finding something new
};

class BuiltinProposer : public Proposer
{
public:
    explicit BuiltinProposer(CallRecorder recorder = {}, BuiltinOptions options = {});

    Proposal propose(const ProposalContext& context, Rng& rng) override;
    // Counts `source` as proposed already, so it is never proposed again.
    void remember(const std::string& source);

private:
    CallRecorder m_recorder;
    BuiltinOptions m_options;
    std::mutex m_mutex;
    std::set<std::string> m_seen; // keys of proposed sources (normalised code + plan)
};

} // namespace kforge
