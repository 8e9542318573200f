// Model specs as users type them, and the weighted mix of models.
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <set>
#include <thread>

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

TEST_CASE("a replay spec takes a latency: fixed, a seeded range, or each record's own; malformed ones are refused",
          "[agents][replay]")
{
    ModelSpec plain = parse_model_spec("replay:calls.jsonl");
    CHECK(plain.replay_latency.kind == ReplayLatency::Kind::none);
    CHECK(plain.label() == "replay:calls.jsonl");

    ModelSpec fixed = parse_model_spec("replay:dir/calls.jsonl?latency=40s");
    CHECK(fixed.model == "dir/calls.jsonl");
    CHECK(fixed.replay_latency.kind == ReplayLatency::Kind::fixed);
    CHECK(fixed.replay_latency.low_s == 40);
    CHECK(fixed.label() == "replay:dir/calls.jsonl?latency=40s");
    CHECK(parse_model_spec(fixed.label()).replay_latency.low_s == 40); // the label reads back

    ModelSpec range = parse_model_spec("replay:replies/?latency=20s..1.5m*2");
    CHECK(range.model == "replies/");
    CHECK(range.weight == 2);
    CHECK(range.replay_latency.kind == ReplayLatency::Kind::range);
    CHECK(range.replay_latency.low_s == 20);
    CHECK(range.replay_latency.high_s == 90);
    CHECK(parse_model_spec("replay:a.jsonl?latency=recorded").replay_latency.kind == ReplayLatency::Kind::recorded);
    CHECK(parse_model_spec("replay:what?.jsonl").model == "what?.jsonl"); // a '?' in a file's name stays

    for (const char* bad : {"replay:a.jsonl?latency=", "replay:a.jsonl?latency=fast", "replay:a.jsonl?latency=-1s",
                            "replay:a.jsonl?latency=90s..20s", "replay:a.jsonl?latency=2h", "replay:a.jsonl?latency=nan",
                            "replay:a.jsonl?latency=5x", "replay:a.jsonl?latencyy=5s"}) {
        INFO(bad);
        try {
            parse_model_spec(bad);
            FAIL("accepted");
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::usage);
            CHECK_THAT(e.what(), Catch::Contains("?latency=40s"));
        }
    }
}

TEST_CASE("the replay provider serves a reply after its latency, calls waiting side by side, draws reproducible from "
          "the seed",
          "[agents][replay]")
{
    std::vector<LlmCallRecord> records;
    for (int i = 0; i < 4; ++i) {
        LlmCallRecord r;
        r.provider = "openai";
        r.model = "m";
        r.status = "ok";
        r.reply = "reply " + std::to_string(i);
        r.latency_s = 0.1 * (i + 1);
        records.push_back(r);
    }
    auto served_in = [](ReplayProvider& provider) {
        auto start = std::chrono::steady_clock::now();
        ChatResult result = provider.complete(ChatRequest{});
        CHECK(result.ok());
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };

    ReplayProvider at_once(parse_model_spec("replay:x.jsonl"), records, {});
    CHECK(at_once.latency_of(0) == 0);
    CHECK(served_in(at_once) < 30); // served, not stuck: any bound that allows for a loaded machine

    ReplayProvider fixed(parse_model_spec("replay:x.jsonl?latency=0.3s"), records, {});
    CHECK(fixed.latency_of(0) == Approx(0.3));
    double took = served_in(fixed);
    CHECK(took >= 0.3);
    CHECK(took < 30); // served, not stuck: any bound that allows for a loaded machine

    // Four calls at once take one latency each, side by side, as a server answers: every call's
    // wait overlaps every other's (one after another, none would).
    ReplayProvider parallel(parse_model_spec("replay:x.jsonl?latency=1s"), records, {});
    using Clock = std::chrono::steady_clock;
    std::vector<std::pair<Clock::time_point, Clock::time_point>> spans(4);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < spans.size(); ++i)
        threads.emplace_back([&, i] {
            spans[i].first = Clock::now();
            parallel.complete(ChatRequest{});
            spans[i].second = Clock::now();
        });
    for (auto& t : threads)
        t.join();
    for (const auto& a : spans)
        for (const auto& b : spans)
            CHECK(a.first < b.second);

    ReplayProvider recorded(parse_model_spec("replay:x.jsonl?latency=recorded"), records, {});
    for (size_t i = 0; i < records.size(); ++i)
        CHECK(recorded.latency_of(i) == Approx(records[i].latency_s));

    // A range: each reply's latency inside it, the same for the same seed, another for another seed.
    ModelSpec range = parse_model_spec("replay:x.jsonl?latency=20s..90s");
    ReplayProvider a(range, records, {}, 7), b(range, records, {}, 7), c(range, records, {}, 8);
    bool differs = false;
    std::set<double> seen;
    for (size_t i = 0; i < records.size(); ++i) {
        CHECK(a.latency_of(i) >= 20);
        CHECK(a.latency_of(i) <= 90);
        CHECK(a.latency_of(i) == b.latency_of(i));
        differs = differs || a.latency_of(i) != c.latency_of(i);
        seen.insert(a.latency_of(i));
    }
    CHECK(differs);
    CHECK(seen.size() == records.size());
}
