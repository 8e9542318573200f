// One model call over HTTP: send, judge the answer, retry what is worth retrying, record.
//
// The judgement of each attempt is the heart of "boring and unbreakable":
//   transport timeout, reset, dropped or truncated reply     -> retry
//   HTTP 408/409/425/429/5xx                                  -> retry (honouring Retry-After)
//   HTTP 2xx whose body is not the JSON a reply must be       -> retry (gateways do this)
//   HTTP 401/403                                              -> stop; complete() throws
//   HTTP 400/413 saying the prompt exceeds the context        -> stop; the caller shrinks it
//   429 "insufficient_quota", other 4xx, bad URL, bad TLS     -> stop
// Whatever the server sends back is scrubbed of the API key before it is kept anywhere.
#include "agents/http_provider.hpp"

#include <random>

#include <fmt/format.h>

#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr size_t k_kept_body_bytes = size_t{1} << 20;

std::string status_of_failure(TransportFailure failure, long http_status)
{
    switch (failure) {
    case TransportFailure::timeout: return "timeout";
    case TransportFailure::interrupted: return "interrupted";
    case TransportFailure::too_large: return "bad_reply";
    case TransportFailure::connection:
    case TransportFailure::fatal: return "network_error";
    case TransportFailure::none: break;
    }
    return http_status >= 200 && http_status < 300 ? "bad_reply" : "http_error";
}

uint64_t os_seed()
{
    std::random_device device;
    return (uint64_t{device()} << 32) ^ device();
}

} // namespace

HttpProvider::HttpProvider(const WireFormat& wire, ModelSpec spec, const ProviderSettings& settings,
                           std::string api_key)
    : Provider(std::move(spec), settings.recorder), m_wire(wire), m_settings(settings),
      m_api_key(std::move(api_key)), m_jitter(os_seed())
{
    m_custom_endpoint = !this->spec().base_url.empty();
    m_endpoint = m_wire.endpoint(m_custom_endpoint ? this->spec().base_url : std::string(m_wire.default_base_url));
}

uint64_t HttpProvider::next_jitter_seed()
{
    std::lock_guard lock(m_mutex);
    return m_jitter.next();
}

void HttpProvider::price_call(LlmCallRecord& record, const TokenUsage& usage)
{
    record.input_tokens = usage.input;
    record.cached_input_tokens = usage.cached_input;
    record.output_tokens = usage.output;
    std::optional<double> cost;
    if (m_settings.prices)
        cost = m_settings.prices->cost(record.provider, record.model, usage);
    record.cost_known = cost.has_value();
    record.cost_usd = cost.value_or(0);
    if (!cost) {
        std::lock_guard lock(m_mutex);
        if (!m_warned_price)
            log_warn("no price for {}:{} in the price table; its tokens are counted, its cost is not "
                     "(add it with --pricing FILE or $KFORGE_PRICING)",
                     record.provider, record.model);
        m_warned_price = true;
    }
}

ChatResult HttpProvider::exchange(const ChatRequest& request)
{
    ChatResult result;
    LlmCallRecord& record = result.record;
    record.provider = spec().provider;
    record.model = spec().model;
    record.base_url = spec().base_url;
    record.purpose = request.purpose;
    record.request = m_wire.build_body(spec(), request, m_custom_endpoint);

    HttpRequest http{m_endpoint, m_wire.auth_headers(m_api_key),
                     record.request.dump(-1, ' ', false, Json::error_handler_t::replace)};
    http.headers.push_back("Content-Type: application/json");
    HttpResponse last;
    std::optional<WireReply> reply;
    auto attempt = [&](int) -> AttemptJudgement {
        last = http_post(http, m_settings.timeouts, m_settings.max_reply_bytes);
        last.body = redact_secret(std::move(last.body), m_api_key);
        last.error = redact_secret(std::move(last.error), m_api_key);
        switch (last.failure) {
        case TransportFailure::none: break;
        case TransportFailure::timeout: return {AttemptKind::retry, "timed out: " + last.error, {}};
        case TransportFailure::connection: return {AttemptKind::retry, "connection failed: " + last.error, {}};
        case TransportFailure::interrupted: return {AttemptKind::stop, "interrupted", {}};
        case TransportFailure::fatal:
        case TransportFailure::too_large: return {AttemptKind::stop, last.error, {}};
        }
        long status = last.status;
        if (status >= 200 && status < 300) {
            JsonParseFailure failure;
            std::optional<Json> parsed = try_parse_json(last.body, failure);
            if (!parsed)
                return {AttemptKind::retry,
                        fmt::format("HTTP {} with a body that is not JSON ({} bytes: {}; {})", status, last.body.size(),
                                    describe_error_body(last.body), failure.message),
                        {}};
            Json body = std::move(*parsed);
            std::string problem;
            reply = m_wire.parse_reply(body, problem);
            if (!reply)
                return {AttemptKind::retry, fmt::format("HTTP {} without a usable reply: {}", status, problem), {}};
            return {AttemptKind::done, "", {}};
        }
        std::string what = fmt::format("HTTP {}: {}", status, describe_error_body(last.body));
        if (status == 401 || status == 403)
            return {AttemptKind::stop, what, {}};
        if ((status == 400 || status == 413) && is_context_length_error(last.body)) {
            result.context_exceeded = true;
            return {AttemptKind::stop, what, {}};
        }
        if (status == 429 && last.body.find("insufficient_quota") != std::string::npos)
            return {AttemptKind::stop, what + " (the account has no quota left; retrying cannot help)", {}};
        if (status == 408 || status == 409 || status == 425 || status == 429 || status >= 500)
            return {AttemptKind::retry, what, parse_retry_after(last.retry_after)};
        return {AttemptKind::stop, what, {}};
    };
    Rng jitter(next_jitter_seed());
    RetryReport report = run_with_retries(m_settings.retry, jitter, attempt);
    record.retries = report.retries;

    if (report.last.kind == AttemptKind::done) {
        record.reply = std::move(reply->text);
        result.cut_at_max_tokens = reply->cut_at_max_tokens;
        price_call(record, reply->usage);
        record.status = "ok";
        return result;
    }
    record.reply = last.body.size() > k_kept_body_bytes ? truncate_text(last.body, k_kept_body_bytes) : last.body;
    if (last.status == 401 || last.status == 403)
        record.status = "refused";
    else if (report.interrupted)
        record.status = "interrupted";
    else
        record.status = status_of_failure(last.failure, last.status);
    record.error = fmt::format("{}:{} at {}: {}", record.provider, record.model, m_endpoint, report.last.reason);
    if (report.gave_up)
        record.error += fmt::format(" (gave up after {} retr{})", report.retries, report.retries == 1 ? "y" : "ies");
    return result;
}

} // namespace kforge
