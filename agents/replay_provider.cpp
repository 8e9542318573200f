// Serving recorded replies; see replay_provider.hpp for the matching rule.
#include "agents/replay_provider.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include <fmt/format.h>

#include "agents/call_record_json.hpp"
#include "agents/http_provider.hpp"
#include "util/interrupt.hpp"
#include "util/log.hpp"
#include "util/rng.hpp"

namespace kforge {
namespace {

// Calls that write a kernel answer each other's requests when no prompt matches (a recording made
// before the two-phase step, or replies written by hand); plans, lessons and strategy notes answer
// only their own kind.
int purpose_family(CallPurpose purpose)
{
    switch (purpose) {
    case CallPurpose::propose:
    case CallPurpose::repair:
    case CallPurpose::code: return 0;
    case CallPurpose::plan: return 1;
    case CallPurpose::analyst: return 2;
    case CallPurpose::meta_prompt: return 3;
    }
    return 0;
}

// The prompt with every run of digits replaced by '#': what stays the same when only measured
// times, speedups and percentages differ.
std::string masked(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    bool in_digits = false;
    for (char c : text) {
        bool digit = c >= '0' && c <= '9';
        if (digit && !in_digits)
            out += '#';
        else if (!digit)
            out += c;
        in_digits = digit;
    }
    return out;
}

} // namespace

size_t ReplayProvider::count_family(CallPurpose purpose) const
{
    size_t count = 0;
    for (const auto& record : m_records)
        count += purpose_family(record.purpose) == purpose_family(purpose) ? 1 : 0;
    return count;
}

size_t ReplayProvider::choose(const ChatRequest& request)
{
    size_t none = m_records.size();
    auto first_unused = [&](const std::function<bool(const LlmCallRecord&)>& fits) {
        for (size_t i = 0; i < m_records.size(); ++i)
            if (!m_used[i] && fits(m_records[i]))
                return i;
        return none;
    };
    size_t chosen = first_unused([&](const LlmCallRecord& r) {
        auto prompt = recorded_prompt(r);
        return r.purpose == request.purpose && prompt && prompt->system == request.system && prompt->user == request.user;
    });
    if (chosen != none)
        return chosen;
    std::string system = masked(request.system), user = masked(request.user);
    chosen = first_unused([&](const LlmCallRecord& r) {
        auto prompt = recorded_prompt(r);
        return r.purpose == request.purpose && prompt && masked(prompt->system) == system && masked(prompt->user) == user;
    });
    if (chosen != none)
        return chosen;
    chosen = first_unused([&](const LlmCallRecord& r) { return purpose_family(r.purpose) == purpose_family(request.purpose); });
    if (chosen == none) // none of its kind left (a recording of one kind of call): any reply, as before
        chosen = first_unused([](const LlmCallRecord&) { return true; });
    if (chosen != none && !m_warned_mismatch) {
        log_warn("replay {}: a request matches no recorded prompt; serving recorded replies in order", spec().model);
        m_warned_mismatch = true;
    }
    return chosen;
}

ReplayProvider::ReplayProvider(ModelSpec spec, std::vector<LlmCallRecord> records, CallRecorder recorder, uint64_t seed)
    : Provider(std::move(spec), std::move(recorder)), m_seed(seed)
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

double ReplayProvider::latency_of(size_t index) const
{
    const ReplayLatency& latency = spec().replay_latency;
    switch (latency.kind) {
    case ReplayLatency::Kind::none: return 0;
    case ReplayLatency::Kind::fixed: return latency.low_s;
    case ReplayLatency::Kind::recorded:
        return std::clamp(m_records[index].latency_s, 0.0, k_max_replay_latency_s);
    case ReplayLatency::Kind::range: {
        Rng rng(splitmix64(m_seed ^ splitmix64(index + 1)));
        return latency.low_s + (latency.high_s - latency.low_s) * rng.uniform();
    }
    }
    return 0;
}

ChatResult ReplayProvider::exchange(const ChatRequest& request)
{
    ChatResult result;
    LlmCallRecord& record = result.record;
    record.provider = k_provider_replay;
    record.model = spec().model;
    record.purpose = request.purpose;
    record.request = Json{{"system", request.system}, {"user", request.user}};

    std::unique_lock lock(m_mutex);
    size_t chosen = choose(request);
    if (chosen == m_records.size()) {
        record.status = "bad_reply";
        record.error = fmt::format("replay {}: all {} recorded replies have been served ({} of them for {} calls)",
                                   spec().model, m_records.size(), count_family(request.purpose),
                                   call_purpose_name(request.purpose));
        return result;
    }
    m_used[chosen] = true;
    lock.unlock(); // m_records does not change after construction: other calls go on while this one waits
    using Clock = std::chrono::steady_clock;
    auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(latency_of(chosen)));
    while (Clock::now() < until && !interrupt_requested())
        std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(50), until - Clock::now()));
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
