// Which model to ask, written the way a user types it: `provider:model[@base_url][*weight]`.
//
//   openai:gpt-5-mini                              OpenAI's API, key from OPENAI_API_KEY
//   openai:qwen2.5-coder@http://localhost:8000/v1  any Chat Completions server (vLLM, llama.cpp,
//                                                   Ollama, OpenRouter); a key is optional there
//   anthropic:claude-sonnet-4-5*3                   Anthropic's Messages API, weight 3 in a mix
//   replay:runs/calls.jsonl                         recorded replies (tests, exact reproduction)
//   builtin                                         the offline proposer; no model at all
//
// The model name may itself contain ':' (Ollama's "llama3.1:8b"); the base URL is what follows the
// last '@' and must be http(s)://host[:port][/path] (anything else is a usage error, never part of
// the model name), and the weight is a trailing "*number".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

inline constexpr std::string_view k_provider_openai = "openai";
inline constexpr std::string_view k_provider_anthropic = "anthropic";
inline constexpr std::string_view k_provider_replay = "replay";
inline constexpr std::string_view k_provider_builtin = "builtin";

struct ModelSpec {
    std::string provider;
    std::string model;            // for replay: the JSONL file
    std::string base_url;         // "" = the provider's public endpoint
    double weight = 1;            // share of calls in a mix (relative)
    std::optional<double> temperature; // unset: the server's default (reasoning models want that)
    int64_t max_output_tokens = 8192;

    bool is_builtin() const { return provider == k_provider_builtin; }
    // "provider:model[@base_url]", the form records and messages use.
    std::string label() const;
};

// Parses one --model value. Throws Error(usage) naming the text and the expected form.
ModelSpec parse_model_spec(std::string_view text);

// "" when `url` is a base URL kforge will send requests (and keys) to: http:// or https://, a host
// name, an IPv4 or a bracketed IPv6 address, an optional port 1-65535, an optional plain path; no
// user name or password, query or fragment. Otherwise what is wrong.
std::string check_base_url(std::string_view url);

// The environment variable holding the provider's key ("" for providers without one).
std::string_view api_key_variable(std::string_view provider);

} // namespace kforge
