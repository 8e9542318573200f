// Which model to ask, written the way a user types it: `provider:model[@base_url][*weight]`.
//
//   openai:gpt-5-mini                              OpenAI's API, key from OPENAI_API_KEY
//   openai:qwen2.5-coder@http://localhost:8000/v1  any Chat Completions server (vLLM, llama.cpp,
//                                                   Ollama, OpenRouter); a key is optional there
//   anthropic:claude-sonnet-4-5*3                   Anthropic's Messages API, weight 3 in a mix
//   replay:runs/calls.jsonl                         recorded replies (tests, exact reproduction)
//   replay:calls.jsonl?latency=40s                  each reply after 40 s, as a model would think;
//                                                   latency=20s..90s draws each from the run's
//                                                   seed, latency=recorded waits each record's
//                                                   latency_s (default: at once)
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

// How long the replay provider takes to serve a reply (`?latency=` of a replay spec).
struct ReplayLatency {
    enum class Kind
    {
        none,     // at once
        recorded, // each record's latency_s
        fixed,    // low_s
        range,    // uniform in [low_s, high_s], drawn from the run's seed and the reply's place
    };
    Kind kind = Kind::none;
    double low_s = 0;
    double high_s = 0;

    std::string text() const; // "" for none, else "?latency=..." as parsed
};

// The longest latency a replay spec may ask for.
inline constexpr double k_max_replay_latency_s = 3600;

struct ModelSpec {
    std::string provider;
    std::string model;            // for replay: the JSONL file
    std::string base_url;         // "" = the provider's public endpoint
    double weight = 1;            // share of calls in a mix (relative)
    std::optional<double> temperature; // unset: the server's default (reasoning models want that)
    int64_t max_output_tokens = 8192;
    ReplayLatency replay_latency; // replay only

    bool is_builtin() const { return provider == k_provider_builtin; }
    // "provider:model[@base_url]" (a replay spec with its ?latency=), the form records and messages use.
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
