// The provider behind both HTTP wire formats (internal to agents/).
//
// A WireFormat knows one API's shapes: where to POST, the request body, the auth headers, how to
// read a reply's text, usage and stop reason. HttpProvider owns everything the two formats share:
// the retry loop, the classification of statuses (429/5xx/timeouts retried, 401/403 fatal, a
// context-length error reported for the caller to shrink the prompt), secret scrubbing and costs.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agents/pricing.hpp"
#include "agents/provider.hpp"
#include "util/json_reader.hpp"
#include "util/rng.hpp"

namespace kforge {

struct WireReply {
    std::string text;
    TokenUsage usage;
    bool cut_at_max_tokens = false;
};

struct WireFormat {
    std::string_view provider;
    std::string_view default_base_url;
    // The endpoint for a base URL (the wire format knows its path, e.g. /chat/completions).
    std::string (*endpoint)(const std::string& base_url);
    // The JSON body; `custom_endpoint` is true for a user-given base URL (older servers accept
    // fewer parameter spellings).
    Json (*build_body)(const ModelSpec& spec, const ChatRequest& request, bool custom_endpoint);
    std::vector<std::string> (*auth_headers)(const std::string& api_key);
    // Reads a 2xx body; nullopt with `problem` set when it lacks what a reply needs.
    std::optional<WireReply> (*parse_reply)(const Json& body, std::string& problem);
};

const WireFormat& openai_wire();
const WireFormat& anthropic_wire();

// The server's own description of an error body: error.message (+ code/type), or a short excerpt
// of the raw text when it is not the JSON we know.
std::string describe_error_body(const std::string& body);
// Does this 400/413 body say the prompt is longer than the model's context window?
bool is_context_length_error(const std::string& body);

// Keys shorter than this are placeholders (a local server's "EMPTY"), not secrets, and are not redacted.
inline constexpr size_t k_min_redacted_secret = 8;
// `text` with every occurrence of `secret` replaced by "[redacted]" (no-op for a key shorter than
// k_min_redacted_secret).
std::string redact_secret(std::string text, const std::string& secret);

class HttpProvider : public Provider
{
public:
    HttpProvider(const WireFormat& wire, ModelSpec spec, const ProviderSettings& settings, std::string api_key);

protected:
    ChatResult exchange(const ChatRequest& request) override;

private:
    uint64_t next_jitter_seed();
    void price_call(LlmCallRecord& record, const TokenUsage& usage);

    const WireFormat& m_wire;
    ProviderSettings m_settings;
    std::string m_api_key;
    std::string m_endpoint;
    bool m_custom_endpoint = false;
    std::mutex m_mutex; // guards the two members below
    Rng m_jitter;
    bool m_warned_price = false;
};

} // namespace kforge
