// The LLM proposer end to end against the mock server: shrinking prompts on context errors, and
// the verdicts of replies without usable code.
#include <catch2/catch.hpp>

#include "agents/llm_proposer.hpp"
#include "mock_llm_server.hpp"
#include "net_support.hpp"
#include "prompt_fixtures.hpp"
#include "test_support.hpp"
#include "util/json_reader.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

const std::string k_proposed_kernel = "extern \"C\" __global__ void scale_vec(const float* x, float* y, int M, int N) {}";

struct Setup {
    ScopedEnv no_key{"OPENAI_API_KEY", std::nullopt};
    MockLlmServer server;
    CallLog log;
    std::unique_ptr<LlmProposer> proposer;
    Rng rng{1};
    explicit Setup(const std::string& provider = "openai")
    {
        ModelMix mix;
        std::string url = provider == "openai" ? server.openai_url() : server.anthropic_url();
        mix.add(make_provider(parse_model_spec(provider + ":mock-model@" + url), fast_settings(&log)), 1);
        proposer = std::make_unique<LlmProposer>(std::move(mix), shipped_prompts());
    }
};

ProposalContext context_with_everything()
{
    ProposalContext context{rowscale_task()};
    context.parent = sample_parent();
    context.inspirations = {sample_inspiration(1)};
    context.lessons = sample_lessons();
    return context;
}

std::string user_prompt_of(const MockRequest& request)
{
    Json body = Json::parse(request.body);
    return body["messages"].back()["content"].get<std::string>();
}

MockStep context_error()
{
    MockStep step = MockStep::error(400);
    step.body = R"({"error": {"message": "maximum context length is 4096 tokens", "code": "context_length_exceeded"}})";
    return step;
}

} // namespace

TEST_CASE("a context-length error drops lessons and asks once more; the shrink sticks", "[agents][net]")
{
    Setup setup;
    setup.server.push(context_error());
    setup.server.push(MockStep::reply("CHANGE: vector loads\n```cuda\n" + k_proposed_kernel + "\n```"));
    ProposalContext context = context_with_everything();
    Proposal proposal = setup.proposer->propose(context, setup.rng);
    REQUIRE(proposal.outcome == ProposalOutcome::source);
    CHECK(*proposal.source == k_proposed_kernel);
    CHECK(proposal.note == "vector loads");
    REQUIRE(proposal.calls.size() == 2);
    CHECK(proposal.calls[0].status == "http_error");
    CHECK(proposal.calls[1].status == "ok");
    auto requests = setup.server.requests();
    REQUIRE(requests.size() == 2);
    CHECK_THAT(user_prompt_of(requests[0]), Catch::Contains("# Lessons") && Catch::Contains("# Another kernel"));
    CHECK_THAT(user_prompt_of(requests[1]), !Catch::Contains("# Lessons") && Catch::Contains("# Another kernel"));

    // The next proposal starts from the smaller prompt; another overflow drops the inspirations.
    setup.server.push(context_error());
    proposal = setup.proposer->propose(context, setup.rng);
    REQUIRE(proposal.outcome == ProposalOutcome::source);
    requests = setup.server.requests();
    REQUIRE(requests.size() == 4);
    CHECK_THAT(user_prompt_of(requests[2]), !Catch::Contains("# Lessons") && Catch::Contains("# Another kernel"));
    CHECK_THAT(user_prompt_of(requests[3]), !Catch::Contains("# Another kernel") && Catch::Contains("# The current kernel"));
}

TEST_CASE("a prompt that fits no context window fails the call with advice, after one retry", "[agents][net]")
{
    Setup setup;
    setup.server.set_default(context_error());
    Proposal proposal = setup.proposer->propose(context_with_everything(), setup.rng);
    CHECK(proposal.outcome == ProposalOutcome::call_failed);
    CHECK(proposal.calls.size() == 2);
    CHECK_THAT(proposal.failure.message, Catch::Contains("does not fit the model's context window"));
}

TEST_CASE("a reply with no code is a no_code verdict that says so", "[agents][net]")
{
    Setup setup("anthropic");
    setup.server.push(MockStep::reply("I think you should use shared memory tiling."));
    Proposal proposal = setup.proposer->propose(ProposalContext{rowscale_task()}, setup.rng);
    CHECK(proposal.outcome == ProposalOutcome::no_code);
    CHECK(proposal.failure.kind == VerdictKind::no_code);
    CHECK_THAT(proposal.failure.message, Catch::Contains("no code block"));
    CHECK(proposal.calls.size() == 1);
    CHECK(proposal.calls[0].status == "ok");
}

