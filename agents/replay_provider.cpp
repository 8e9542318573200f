// Serving recorded replies; see replay_provider.hpp for the matching rule.
#include "agents/replay_provider.hpp"

#include <algorithm>

#include "agents/call_record_json.hpp"
#include "agents/http_provider.hpp"
#include "util/log.hpp"

namespace kforge {

ReplayProvider::ReplayProvider(ModelSpec spec, std::vector<LlmCallRecord> records, CallRecorder recorder)
    : Provider(std::move(spec), std::move(recorder))
{
    for (auto& record : records)
        if (record.provider != k_provider_builtin)
            m_records.push_back(std::move(record));
    m_used.assign(m_records.size(), false);
}

size_t ReplayProvider::unused() const
{
    std::lock_guard lock(m_mutex);
    return static_cast<size_t>(std::count(m_used.begin(), m_used.end(), false));
}

ChatResult ReplayProvider::exchange(const ChatRequest& request)
{
    ChatResult result;
    LlmCallRecord& record = result.record;
    record.provider = k_provider_replay;
    record.model = spec().model;
    record.purpose = request.purpose;
    record.request = Json{{"system", request.system}, {"user", request.user}};

    std::lock_guard lock(m_mutex);
    size_t chosen = m_records.size();
    for (size_t i = 0; i < m_records.size() && chosen == m_records.size(); ++i) {
        if (m_used[i] || m_records[i].purpose != request.purpose)
            continue;
        auto prompt = recorded_prompt(m_records[i]);
        if (prompt && prompt->system == request.system && prompt->user == request.user)
            chosen = i;
    }
    if (chosen == m_records.size()) {
        auto next = std::find(m_used.begin(), m_used.end(), false);
        if (next == m_used.end()) {
            record.status = "bad_reply";
            record.error = "replay " + spec().model + ": all " + std::to_string(m_records.size()) +
                           " recorded replies have been served";
            return result;
        }
        chosen = static_cast<size_t>(next - m_used.begin());
        if (!m_warned_mismatch)
            log_warn("replay {}: a request matches no recorded prompt; serving recorded replies in order",
                     spec().model);
        m_warned_mismatch = true;
    }
    m_used[chosen] = true;
    const LlmCallRecord& recorded = m_records[chosen];
    record.model = recorded.provider + ":" + recorded.model;
    record.reply = recorded.reply;
    record.input_tokens = recorded.input_tokens;
    record.cached_input_tokens = recorded.cached_input_tokens;
    record.output_tokens = recorded.output_tokens;
    record.status = recorded.status;
    record.error = recorded.error;
    result.context_exceeded = recorded.status == "http_error" && is_context_length_error(recorded.error);
    return result;
}

} // namespace kforge
