// Providers against the mock server: both wire formats, and every misbehaviour of the issue —
// each one retried and recovered, or ending in a clear status, never a crash or a hang.
#include <catch2/catch.hpp>

#include <chrono>

#include "agents/provider.hpp"
#include "mock_llm_server.hpp"
#include "net_support.hpp"
#include "util/error.hpp"
#include "util/json_reader.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

const ChatRequest k_request{CallPurpose::propose, "You write kernels.", "Write one."};

std::unique_ptr<Provider> openai_at(const MockLlmServer& server, const ProviderSettings& settings)
{
    return make_provider(parse_model_spec("openai:mock-model@" + server.openai_url()), settings);
}

std::unique_ptr<Provider> anthropic_at(const MockLlmServer& server, const ProviderSettings& settings)
{
    return make_provider(parse_model_spec("anthropic:mock-model@" + server.anthropic_url()), settings);
}

double seconds_since(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

TEST_CASE("openai: a reply's text, tokens, cost and latency are recorded as the server reported them", "[agents][net]")
{
    ScopedEnv no_key("OPENAI_API_KEY", std::nullopt);
    MockLlmServer server;
    MockStep step = MockStep::reply("CHANGE: x\n```cuda\nextern \"C\" __global__ void k() {}\n```");
    step.delay_s = 0.2;
    server.push(step);
    CallLog log;
    auto provider = openai_at(server, fast_settings(&log));
    ChatResult result = provider->complete(k_request);

    REQUIRE(result.ok());
    const LlmCallRecord& record = result.record;
    CHECK(record.reply == step.text);
    CHECK(record.provider == "openai");
    CHECK(record.model == "mock-model");
    CHECK(record.input_tokens == 1200);
    CHECK(record.cached_input_tokens == 200);
    CHECK(record.output_tokens == 345);
    CHECK(record.cost_known);
    CHECK(record.cost_usd == Approx((1000 * 2.0 + 200 * 0.5 + 345 * 8.0) / 1e6));
    CHECK(record.retries == 0);
    auto requests = server.requests();
    REQUIRE(requests.size() == 1);
    double served = requests[0].answered_s - requests[0].arrived_s;
    CHECK(record.latency_s >= served);
    CHECK(record.latency_s < served + 10); // the client's own overhead, on however loaded a machine
    REQUIRE(log.records.size() == 1);
    CHECK(log.records[0].cost_usd == record.cost_usd);

    // What was sent: the wire format, and no Authorization header without a key.
    CHECK(requests[0].path == "/v1/chat/completions");
    CHECK(requests[0].headers.count("authorization") == 0);
    Json body = Json::parse(requests[0].body);
    CHECK(body["model"] == "mock-model");
    CHECK(body["messages"][0]["role"] == "system");
    CHECK(body["messages"][1]["content"] == "Write one.");
    CHECK(body["max_tokens"] == 8192);
    CHECK_FALSE(body.contains("temperature"));
    CHECK(record.request == body);
}

TEST_CASE("anthropic: the Messages format, its headers and its usage fields", "[agents][net]")
{
    ScopedEnv key("ANTHROPIC_API_KEY", "test-anthropic-key");
    MockLlmServer server;
    server.push(MockStep::reply("hello"));
    auto provider = anthropic_at(server, fast_settings());
    ChatResult result = provider->complete(k_request);
    REQUIRE(result.ok());
    CHECK(result.record.reply == "hello");
    CHECK(result.record.input_tokens == 1200); // input_tokens + cache reads
    CHECK(result.record.cached_input_tokens == 200);
    CHECK(result.record.output_tokens == 345);
    CHECK(result.record.cost_usd == Approx((1000 * 3.0 + 200 * 0.3 + 345 * 15.0) / 1e6));
    auto request = server.requests().at(0);
    CHECK(request.path == "/v1/messages");
    CHECK(request.headers["x-api-key"] == "test-anthropic-key");
    CHECK(request.headers["anthropic-version"] == "2023-06-01");
    Json body = Json::parse(request.body);
    CHECK(body["system"] == "You write kernels.");
    CHECK(body["max_tokens"] == 8192);
}

TEST_CASE("with a key, a custom endpoint gets the Authorization header", "[agents][net]")
{
    ScopedEnv key("OPENAI_API_KEY", "test-openai-key");
    MockLlmServer server;
    auto provider = openai_at(server, fast_settings());
    REQUIRE(provider->complete(k_request).ok());
    CHECK(server.requests().at(0).headers["authorization"] == "Bearer test-openai-key");
}

TEST_CASE("429 with Retry-After: the client waits as asked, retries and recovers", "[agents][net]")
{
    ScopedEnv no_key("OPENAI_API_KEY", std::nullopt);
    MockLlmServer server;
    server.push(MockStep::error(429, "1"));
    auto provider = openai_at(server, fast_settings());
    ChatResult result = provider->complete(k_request);
    REQUIRE(result.ok());
    CHECK(result.record.retries == 1);
    auto requests = server.requests();
    REQUIRE(requests.size() == 2);
    CHECK(requests[1].arrived_s - requests[0].arrived_s >= 0.95);
}

TEST_CASE("500 and 503 are retried until the server recovers", "[agents][net]")
{
    ScopedEnv no_key("OPENAI_API_KEY", std::nullopt);
    MockLlmServer server;
    server.push(MockStep::error(500));
    server.push(MockStep::error(503));
    auto provider = anthropic_at(server, fast_settings());
    ChatResult result = provider->complete(k_request);
    REQUIRE(result.ok());
    CHECK(result.record.retries == 2);
    CHECK(server.request_count() == 3);
}

TEST_CASE("a server that never recovers ends in http_error after the retry cap", "[agents][net]")
{
    ScopedEnv no_key("OPENAI_API_KEY", std::nullopt);
    MockLlmServer server;
    server.set_default(MockStep::error(502));
    CallLog log;
    auto provider = openai_at(server, fast_settings(&log));
    ChatResult result = provider->complete(k_request);
    CHECK(result.record.status == "http_error");
    CHECK(result.record.retries == 3);
    CHECK(server.request_count() == 4);
    CHECK_THAT(result.record.error, Catch::Contains("HTTP 502") && Catch::Contains("gave up after 3 retries") &&
                                        Catch::Contains("mock error 502"));
    CHECK(log.records.size() == 1);
}

TEST_CASE("a stall past the total timeout is a timeout, retried and recovered", "[agents][net]")
{
    ScopedEnv no_key("OPENAI_API_KEY", std::nullopt);
    MockLlmServer server;
    MockStep stall = MockStep::reply("late");
    stall.behaviour = MockBehaviour::stall;
    stall.delay_s = 120; // released when the server stops
    server.push(stall);
    ProviderSettings settings = fast_settings();
    // Short enough to end the stall early, long enough for the retry's prompt reply on any load.
    settings.timeouts.total = std::chrono::milliseconds(1500);
    auto provider = openai_at(server, settings);
    auto start = std::chrono::steady_clock::now();
    ChatResult result = provider->complete(k_request);
    REQUIRE(result.ok());
    CHECK(result.record.retries == 1);
    CHECK(seconds_since(start) < 60); // it did not wait for the stall
}

TEST_CASE("a server that always stalls ends in a timeout status, without hanging", "[agents][net]")
{
    ScopedEnv no_key("OPENAI_API_KEY", std::nullopt);
    MockLlmServer server;
    MockStep stall;
    stall.behaviour = MockBehaviour::stall;
    stall.delay_s = 120; // released when the server stops
    server.set_default(stall);
    ProviderSettings settings = fast_settings();
    settings.timeouts.total = std::chrono::milliseconds(200);
    settings.retry.max_retries = 2;
    auto provider = openai_at(server, settings);
    auto start = std::chrono::steady_clock::now();
    ChatResult result = provider->complete(k_request);
    CHECK(result.record.status == "timeout");
    CHECK(result.record.retries == 2);
    CHECK_THAT(result.record.error, Catch::Contains("timed out"));
    CHECK(seconds_since(start) < 60); // it did not wait for the stalls
}

TEST_CASE("a connection dropped after the headers is retried and recovered", "[agents][net]")
{
    ScopedEnv no_key("OPENAI_API_KEY", std::nullopt);
    MockLlmServer server;
    MockStep drop;
    drop.behaviour = MockBehaviour::drop;
    server.push(drop);
    auto provider = openai_at(server, fast_settings());
    ChatResult result = provider->complete(k_request);
    REQUIRE(result.ok());
    CHECK(result.record.retries == 1);
}

TEST_CASE("a truncated body is retried and recovered", "[agents][net]")
{
    ScopedEnv no_key("ANTHROPIC_API_KEY", std::nullopt);
    MockLlmServer server;
    MockStep cut;
    cut.behaviour = MockBehaviour::truncate;
    server.push(cut);
    auto provider = anthropic_at(server, fast_settings());
    ChatResult result = provider->complete(k_request);
    REQUIRE(result.ok());
    CHECK(result.record.retries == 1);
}

TEST_CASE("malformed JSON is retried; if it persists the status is bad_reply with the body kept", "[agents][net]")
{
    ScopedEnv no_key("OPENAI_API_KEY", std::nullopt);
    MockLlmServer server;
    MockStep garbage;
    garbage.behaviour = MockBehaviour::malformed_json;
    server.push(garbage);
    auto provider = openai_at(server, fast_settings());
    ChatResult recovered = provider->complete(k_request);
    REQUIRE(recovered.ok());
    CHECK(recovered.record.retries == 1);

    server.set_default(garbage);
    ChatResult failed = provider->complete(k_request);
    CHECK(failed.record.status == "bad_reply");
    CHECK_THAT(failed.record.error, Catch::Contains("not JSON"));
    CHECK_THAT(failed.record.reply, Catch::Contains("unterminated"));

    MockStep wrong_shape;
    wrong_shape.behaviour = MockBehaviour::raw;
    wrong_shape.body = R"({"object": "list", "data": []})";
    server.set_default(wrong_shape);
    failed = provider->complete(k_request);
    CHECK(failed.record.status == "bad_reply");
    CHECK_THAT(failed.record.error, Catch::Contains("no choices[0]"));
}

TEST_CASE("401 and 403 stop the run with a message naming the provider and the key variable", "[agents][net]")
{
    for (int status : {401, 403}) {
        ScopedEnv key("OPENAI_API_KEY", "sk-wrong");
        MockLlmServer server;
        server.set_default(MockStep::error(status));
        CallLog log;
        auto provider = openai_at(server, fast_settings(&log));
        try {
            provider->complete(k_request);
            FAIL("no error for HTTP " << status);
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::runtime);
            CHECK_THAT(e.what(), Catch::Contains("openai:mock-model") && Catch::Contains("OPENAI_API_KEY") &&
                                     Catch::Contains("HTTP " + std::to_string(status)));
        }
        CHECK(server.request_count() == 1); // not retried
        REQUIRE(log.records.size() == 1);  // but recorded
        CHECK(log.records[0].status == "refused");
    }
}

