// Model specs as users type them, and the weighted mix of models.
#include <catch2/catch.hpp>

#include <map>

#include "agents/model_mix.hpp"
#include "agents/model_spec.hpp"
#include "agents/replay_provider.hpp"
#include "util/error.hpp"

using namespace kforge;

TEST_CASE("model specs name a provider, a model, an optional base URL and weight", "[agents]")
{
    ModelSpec plain = parse_model_spec("openai:gpt-5-mini");
    CHECK(plain.provider == "openai");
    CHECK(plain.model == "gpt-5-mini");
    CHECK(plain.base_url.empty());
    CHECK(plain.weight == 1.0);

    ModelSpec local = parse_model_spec("openai:llama3.1:8b@http://localhost:11434/v1/*0.5");
    CHECK(local.model == "llama3.1:8b");
    CHECK(local.base_url == "http://localhost:11434/v1");
    CHECK(local.weight == 0.5);
    CHECK(local.label() == "openai:llama3.1:8b@http://localhost:11434/v1");

    ModelSpec claude = parse_model_spec("anthropic:claude-sonnet-4-5*3");
    CHECK(claude.provider == "anthropic");
    CHECK(claude.weight == 3.0);

    CHECK(parse_model_spec("builtin").is_builtin());
    CHECK(parse_model_spec("replay:runs/calls.jsonl").model == "runs/calls.jsonl");
}

TEST_CASE("a malformed model spec is a usage error that shows the expected form", "[agents]")
{
    auto message_of = [](const std::string& text) {
        try {
            parse_model_spec(text);
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::usage);
            return std::string(e.what());
        }
        FAIL("no error for " << text);
        return std::string();
    };
    CHECK_THAT(message_of("gpt-5"), Catch::Contains("no provider") && Catch::Contains("provider:model"));
    CHECK_THAT(message_of("opnai:gpt-5"), Catch::Contains("did you mean 'openai'"));
    CHECK_THAT(message_of("openai:"), Catch::Contains("no model name"));
    CHECK_THAT(message_of("openai:gpt*zero"), Catch::Contains("not a number"));
    CHECK_THAT(message_of("openai:gpt*0"), Catch::Contains("positive"));
}

TEST_CASE("a model mix picks models in proportion to their weights, reproducibly from the seed", "[agents]")
{
    ModelSpec a = parse_model_spec("replay:a.jsonl"), b = parse_model_spec("replay:b.jsonl");
    ModelMix mix;
    mix.add(std::make_shared<ReplayProvider>(a, std::vector<LlmCallRecord>{}, CallRecorder{}), 3);
    mix.add(std::make_shared<ReplayProvider>(b, std::vector<LlmCallRecord>{}, CallRecorder{}), 1);
    Rng rng(42), again(42);
    std::map<size_t, int> counts;
    for (int i = 0; i < 4000; ++i) {
        size_t pick = mix.pick_index(rng);
        REQUIRE(pick == mix.pick_index(again));
        ++counts[pick];
    }
    CHECK(counts[0] > 2700);
    CHECK(counts[0] < 3300);

    ModelMix single;
    single.add(std::make_shared<ReplayProvider>(a, std::vector<LlmCallRecord>{}, CallRecorder{}), 1);
    Rng untouched(7);
    std::string before = untouched.save();
    CHECK(single.pick_index(untouched) == 0);
    CHECK(untouched.save() == before); // one model draws no random number
}

TEST_CASE("only http(s)://host[:port][/path] is a base URL; anything after '@' that is not one is refused",
          "[agents][hostile]")
{
    auto usage_error = [](const std::string& text) {
        try {
            parse_model_spec(text);
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::usage);
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK_THAT(usage_error("openai:x@notaurl"), Catch::Contains("'notaurl' after '@' is not a base URL"));
    CHECK_THAT(usage_error("openai:x@ftp://host/v1"), Catch::Contains("starts with http:// or https://"));
    CHECK_THAT(usage_error("openai:x@http://"), Catch::Contains("no host"));
    CHECK_THAT(usage_error("openai:x@http://host:0/v1"), Catch::Contains("'0' is not a port"));
    CHECK_THAT(usage_error("openai:x@http://host:99999"), Catch::Contains("'99999' is not a port"));
    CHECK_THAT(usage_error("openai:x@http://ho st/v1"), Catch::Contains("is not a host name"));
    CHECK_THAT(usage_error("openai:x@http://host/v1?key=1"), Catch::Contains("no spaces, query, fragment"));
    CHECK_THAT(usage_error("anthropic:x@https://[::1"), Catch::Contains("closed with ']'"));
    CHECK_FALSE(usage_error("openai:x@http://user:pw@host/v1").empty());
    CHECK(check_base_url("http://user:pw@host/v1") == "a base URL takes no user name or password (the key comes from "
                                                      "the environment)");
    CHECK(check_base_url("https://api.example.com") == "");
    CHECK(check_base_url("http://10.0.0.2:8000/v1") == "");
    CHECK(check_base_url("HTTPS://[fe80::1]:443/openai/v1") == "");
    CHECK(parse_model_spec("openai:x@https://[::1]:8000/v1").base_url == "https://[::1]:8000/v1");
}
