// The replay provider: answers with recorded replies instead of calling a model.
//
// For tests and for exact reproduction of a session (`--model replay:calls.jsonl`, or records read
// from another run's archive by the caller). A request is answered by the first unused record whose
// purpose and prompt match it exactly; when none matches (the prompt changed since the recording),
// by the next unused record in recorded order, with a warning. Recorded failures replay as
// failures. Replayed calls cost nothing; their token counts are the recorded ones.
#pragma once

#include <mutex>
#include <vector>

#include "agents/provider.hpp"

namespace kforge {

class ReplayProvider : public Provider
{
public:
    // `records` of provider builtin are ignored (there is nothing to replay).
    ReplayProvider(ModelSpec spec, std::vector<LlmCallRecord> records, CallRecorder recorder);
    size_t unused() const;

protected:
    ChatResult exchange(const ChatRequest& request) override;

private:
    mutable std::mutex m_mutex;
    std::vector<LlmCallRecord> m_records;
    std::vector<bool> m_used;
    bool m_warned_mismatch = false;
};

} // namespace kforge
