// Model calls reach the run archive with the numbers the server reported: the search stores each
// proposal's call records with Archive::insert_llm_call (src/search/loop/record.cpp); this test
// does the same with the LLM proposer against the mock server, then reads the archive back.
#include "kf_catch.hpp"

#include "agents/llm_proposer.hpp"
#include "archive/archive.hpp"
#include "archive/sample_run.hpp"
#include "mock_llm_server.hpp"
#include "net_support.hpp"
#include "prompt_fixtures.hpp"
#include "test_support.hpp"

using namespace kforge;
using namespace kforge::test;

TEST_CASE("costs, tokens and latencies in the archive are the ones the mock server reported", "[agents][net][archive]")
{
    for (std::string provider : {"openai", "anthropic"}) {
        SECTION(provider)
        {
            ScopedEnv no_key(provider == "openai" ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY", std::nullopt);
            MockLlmServer server;
            server.push(MockStep::error(503)); // one retry on the way
            MockStep step = MockStep::reply("CHANGE: unrolled\n```cuda\nextern \"C\" __global__ void scale_vec(const float* x, "
                                            "float* y, int M, int N) {}\n```\n");
            step.delay_s = 0.15;
            step.input_tokens = 2500;
            step.cached_tokens = 500;
            step.output_tokens = 777;
            server.push(step);

            ModelMix mix;
            std::string url = provider == "openai" ? server.openai_url() : server.anthropic_url();
            mix.add(make_provider(parse_model_spec(provider + ":mock-model@" + url), fast_settings()), 1);
            LlmProposer proposer(std::move(mix), shipped_prompts());
            Rng rng{7};
            Proposal proposal = proposer.propose(ProposalContext{rowscale_task()}, rng);
            REQUIRE(proposal.outcome == ProposalOutcome::source);
            REQUIRE(proposal.calls.size() == 1);

            TempDir dir;
            auto path = dir.path() / "run.kforge";
            {
                Archive archive = Archive::create(path, softmax_run_info());
                for (const auto& call : proposal.calls)
                    archive.insert_llm_call(call);
            }
            Archive archive = Archive::open(path, OpenMode::read_only);
            auto calls = archive.llm_calls(10, CallText::include);
            REQUIRE(calls.size() == 1);
            const LlmCallRecord& stored = calls[0];

            auto requests = server.requests();
            REQUIRE(requests.size() == 2);
            double served = requests[1].answered_s - requests[0].arrived_s;
            double price_in = provider == "openai" ? 2.0 : 3.0, price_cached = provider == "openai" ? 0.5 : 0.3,
                   price_out = provider == "openai" ? 8.0 : 15.0;
            double cost = (2000 * price_in + 500 * price_cached + 777 * price_out) / 1e6;
            CHECK(stored.provider == provider);
            CHECK(stored.model == "mock-model");
            CHECK(stored.status == "ok");
            CHECK(stored.retries == 1);
            CHECK(stored.input_tokens == 2500);
            CHECK(stored.cached_input_tokens == 500);
            CHECK(stored.output_tokens == 777);
            CHECK(stored.cost_known);
            CHECK(stored.cost_usd == Approx(cost));
            CHECK(stored.latency_s >= served);
            CHECK(stored.latency_s < served + 10); // the client's own overhead, on any load
            CHECK_THAT(stored.reply, Catch::Contains("scale_vec"));

            LlmUsage total = archive.llm_usage_total();
            CHECK(total.calls == 1);
            CHECK(total.input_tokens == 2500);
            CHECK(total.output_tokens == 777);
            CHECK(total.cost_usd == Approx(cost));
        }
    }
}
