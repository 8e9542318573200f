// The replay provider: answers with recorded replies instead of calling a model.
//
// For tests and for exact reproduction of a session (`--model replay:calls.jsonl`, or records read
// from another run's archive by the caller). A request is answered by the first unused record, of
// the same purpose, whose prompt matches it: exactly; else with every number masked (a recording
// replayed on another GPU, whose prompts differ only in measured times); else, with a warning, by
// the next unused record in recorded order whose purpose is of the same kind — kernel-writing calls
// (propose, repair, code) answer each other, plans, lessons and strategy notes their own kind; and
// only when none of its kind is left, by the next unused record of any purpose.
// Records without a prompt (replies written by hand) are served that way, in order. Recorded
// failures replay as failures. Replayed calls cost nothing; their token counts are the recorded ones.
//
// A reply is served at once, or after a latency (`replay:FILE?latency=...`, model_spec.hpp), so that
// throughput can be measured with a model's delays and no network: a fixed one, each record's own
// latency_s, or one drawn uniformly from a range by the run's seed and the record's place in the
// file (the same reply takes as long in every run with that seed, whatever order calls come in).
// Calls wait side by side, as requests to a server do; Ctrl-C ends a wait.
#pragma once

#include <mutex>
#include <vector>

#include "agents/provider.hpp"

namespace kforge {

class ReplayProvider : public Provider
{
public:
    // `records` of provider builtin are ignored (there is nothing to replay).
    ReplayProvider(ModelSpec spec, std::vector<LlmCallRecord> records, CallRecorder recorder, uint64_t seed = 0);
    size_t unused() const;
    // Seconds record `index` takes to be served (the spec's latency).
    double latency_of(size_t index) const;

protected:
    ChatResult exchange(const ChatRequest& request) override;

private:
    // The record for `request` (see above), or m_records.size() when none is left. Holds m_mutex.
    size_t choose(const ChatRequest& request);
    size_t count_family(CallPurpose purpose) const;

    mutable std::mutex m_mutex;
    std::vector<LlmCallRecord> m_records;
    std::vector<bool> m_used;
    bool m_warned_mismatch = false;
    uint64_t m_seed = 0;
};

} // namespace kforge