TEST_CASE("a context-length error is reported for the caller, not retried", "[agents][net]")
{
    ScopedEnv no_key("OPENAI_API_KEY", std::nullopt);
    MockLlmServer server;
    MockStep too_long = MockStep::error(400);
    too_long.body = R"({"error": {"message": "This model's maximum context length is 8192 tokens.", "code": "context_length_exceeded"}})";
    server.push(too_long);
    auto provider = openai_at(server, fast_settings());
    ChatResult result = provider->complete(k_request);
    CHECK_FALSE(result.ok());
    CHECK(result.context_exceeded);
    CHECK(result.record.retries == 0);
    CHECK_THAT(result.record.error, Catch::Contains("maximum context length"));
}

TEST_CASE("an exhausted quota and an over-long Retry-After are not waited out", "[agents][net]")
{
    ScopedEnv no_key("OPENAI_API_KEY", std::nullopt);
    MockLlmServer server;
    MockStep quota = MockStep::error(429);
    quota.body = R"({"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}})";
    server.push(quota);
    server.push(MockStep::error(429, "86400"));
    auto provider = openai_at(server, fast_settings());
    ChatResult result = provider->complete(k_request);
    CHECK(result.record.status == "http_error");
    CHECK_THAT(result.record.error, Catch::Contains("no quota left"));
    result = provider->complete(k_request);
    CHECK(result.record.status == "http_error");
    CHECK_THAT(result.record.error, Catch::Contains("asked to wait 86400 s"));
    CHECK(server.request_count() == 2);
}

