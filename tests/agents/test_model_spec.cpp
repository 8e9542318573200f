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