TEST_CASE("a 2 MB reply is handled and its kernel found", "[agents][net]")
{
    Setup setup;
    std::string padding;
    while (padding.size() < 2 * 1024 * 1024)
        padding += "Some long reasoning about memory coalescing and occupancy.\n";
    setup.server.push(MockStep::reply("CHANGE: huge\n" + padding + "```cuda\n" + k_proposed_kernel + "\n```\n"));
    Proposal proposal = setup.proposer->propose(ProposalContext{rowscale_task()}, setup.rng);
    REQUIRE(proposal.outcome == ProposalOutcome::source);
    CHECK(*proposal.source == k_proposed_kernel);
    CHECK(proposal.calls[0].reply.size() > 2 * 1024 * 1024);
}

TEST_CASE("of a reply's two code blocks, the kernel is taken", "[agents][net]")
{
    Setup setup;
    setup.server.push(MockStep::reply("CHANGE: two blocks\n```cpp\n// host-side sketch\nint main() {}\n```\n```cuda\n" +
                                      k_proposed_kernel + "\n```\n"));
    Proposal proposal = setup.proposer->propose(ProposalContext{rowscale_task()}, setup.rng);
    REQUIRE(proposal.outcome == ProposalOutcome::source);
    CHECK(*proposal.source == k_proposed_kernel);
}

TEST_CASE("a reply cut at the output limit inside its code is no_code with advice", "[agents][net]")
{
    Setup setup;
    MockStep cut = MockStep::reply("CHANGE: long\n```cuda\nextern \"C\" __global__ void k(float* y) {\n  for (");
    cut.cut_at_max_tokens = true;
    setup.server.push(cut);
    Proposal proposal = setup.proposer->propose(ProposalContext{rowscale_task()}, setup.rng);
    CHECK(proposal.outcome == ProposalOutcome::no_code);
    CHECK_THAT(proposal.failure.message, Catch::Contains("cut off at the output limit of 8192 tokens"));
}

TEST_CASE("edits that do not apply become a no_code verdict naming the failed block", "[agents][net]")
{
    Setup setup;
    setup.server.push(MockStep::reply("CHANGE: unroll\n<<<<<<< SEARCH\n    for (int k = 0; k < VEC; ++k)\n=======\n"
                                      "#pragma unroll\n    for (int k = 0; k < VEC; ++k)\n>>>>>>> REPLACE\n"
                                      "<<<<<<< SEARCH\n    y[i] = x[i];\n=======\n    y[i] = 0;\n>>>>>>> REPLACE\n"));
    ProposalContext context{rowscale_task()};
    context.parent = sample_parent();
    context.edit_form = EditForm::search_replace;
    Proposal proposal = setup.proposer->propose(context, setup.rng);
    CHECK(proposal.outcome == ProposalOutcome::no_code);
    CHECK_THAT(proposal.failure.message, Catch::Contains("Edit 2 of 2") && Catch::Contains("y[i] = x[i];"));

    setup.server.push(MockStep::reply("CHANGE: unroll\n<<<<<<< SEARCH\n    for (int k = 0; k < VEC; ++k)\n=======\n"
                                      "#pragma unroll\n    for (int k = 0; k < VEC; ++k)\n>>>>>>> REPLACE\n"));
    proposal = setup.proposer->propose(context, setup.rng);
    REQUIRE(proposal.outcome == ProposalOutcome::source);
    CHECK_THAT(*proposal.source, Catch::Contains("#pragma unroll\n    for (int k = 0; k < VEC; ++k)"));
}

TEST_CASE("a repair round asks for a repair and records the call's purpose", "[agents][net]")
{
    Setup setup;
    ProposalContext context{rowscale_task()};
    context.parent = sample_parent();
    context.parent->verdict = Verdict{VerdictKind::compile_error, "error: VEC undefined"};
    context.round = RoundKind::repair;
    Proposal proposal = setup.proposer->propose(context, setup.rng);
    CHECK(proposal.origin == Origin::repair);
    CHECK(proposal.calls.at(0).purpose == CallPurpose::repair);
    CHECK_THAT(user_prompt_of(setup.server.requests().at(0)),
               Catch::Contains("failed (compile_error)") && Catch::Contains("error: VEC undefined"));
}

TEST_CASE("an unreachable model makes the proposal call_failed, not no_code", "[agents][net]")
{
    Setup setup;
    setup.server.set_default(MockStep::error(503));
    Proposal proposal = setup.proposer->propose(ProposalContext{rowscale_task()}, setup.rng);
    CHECK(proposal.outcome == ProposalOutcome::call_failed);
    CHECK_THAT(proposal.failure.message, Catch::Contains("HTTP 503"));
    CHECK(setup.log.records.size() == 1);
}
