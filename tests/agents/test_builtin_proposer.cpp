// The offline proposer: param variants of the task's seeds and of the parent, within the task's
// limits, never twice the same, with uniform accounting.
#include <catch2/catch.hpp>

#include <set>

#include "agents/builtin_proposer.hpp"
#include "agents/plan_variation.hpp"
#include "core/plan_check.hpp"
#include "core/source.hpp"
#include "prompt_fixtures.hpp"
#include "test_support.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

// The source with its kforge:plan comment removed: what the builtin proposer must never touch.
std::string without_plan(const std::string& source)
{
    size_t marker = source.find("kforge:plan");
    size_t open = source.rfind("/*", marker);
    size_t close = source.find("*/", marker);
    return source.substr(0, open) + source.substr(close + 2);
}

Plan plan_of(const std::string& source) { return parse_plan(*extract_plan_json(source), "test"); }

} // namespace

TEST_CASE("builtin proposals vary only the plan's param values, within the task's limits", "[agents]")
{
    const Task& task = rowscale_task();
    BuiltinProposer proposer;
    Rng rng(5);
    std::set<std::string> seen;
    std::set<std::string> seed_bodies;
    for (const auto& seed : task.seeds)
        seed_bodies.insert(without_plan(seed.source));
    for (int i = 0; i < 40; ++i) {
        Proposal proposal = proposer.propose(ProposalContext{task}, rng);
        REQUIRE(proposal.outcome == ProposalOutcome::source);
        const std::string& source = *proposal.source;
        INFO("proposal " << i << ": " << proposal.note << "\n" << source);
        CHECK(seed_bodies.count(without_plan(source)) == 1);
        CHECK(seen.insert(source).second);
        Plan plan = plan_of(source);
        REQUIRE_NOTHROW(validate_plan(task, plan, find_kernel_names(source)));
        CHECK(count_param_points(plan) <= static_cast<size_t>(task.limits.max_param_points));
        for (const auto& point : enumerate_param_points(plan, 64)) {
            CHECK(point.at("BLOCK") <= task.limits.max_threads_per_block);
            for (const auto& shape : task.bench)
                CHECK_NOTHROW(resolve_plan(task, plan, shape, point));
        }
        CHECK_THAT(proposal.note, Catch::StartsWith("builtin: ") && Catch::Contains("->") && Catch::Contains("from seed"));
        CHECK(proposal.origin == Origin::builtin);
    }
}

TEST_CASE("builtin proposals pin different regions of the param space", "[agents]")
{
    BuiltinProposer proposer;
    Rng rng(11);
    std::set<std::vector<int64_t>> block_lists;
    for (int i = 0; i < 30; ++i) {
        Proposal proposal = proposer.propose(ProposalContext{rowscale_task()}, rng);
        REQUIRE(proposal.source);
        block_lists.insert(plan_of(*proposal.source).params.at("BLOCK"));
    }
    CHECK(block_lists.size() >= 5);
}

TEST_CASE("builtin proposals carry a zero-cost call record with provider builtin", "[agents]")
{
    std::vector<LlmCallRecord> recorded;
    BuiltinProposer proposer([&](LlmCallRecord& record) { recorded.push_back(record); });
    Rng rng(1);
    Proposal proposal = proposer.propose(ProposalContext{rowscale_task()}, rng);
    REQUIRE(proposal.calls.size() == 1);
    const LlmCallRecord& call = proposal.calls[0];
    CHECK(call.provider == "builtin");
    CHECK(call.input_tokens == 0);
    CHECK(call.output_tokens == 0);
    CHECK(call.cost_usd == 0);
    CHECK(call.cost_known);
    CHECK(call.status == "ok");
    CHECK(call.reply == proposal.note);
    REQUIRE(recorded.size() == 1);
    CHECK(recorded[0].request == call.request);
}

