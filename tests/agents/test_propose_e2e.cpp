// `kforge propose` through the real binary against the mock server, in both wire formats: the
// candidate, the numbers it reports and records, its exit codes, and that a planted API key
// appears in none of its outputs.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "agents/call_record_json.hpp"
#include "mock_llm_server.hpp"
#include "test_support.hpp"
#include "util/json_reader.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

const std::string k_e2e_kernel = "extern \"C\" __global__ void scale_vec(const float* x, float* y, int M, int N) {}";

std::string task_path() { return (fixtures_dir() / "prompts" / "rowscale" / "rowscale_f32.json").string(); }

std::string slurp(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

struct E2e {
    TempDir dir;
    MockLlmServer server;
    E2e()
    {
        write_text(dir / "prices.json", R"({"schema": "kforge.pricing/1", "models": {
            "openai:mock-model": {"input": 2.0, "cached_input": 0.5, "output": 8.0, "date": "2025-01-01"},
            "anthropic:mock-model": {"input": 3.0, "cached_input": 0.3, "output": 15.0, "date": "2025-01-01"}}})");
    }
    std::string model(const std::string& provider) const
    {
        return provider + ":mock-model@" + (provider == "openai" ? server.openai_url() : server.anthropic_url());
    }
    std::vector<std::string> args(const std::string& provider, std::vector<std::string> extra = {}) const
    {
        std::vector<std::string> all = {"propose", task_path(), "--model", model(provider), "--pricing",
                                        (dir / "prices.json").string(), "--retry-backoff", "0.01", "--timeout", "5"};
        all.insert(all.end(), extra.begin(), extra.end());
        return all;
    }
};

const std::vector<std::string> k_no_keys = {"OPENAI_API_KEY=", "ANTHROPIC_API_KEY=", "KFORGE_PRICING=", "KFORGE_PROMPTS="};

} // namespace

TEST_CASE("propose works end to end in both wire formats; the reported numbers are the server's", "[agents][net][e2e]")
{
    for (std::string provider : {"openai", "anthropic"}) {
        SECTION(provider)
        {
            E2e e2e;
            e2e.server.push(MockStep::error(500)); // one transient failure on the way
            MockStep step = MockStep::reply("CHANGE: vectorised\n```cuda\n" + k_e2e_kernel + "\n```\n");
            step.delay_s = 0.1;
            e2e.server.push(step);
            auto out = e2e.dir / "candidate.cu";
            auto record = e2e.dir / "calls.jsonl";
            CommandResult run = run_kforge(e2e.args(provider, {"-o", out.string(), "--record", record.string(), "--json"}), k_no_keys);
            INFO(run.err);
            REQUIRE(run.exit_code == 0);
            CHECK(slurp(out) == k_e2e_kernel);

            Json json = Json::parse(run.out);
            CHECK(json["outcome"] == "source");
            CHECK(json["note"] == "vectorised");
            CHECK(json["output"] == out.string());
            REQUIRE(json["calls"].size() == 1);
            const Json& call = json["calls"][0];
            double price_in = provider == "openai" ? 2.0 : 3.0, price_cached = provider == "openai" ? 0.5 : 0.3,
                   price_out = provider == "openai" ? 8.0 : 15.0;
            double cost = (1000 * price_in + 200 * price_cached + 345 * price_out) / 1e6;
            CHECK(call["provider"] == provider);
            CHECK(call["status"] == "ok");
            CHECK(call["retries"] == 1);
            CHECK(call["input_tokens"] == 1200);
            CHECK(call["cached_input_tokens"] == 200);
            CHECK(call["output_tokens"] == 345);
            CHECK(call["cost_usd"].get<double>() == Approx(cost));
            CHECK(call["cost_known"] == true);
            auto requests = e2e.server.requests();
            REQUIRE(requests.size() == 2);
            double served = requests[1].answered_s - requests[0].arrived_s;
            CHECK(call["latency_s"].get<double>() >= served);
            CHECK(call["latency_s"].get<double>() < served + 2);

            std::vector<LlmCallRecord> records = load_call_records(record);
            REQUIRE(records.size() == 1);
            CHECK(records[0].input_tokens == 1200);
            CHECK(records[0].output_tokens == 345);
            CHECK(records[0].cost_usd == Approx(cost));
            CHECK(records[0].latency_s == Approx(call["latency_s"].get<double>()));
            CHECK(records[0].retries == 1);
            CHECK_THAT(records[0].reply, Catch::Contains(k_e2e_kernel));
            CHECK_THAT(run.err, Catch::Contains("1200 input tokens (200 cached), 345 output tokens") &&
                                    Catch::Contains(fmt::format("${:.4f}", cost)) && Catch::Contains("1 retry"));

            // The recorded session replays to the same candidate, without the server.
            auto again = e2e.dir / "again.cu";
            CommandResult replay = run_kforge({"propose", task_path(), "--model", "replay:" + record.string(), "-o", again.string()}, k_no_keys);
            INFO(replay.err);
            CHECK(replay.exit_code == 0);
            CHECK(slurp(again) == k_e2e_kernel);
            CHECK(e2e.server.request_count() == 2);
        }
    }
}

