// Parsing `provider:model[@base_url][*weight]`; see model_spec.hpp for the forms.
#include "agents/model_spec.hpp"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr std::string_view k_form =
    "expected provider:model[@base_url][*weight] with provider openai, anthropic or replay, or 'builtin' "
    "(e.g. openai:gpt-5-mini, anthropic:claude-sonnet-4-5*2, openai:qwen@http://localhost:8000/v1)";

[[noreturn]] void bad_spec(std::string_view text, std::string_view problem)
{
    fail(ErrorKind::usage, "--model '{}': {}; {}", text, problem, k_form);
}

} // namespace

std::string ModelSpec::label() const
{
    if (is_builtin())
        return std::string(k_provider_builtin);
    std::string text = provider + ":" + model;
    if (!base_url.empty())
        text += "@" + base_url;
    return text;
}

ModelSpec parse_model_spec(std::string_view text)
{
    std::string rest = trim(text);
    ModelSpec spec;
    // The weight: a trailing "*number".
    if (size_t star = rest.rfind('*'); star != std::string::npos) {
        std::string number = rest.substr(star + 1);
        double weight = 0;
        auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), weight);
        if (ec != std::errc() || end != number.data() + number.size() || number.empty())
            bad_spec(text, fmt::format("'{}' after '*' is not a number", number));
        if (!(weight > 0) || !std::isfinite(weight))
            bad_spec(text, "a weight must be a positive number");
        spec.weight = weight;
        rest = rest.substr(0, star);
    }
    if (rest == k_provider_builtin) {
        spec.provider = k_provider_builtin;
        return spec;
    }
    size_t colon = rest.find(':');
    if (colon == std::string::npos)
        bad_spec(text, "no provider");
    spec.provider = to_lower(rest.substr(0, colon));
    rest = rest.substr(colon + 1);
    if (spec.provider != k_provider_openai && spec.provider != k_provider_anthropic &&
        spec.provider != k_provider_replay) {
        std::string hint = closest_match(spec.provider, {"openai", "anthropic", "replay", "builtin"});
        bad_spec(text, fmt::format("unknown provider '{}'{}", spec.provider,
                                   hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
    }
    for (std::string_view scheme : {"@https://", "@http://"}) {
        if (size_t at = rest.rfind(scheme); at != std::string::npos) {
            spec.base_url = rest.substr(at + 1);
            rest = rest.substr(0, at);
            break;
        }
    }
    while (spec.base_url.size() > 1 && spec.base_url.back() == '/')
        spec.base_url.pop_back();
    if (!spec.base_url.empty() && spec.provider == k_provider_replay)
        bad_spec(text, "a replay file takes no base URL");
    spec.model = rest;
    if (spec.model.empty())
        bad_spec(text, "no model name");
    if (spec.model.find_first_of(" \t\r\n") != std::string::npos)
        bad_spec(text, "the model name contains whitespace");
    return spec;
}

std::string_view api_key_variable(std::string_view provider)
{
    if (provider == k_provider_openai)
        return "OPENAI_API_KEY";
    if (provider == k_provider_anthropic)
        return "ANTHROPIC_API_KEY";
    return "";
}

} // namespace kforge