TEST_CASE("a refused connection ends in network_error after the retries", "[agents][net]")
{
    ScopedEnv no_key("OPENAI_API_KEY", std::nullopt);
    int port;
    {
        MockLlmServer gone;
        port = gone.port();
    }
    ProviderSettings settings = fast_settings();
    auto provider = make_provider(parse_model_spec("openai:mock-model@http://127.0.0.1:" + std::to_string(port) + "/v1"), settings);
    ChatResult result = provider->complete(k_request);
    CHECK(result.record.status == "network_error");
    CHECK(result.record.retries == 3);
    CHECK_THAT(result.record.error, Catch::Contains("connection failed"));
}

TEST_CASE("a missing key for a public endpoint is refused before any call", "[agents]")
{
    ScopedEnv no_key("ANTHROPIC_API_KEY", std::nullopt);
    CHECK_THROWS_WITH(make_provider(parse_model_spec("anthropic:claude-sonnet-4-5"), fast_settings()),
                      Catch::Contains("ANTHROPIC_API_KEY") && Catch::Contains("builtin"));
}

TEST_CASE("a model missing from the price table still has its tokens counted", "[agents][net]")
{
    ScopedEnv no_key("OPENAI_API_KEY", std::nullopt);
    MockLlmServer server;
    auto provider = make_provider(parse_model_spec("openai:unpriced-model@" + server.openai_url()), fast_settings());
    ChatResult result = provider->complete(k_request);
    REQUIRE(result.ok());
    CHECK_FALSE(result.record.cost_known);
    CHECK(result.record.cost_usd == 0);
    CHECK(result.record.input_tokens == 1200);
    CHECK(result.record.output_tokens == 345);
}

