// Providers: one small interface in front of every way of getting text from a model.
//
// `openai` speaks Chat Completions (OpenAI, and with a base URL vLLM, llama.cpp's server, Ollama,
// OpenRouter, ...), `anthropic` speaks the Messages API, `replay` serves recorded replies. Each
// call returns a ChatResult whose LlmCallRecord says everything about it — provider, model,
// request as sent, reply, tokens, cost, latency, retries, status — and goes to the recorder before
// complete() returns. Failures of the call (timeouts, 5xx after retries, a malformed body) are a
// status in the record, not exceptions. The one exception is a rejected API key (401/403), which
// stops the run with a message naming the provider and the environment variable.
//
// API keys come only from the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY), are sent only in
// request headers, and are scrubbed from anything a server echoes back before it is recorded or
// logged. Without a key, a custom base URL gets no Authorization header, so local servers work.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "agents/http.hpp"
#include "agents/model_spec.hpp"
#include "agents/pricing.hpp"
#include "agents/proposer.hpp"
#include "agents/retry.hpp"
#include "core/records.hpp"

namespace kforge {

struct ChatRequest {
    CallPurpose purpose = CallPurpose::propose;
    std::string system;
    std::string user;
};

struct ChatResult {
    LlmCallRecord record;           // record.reply holds the model's text when ok()
    bool context_exceeded = false;  // the prompt did not fit the model's context window
    bool cut_at_max_tokens = false; // the reply stopped at the output token limit

    bool ok() const { return record.status == "ok"; }
};

struct ProviderSettings {
    HttpTimeouts timeouts;
    RetryPolicy retry;
    size_t max_reply_bytes = size_t{64} << 20;
    std::shared_ptr<const PriceTable> prices; // nullptr: every cost is unknown
    CallRecorder recorder;                    // may be empty
    uint64_t seed = 0;                        // the run's seed: replay's latency draws (model_spec.hpp)
};

class Provider
{
public:
    virtual ~Provider() = default;
    Provider(const Provider&) = delete;
    Provider& operator=(const Provider&) = delete;

    // Sends one request (retrying transient failures), records it and returns. Thread-safe.
    // Throws Error(runtime) when the provider rejects the API key (HTTP 401/403).
    ChatResult complete(const ChatRequest& request);
    const ModelSpec& spec() const { return m_spec; }

protected:
    Provider(ModelSpec spec, CallRecorder recorder) : m_spec(std::move(spec)), m_recorder(std::move(recorder)) {}
    // Performs the call; fills the record's provider, model, request, reply, tokens, cost,
    // retries, status and error. complete() adds timing and hands the record to the recorder.
    virtual ChatResult exchange(const ChatRequest& request) = 0;

private:
    ModelSpec m_spec;
    CallRecorder m_recorder;
};

// The provider for `spec` (openai, anthropic or replay; builtin is a Proposer, not a provider).
// Throws Error(bad_input) when a needed API key is missing or a replay file cannot be read.
std::unique_ptr<Provider> make_provider(const ModelSpec& spec, const ProviderSettings& settings);

} // namespace kforge