TEST_CASE("propose exits 1 with the verdict message when the reply holds no code", "[agents][net][e2e]")
{
    E2e e2e;
    e2e.server.push(MockStep::reply("I would tile it in shared memory."));
    CommandResult run = run_kforge(e2e.args("anthropic"), k_no_keys);
    CHECK(run.exit_code == 1);
    CHECK(run.out.empty());
    CHECK_THAT(run.err, Catch::Contains("no usable code") && Catch::Contains("no code block"));
}

TEST_CASE("propose exits 4 when the model cannot be reached after retries", "[agents][net][e2e]")
{
    E2e e2e;
    e2e.server.set_default(MockStep::error(503, "0"));
    CommandResult run = run_kforge(e2e.args("openai", {"--retries", "2", "--json"}), k_no_keys);
    CHECK(run.exit_code == 4);
    CHECK(e2e.server.request_count() == 3);
    Json json = Json::parse(run.out);
    CHECK(json["outcome"] == "call_failed");
    CHECK(json["calls"][0]["status"] == "http_error");
    CHECK(json["calls"][0]["retries"] == 2);
    CHECK_THAT(run.err, Catch::Contains("HTTP 503") && Catch::Contains("gave up after 2 retries"));
}

TEST_CASE("propose --print-prompt needs no network and no key", "[agents][e2e]")
{
    for (std::string model : {"openai:gpt-5", "builtin"}) {
        CommandResult run = run_kforge({"propose", task_path(), "--model", model, "--print-prompt"}, k_no_keys);
        INFO(run.err);
        CHECK(run.exit_code == 0);
        CHECK_THAT(run.out, Catch::Contains("===== system =====") && Catch::Contains("# The task: rowscale_f32"));
    }
}

TEST_CASE("propose reports a missing key and a malformed model spec with their exit codes", "[agents][e2e]")
{
    CommandResult missing = run_kforge({"propose", task_path(), "--model", "openai:gpt-5"}, k_no_keys);
    CHECK(missing.exit_code == 3);
    CHECK_THAT(missing.err, Catch::Contains("OPENAI_API_KEY"));
    CommandResult malformed = run_kforge({"propose", task_path(), "--model", "gpt-5"}, k_no_keys);
    CHECK(malformed.exit_code == 2);
    CHECK_THAT(malformed.err, Catch::Contains("provider:model"));
}

TEST_CASE("propose with the builtin proposer writes a param variant of a seed", "[agents][e2e]")
{
    TempDir dir;
    CommandResult run = run_kforge({"propose", task_path(), "-o", (dir / "v.cu").string(), "--seed", "4"}, k_no_keys);
    INFO(run.err);
    CHECK(run.exit_code == 0);
    CHECK_THAT(slurp(dir / "v.cu"), Catch::Contains("kforge:plan") && Catch::Contains("__global__"));
    CHECK_THAT(run.err, Catch::Contains("builtin: 0 input tokens") && Catch::Contains("$0.0000"));
}

TEST_CASE("a planted API key appears in no output, log, record or error of propose", "[agents][net][e2e]")
{
    const std::string key = "sk-kforge-planted-secret-7f3a9c";
    E2e e2e;
    MockStep echo_error = MockStep::error(500);
    echo_error.echo_credentials = true;
    MockStep echo_reply = MockStep::reply("CHANGE: echo\n```cuda\n" + k_e2e_kernel + "\n```\n");
    echo_reply.echo_credentials = true;
    MockStep refused = MockStep::error(401);
    refused.echo_credentials = true;
    for (std::string provider : {"openai", "anthropic"}) {
        std::vector<std::string> env = {"OPENAI_API_KEY=" + key, "ANTHROPIC_API_KEY=" + key, "KFORGE_PRICING="};
        auto out = e2e.dir / (provider + ".cu");
        auto record = e2e.dir / (provider + ".jsonl");
        e2e.server.push(echo_error);
        e2e.server.push(echo_reply);
        auto debug = [](std::vector<std::string> args) {
            args.insert(args.begin(), {"--log-level", "debug"});
            return args;
        };
        CommandResult ok = run_kforge(debug(e2e.args(provider, {"-o", out.string(), "--record", record.string(), "--json"})), env);
        CHECK(ok.exit_code == 0);
        e2e.server.push(refused);
        CommandResult denied = run_kforge(debug(e2e.args(provider, {"--record", record.string()})), env);
        CHECK(denied.exit_code == 4);
        CHECK_THAT(denied.err, Catch::Contains("HTTP 401") && Catch::Contains(provider == "openai" ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY"));

        // The server did receive the key, and echoed it back every time.
        auto requests = e2e.server.requests();
        REQUIRE(requests.size() >= 3);
        std::string sent = requests.back().headers[provider == "openai" ? "authorization" : "x-api-key"];
        CHECK_THAT(sent, Catch::Contains(key));
        for (const std::string* text : {&ok.out, &ok.err, &denied.out, &denied.err}) {
            CHECK_THAT(*text, !Catch::Contains(key));
            CHECK_THAT(*text, !Catch::Contains("planted"));
        }
        std::string recorded = slurp(record);
        CHECK_THAT(recorded, Catch::Contains("[redacted]"));
        CHECK_THAT(recorded, !Catch::Contains(key) && !Catch::Contains("planted"));
        CHECK_THAT(slurp(out), !Catch::Contains(key));
    }
}
