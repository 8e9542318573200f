// Parsing `provider:model[@base_url][*weight]`; see model_spec.hpp for the forms.
#include "agents/model_spec.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>

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

// "40s", "1.5m", "40" (seconds), "0": seconds from 0 to k_max_replay_latency_s; nullopt otherwise.
std::optional<double> latency_seconds(std::string_view text)
{
    double unit = 1;
    if (!text.empty() && (text.back() == 's' || text.back() == 'm')) {
        unit = text.back() == 'm' ? 60 : 1;
        text.remove_suffix(1);
    }
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) || value < 0 ||
        value * unit > k_max_replay_latency_s)
        return std::nullopt;
    return value * unit;
}

// The query of a replay spec: "latency=40s", "latency=20s..90s" or "latency=recorded".
ReplayLatency parse_replay_latency(std::string_view spec_text, std::string_view query)
{
    auto bad = [&](std::string_view why) {
        fail(ErrorKind::usage, "--model '{}': {}; a replay file takes ?latency=40s, ?latency=20s..90s (drawn from the "
                               "run's seed) or ?latency=recorded (each record's latency_s), each at most {:.0f} s",
             spec_text, why, k_max_replay_latency_s);
    };
    constexpr std::string_view key = "latency=";
    if (query.substr(0, key.size()) != key)
        bad(fmt::format("'?{}' is not a latency", query));
    std::string_view value = query.substr(key.size());
    ReplayLatency latency;
    if (value == "recorded") {
        latency.kind = ReplayLatency::Kind::recorded;
        return latency;
    }
    size_t dots = value.find("..");
    auto low = latency_seconds(value.substr(0, dots));
    auto high = dots == std::string_view::npos ? low : latency_seconds(value.substr(dots + 2));
    if (!low || !high)
        bad(fmt::format("'{}' is not a latency (a number of seconds, with s or m)", value));
    if (*high < *low)
        bad(fmt::format("'{}' ends below its start", value));
    latency.kind = dots == std::string_view::npos ? ReplayLatency::Kind::fixed : ReplayLatency::Kind::range;
    latency.low_s = *low;
    latency.high_s = *high;
    return latency;
}

bool is_host_char(char c)
{
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

} // namespace

std::string check_base_url(std::string_view url)
{
    std::string_view rest = url;
    bool https = to_lower(rest.substr(0, 8)) == "https://";
    if (!https && to_lower(rest.substr(0, 7)) != "http://")
        return "a base URL starts with http:// or https://";
    rest.remove_prefix(https ? 8 : 7);
    size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    if (authority.find('@') != std::string_view::npos)
        return "a base URL takes no user name or password (the key comes from the environment)";
    std::string_view host = authority;
    std::string_view port;
    if (!host.empty() && host.front() == '[') { // an IPv6 literal
        size_t close = host.find(']');
        if (close == std::string_view::npos)
            return "an IPv6 host must be closed with ']'";
        std::string_view inside = host.substr(1, close - 1);
        if (inside.empty() || inside.find_first_not_of("0123456789abcdefABCDEF:.") != std::string_view::npos)
            return "the IPv6 host is not an address";
        std::string_view after = host.substr(close + 1);
        if (!after.empty() && after.front() != ':')
            return "unexpected text after the IPv6 host";
        port = after.empty() ? after : after.substr(1);
        host = host.substr(0, close + 1);
        if (after.empty())
            port = {};
    } else if (size_t colon = host.find(':'); colon != std::string_view::npos) {
        port = host.substr(colon + 1);
        host = host.substr(0, colon);
        if (port.empty())
            return "an empty port after ':'";
    }
    if (host.empty())
        return "no host";
    if (host.front() != '[' && !std::all_of(host.begin(), host.end(), is_host_char))
        return fmt::format("'{}' is not a host name", host);
    if (!port.empty()) {
        unsigned value = 0;
        auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (ec != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535)
            return fmt::format("'{}' is not a port (1 to 65535)", port);
    }
    for (char c : path)
        if (static_cast<unsigned char>(c) <= ' ' || c == '?' || c == '#' || c == '@' || c == '\\' ||
            static_cast<unsigned char>(c) >= 0x7f)
            return "the path of a base URL is plain: no spaces, query, fragment or '@'";
    return "";
}

std::string ModelSpec::label() const
{
    if (is_builtin())
        return std::string(k_provider_builtin);
    std::string text = provider + ":" + model;
    if (!base_url.empty())
        text += "@" + base_url;
    return text + replay_latency.text();
}

std::string ReplayLatency::text() const
{
    switch (kind) {
    case Kind::none: return "";
    case Kind::recorded: return "?latency=recorded";
    case Kind::fixed: return fmt::format("?latency={:g}s", low_s);
    case Kind::range: return fmt::format("?latency={:g}s..{:g}s", low_s, high_s);
    }
    return "";
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
    // "@" starts the base URL: everything after the last '@' must be one, so a typo never quietly
    // becomes part of the model name while the request (key included) goes to the default endpoint.
    if (size_t at = rest.rfind('@'); at != std::string::npos && spec.provider != k_provider_replay) {
        std::string url = rest.substr(at + 1);
        if (std::string problem = check_base_url(url); !problem.empty())
            bad_spec(text, fmt::format("'{}' after '@' is not a base URL ({}; expected http(s)://host[:port][/path])",
                                       url, problem));
        spec.base_url = url;
        rest = rest.substr(0, at);
    } else if (spec.provider == k_provider_replay) {
        for (std::string_view scheme : {"@https://", "@http://"})
            if (rest.find(scheme) != std::string::npos)
                bad_spec(text, "a replay file takes no base URL");
    }
    while (spec.base_url.size() > 1 && spec.base_url.back() == '/')
        spec.base_url.pop_back();
    // "?latency..." ends a replay spec (a '?' elsewhere is part of the file's name).
    if (size_t query = rest.rfind('?'); spec.provider == k_provider_replay && query != std::string::npos &&
                                        rest.compare(query + 1, 7, "latency") == 0) {
        spec.replay_latency = parse_replay_latency(text, rest.substr(query + 1));
        rest = rest.substr(0, query);
    }
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