TEST_CASE("with a parent, most builtin proposals vary the parent; the same seed gives the same proposal", "[agents]")
{
    ProposalContext context{rowscale_task()};
    context.parent = sample_parent();
    context.parent->source = replace_plan_block(context.parent->source,
                                                Json::parse(R"j({"params": {"BLOCK": [256], "VEC": [8]},
        "launches": [{"kernel": "scale_vec", "grid": ["ceil_div(M * N, BLOCK * VEC)", 1, 1],
                      "block": ["BLOCK", 1, 1], "args": ["x", "y", "M", "N"]}]})j"));
    BuiltinProposer first, second;
    Rng a(99), b(99);
    int from_parent = 0;
    for (int i = 0; i < 20; ++i) {
        Proposal p = first.propose(context, a);
        Proposal q = second.propose(context, b);
        REQUIRE(p.source);
        CHECK(p.source == q.source);
        from_parent += p.note.find("from the parent") != std::string::npos;
    }
    CHECK(from_parent >= 10);
}

TEST_CASE("the builtin proposer never repeats what it was told about, and says when it is exhausted", "[agents]")
{
    TempDir dir;
    // A task whose only seed has a tiny param space: BLOCK in {32, 64} under a 64-thread limit.
    write_text(dir / "task.json", R"({"schema": "kforge.task/1", "name": "tiny", "description": "copy",
        "symbols": {"N": {}}, "args": [
          {"name": "x", "dtype": "f32", "shape": ["N"], "intent": "in", "gen": {"dist": "normal"}},
          {"name": "y", "dtype": "f32", "shape": ["N"], "intent": "out", "check": {"atol": 0, "rtol": 0}},
          {"name": "N", "dtype": "i32", "value": "N"}],
        "reference": "seed.cu", "seeds": ["seed.cu"],
        "shapes": {"tests": [{"N": 5}], "bench": [{"N": 100}]},
        "roofline": {"flops": "0", "bytes": "8 * N"},
        "limits": {"max_threads_per_block": 64}})");
    write_text(dir / "seed.cu", "/* kforge:plan\n{\"params\": {\"BLOCK\": [32]}, \"launches\": [{\"kernel\": \"copy\", "
                                "\"grid\": [\"ceil_div(N, BLOCK)\"], \"block\": [\"BLOCK\"], \"args\": [\"x\", \"y\", \"N\"]}]}\n*/\n"
                                "extern \"C\" __global__ void copy(const float* x, float* y, int N) {}\n");
    Task task = load_task(dir / "task.json");
    BuiltinProposer proposer;
    Rng rng(3);
    std::set<std::string> sources;
    bool exhausted = false;
    for (int i = 0; i < 100 && !exhausted; ++i) {
        Proposal proposal = proposer.propose(ProposalContext{task}, rng);
        if (!proposal.source) {
            exhausted = true;
            CHECK(proposal.outcome == ProposalOutcome::no_code);
            CHECK_THAT(proposal.failure.message, Catch::Contains("exhausted"));
        } else {
            CHECK(sources.insert(*proposal.source).second);
        }
    }
    // Every variant is a set of powers of two up to the 64-thread limit: a small, finite space.
    CHECK(exhausted);
    CHECK(sources.size() >= 5);
    for (const auto& source : sources) {
        Plan plan = plan_of(source);
        for (int64_t block : plan.params.at("BLOCK"))
            CHECK(block <= 64);
    }

    BuiltinProposer told;
    for (const auto& source : sources)
        told.remember(source);
    Rng again(3);
    for (int i = 0; i < 5; ++i) {
        Proposal proposal = told.propose(ProposalContext{task}, again);
        if (proposal.source)
            CHECK(sources.count(*proposal.source) == 0);
    }
}

TEST_CASE("without seeds or params the builtin proposer says what is missing", "[agents]")
{
    Task task = load_task(source_dir() / "tasks" / "softmax_f32.json");
    task.seeds.clear(); // the bundled task ships seeds; this is a task without any
    BuiltinProposer proposer;
    Rng rng(1);
    Proposal proposal = proposer.propose(ProposalContext{task}, rng);
    CHECK(proposal.outcome == ProposalOutcome::no_code);
    CHECK_THAT(proposal.failure.message, Catch::Contains("no seed kernel that declares params") && Catch::Contains("--model"));
    CHECK(proposal.calls.size() == 1);
}
