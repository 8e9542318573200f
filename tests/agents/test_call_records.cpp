// Call records as JSONL, and the replay provider that serves them back.
#include <catch2/catch.hpp>

#include "agents/call_record_json.hpp"
#include "agents/llm_proposer.hpp"
#include "agents/replay_provider.hpp"
#include "prompt_fixtures.hpp"
#include "test_support.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

LlmCallRecord sample_record()
{
    LlmCallRecord record;
    record.provider = "anthropic";
    record.model = "claude-x";
    record.base_url = "http://127.0.0.1:9/v1";
    record.purpose = CallPurpose::analyst;
    record.request = Json{{"model", "claude-x"}, {"system", "sys"}, {"messages", Json::array({{{"role", "user"}, {"content", "hi"}}})}};
    record.reply = "LESSON: x\n\xff invalid utf-8 kept safe";
    record.input_tokens = 10;
    record.cached_input_tokens = 2;
    record.output_tokens = 3;
    record.cost_usd = 0.25;
    record.cost_known = false;
    record.latency_s = 1.5;
    record.retries = 2;
    record.status = "ok";
    record.started_at = 1700000000.5;
    return record;
}

} // namespace

TEST_CASE("call records survive a JSONL round trip, invalid UTF-8 included", "[agents]")
{
    TempDir dir;
    LlmCallRecord record = sample_record();
    append_call_record(dir / "calls.jsonl", record);
    record.status = "timeout";
    record.error = "timed out";
    append_call_record(dir / "calls.jsonl", record);
    std::vector<LlmCallRecord> loaded = load_call_records(dir / "calls.jsonl");
    REQUIRE(loaded.size() == 2);
    const LlmCallRecord& first = loaded[0];
    CHECK(first.provider == "anthropic");
    CHECK(first.base_url == "http://127.0.0.1:9/v1");
    CHECK(first.purpose == CallPurpose::analyst);
    CHECK(first.request == record.request);
    CHECK_THAT(first.reply, Catch::StartsWith("LESSON: x\n") && Catch::EndsWith("invalid utf-8 kept safe"));
    CHECK(first.input_tokens == 10);
    CHECK(first.cached_input_tokens == 2);
    CHECK(first.output_tokens == 3);
    CHECK(first.cost_usd == 0.25);
    CHECK_FALSE(first.cost_known);
    CHECK(first.latency_s == 1.5);
    CHECK(first.retries == 2);
    CHECK(first.started_at == 1700000000.5);
    CHECK(loaded[1].status == "timeout");
    CHECK(loaded[1].error == "timed out");
    auto prompt = recorded_prompt(first);
    REQUIRE(prompt);
    CHECK(prompt->system == "sys");
    CHECK(prompt->user == "hi");
}

TEST_CASE("a malformed record file names the file, the line and the field", "[agents]")
{
    TempDir dir;
    write_text(dir / "bad.jsonl", "\n{\"provider\": \"openai\", \"purpose\": \"dream\"}\n");
    CHECK_THROWS_WITH(load_call_records(dir / "bad.jsonl"), Catch::Contains("bad.jsonl:2") && Catch::Contains("purpose"));
    write_text(dir / "bad2.jsonl", "{\"provider\": \"openai\"}\nnot json\n");
    CHECK_THROWS_WITH(load_call_records(dir / "bad2.jsonl"), Catch::Contains("bad2.jsonl:2"));
}

TEST_CASE("replay answers a matching prompt first, then recorded replies in order, then fails", "[agents]")
{
    auto record = [](std::string user, std::string reply) {
        LlmCallRecord r;
        r.provider = "openai";
        r.model = "m";
        r.request = Json{{"messages", Json::array({{{"role", "system"}, {"content", "S"}}, {{"role", "user"}, {"content", user}}})}};
        r.reply = std::move(reply);
        r.input_tokens = 7;
        r.cost_usd = 3;
        return r;
    };
    LlmCallRecord builtin;
    builtin.provider = "builtin";
    ReplayProvider provider(parse_model_spec("replay:x.jsonl"), {record("first", "A"), builtin, record("second", "B")}, {});
    CHECK(provider.unused() == 2);
    ChatResult b = provider.complete({CallPurpose::propose, "S", "second"});
    CHECK(b.record.reply == "B");
    CHECK(b.record.provider == "replay");
    CHECK(b.record.model == "openai:m");
    CHECK(b.record.input_tokens == 7);
    CHECK(b.record.cost_usd == 0);
    ChatResult a = provider.complete({CallPurpose::propose, "S", "something else"});
    CHECK(a.record.reply == "A");
    ChatResult none = provider.complete({CallPurpose::propose, "S", "second"});
    CHECK_FALSE(none.ok());
    CHECK_THAT(none.record.error, Catch::Contains("all 2 recorded replies have been served"));
}

TEST_CASE("a recorded session replays to the same candidate", "[agents]")
{
    TempDir dir;
    const PromptLibrary& library = shipped_prompts();
    // A first "session": a replay provider that records what it serves, as --record does.
    LlmCallRecord original;
    original.provider = "openai";
    original.model = "gpt-x";
    original.reply = "CHANGE: seed\n```cuda\nextern \"C\" __global__ void k() {}\n```";
    ModelMix first_mix;
    first_mix.add(std::make_shared<ReplayProvider>(parse_model_spec("replay:a"), std::vector<LlmCallRecord>{original},
                                                   [&](LlmCallRecord& r) { append_call_record(dir / "session.jsonl", r); }),
                  1);
    LlmProposer first(std::move(first_mix), library);
    Rng rng(1);
    Proposal recorded = first.propose(ProposalContext{rowscale_task()}, rng);
    REQUIRE(recorded.source);

    auto provider = make_provider(parse_model_spec("replay:" + (dir / "session.jsonl").string()), ProviderSettings{});
    ModelMix mix;
    mix.add(std::shared_ptr<Provider>(std::move(provider)), 1);
    LlmProposer replayed(std::move(mix), library);
    Rng again(1);
    Proposal proposal = replayed.propose(ProposalContext{rowscale_task()}, again);
    REQUIRE(proposal.source);
    CHECK(*proposal.source == *recorded.source);
    CHECK(proposal.note == recorded.note);
}