TEST_CASE("a key echoed back by a server never reaches the record", "[agents][net]")
{
    const std::string key = "sk-echo-secret-0123456789";
    ScopedEnv env("OPENAI_API_KEY", key);
    MockLlmServer server;
    MockStep echo = MockStep::error(500);
    echo.echo_credentials = true;
    server.set_default(echo);
    ProviderSettings settings = fast_settings();
    settings.retry.max_retries = 1;
    auto provider = openai_at(server, settings);
    ChatResult failed = provider->complete(k_request);
    CHECK_THAT(failed.record.reply, Catch::Contains("[redacted]") && !Catch::Contains(key));
    CHECK_THAT(failed.record.error, !Catch::Contains(key));

    MockStep ok = MockStep::reply("fine");
    ok.echo_credentials = true;
    server.set_default(ok);
    ChatResult result = provider->complete(k_request);
    REQUIRE(result.ok());
    CHECK_THAT(result.record.reply, Catch::Contains("[redacted]") && !Catch::Contains(key));
    CHECK_THAT(result.record.request.dump(), !Catch::Contains(key));
}

TEST_CASE("a reply larger than the size cap is refused as bad_reply, not retried", "[agents][net]")
{
    ScopedEnv no_key("OPENAI_API_KEY", std::nullopt);
    MockLlmServer server;
    server.push(MockStep::reply(std::string(100000, 'x')));
    ProviderSettings settings = fast_settings();
    settings.max_reply_bytes = 10000;
    auto provider = openai_at(server, settings);
    ChatResult result = provider->complete(k_request);
    CHECK(result.record.status == "bad_reply");
    CHECK_THAT(result.record.error, Catch::Contains("exceeded 10000 bytes"));
    CHECK(server.request_count() == 1);
}

// OPENAI_API_KEY=x (or vLLM's "EMPTY") is a placeholder for a local server; redacting it replaced
// every 'x' of every reply, so "max(" arrived as "ma[redacted](" and every kernel was a plan_error.
TEST_CASE("a placeholder key of a few characters leaves the replies as they are", "[agents][net]")
{
    for (const std::string key : {"x", "EMPTY", "none"}) {
        ScopedEnv env("OPENAI_API_KEY", key);
        MockLlmServer server;
        server.set_default(MockStep::reply("grid: max(1, ceil_div(n, 256)); EMPTY none x"));
        auto provider = openai_at(server, fast_settings());
        ChatResult result = provider->complete(k_request);
        INFO(key);
        REQUIRE(result.ok());
        CHECK(result.record.reply == "grid: max(1, ceil_div(n, 256)); EMPTY none x");
    }
}
