// Rendered prompts against golden files in tests/fixtures/prompts/. A deliberate prompt change is
// recorded by running the tests with KFORGE_UPDATE_GOLDEN=1 and reviewing the diff.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "agents/call_record_json.hpp"
#include "agents/llm_ops.hpp"
#include "agents/prompt_builder.hpp"
#include "agents/replay_provider.hpp"
#include "prompt_fixtures.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

void check_golden(const std::string& name, const std::string& system, const std::string& user)
{
    std::string rendered = system + "\n===== user =====\n" + user;
    auto path = fixtures_dir() / "prompts" / (name + ".txt");
    if (const char* update = std::getenv("KFORGE_UPDATE_GOLDEN"); update && std::string(update) == "1") {
        write_text(path, rendered);
        WARN("rewrote " << path.string());
        return;
    }
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    std::ostringstream golden;
    golden << in.rdbuf();
    if (golden.str() != rendered) {
        write_text(path.string() + ".actual", rendered);
        FAIL("the rendered prompt differs from " << path.string() << "; see " << path.string()
                                                 << ".actual (run with KFORGE_UPDATE_GOLDEN=1 to accept)");
    }
}

ProposalContext full_context()
{
    ProposalContext context{rowscale_task()};
    context.hardware = sample_hardware();
    context.parent = sample_parent();
    context.inspirations = {sample_inspiration(1), sample_inspiration(2)};
    context.lessons = sample_lessons();
    context.strategy = "Prefer vectorised 128-bit memory access; keep register use low.";
    context.target_hint = "vectorised loads with warp shuffles";
    return context;
}

// A provider that answers `reply` and lets the test read the prompt it was sent.
struct CapturingProvider {
    std::vector<LlmCallRecord> seen;
    ReplayProvider provider;
    explicit CapturingProvider(const std::string& reply)
        : provider(parse_model_spec("replay:capture.jsonl"), {recorded(reply)},
                   [this](LlmCallRecord& record) { seen.push_back(record); })
    {
    }
    static LlmCallRecord recorded(const std::string& reply)
    {
        LlmCallRecord record;
        record.provider = "openai";
        record.model = "recorded";
        record.reply = reply;
        return record;
    }
};

} // namespace

TEST_CASE("golden: a first proposal without parent or GPU facts", "[agents][golden]")
{
    ProposalContext context{rowscale_task()};
    Prompt prompt = build_proposal_prompt(shipped_prompts(), context, PromptTrim::full);
    check_golden("propose_new", prompt.system, prompt.user);
}

TEST_CASE("golden: improving a parent with SEARCH/REPLACE edits, with every section", "[agents][golden]")
{
    ProposalContext context = full_context();
    context.edit_form = EditForm::search_replace;
    Prompt prompt = build_proposal_prompt(shipped_prompts(), context, PromptTrim::full);
    check_golden("propose_improve_diff", prompt.system, prompt.user);
}

TEST_CASE("golden: repairing a candidate that did not compile", "[agents][golden]")
{
    ProposalContext context{rowscale_task()};
    CandidateView failed = sample_parent();
    failed.verdict = Verdict{VerdictKind::compile_error, "line 9: error: identifier \"VEC\" is undefined"};
    failed.fitness.reset();
    failed.times.clear();
    failed.metrics = Json::object();
    context.parent = failed;
    context.round = RoundKind::repair;
    Prompt prompt = build_proposal_prompt(shipped_prompts(), context, PromptTrim::full);
    check_golden("propose_repair", prompt.system, prompt.user);
}

TEST_CASE("golden: rewriting an island's strategy note", "[agents][golden]")
{
    CapturingProvider capture("```text\nUse float4 loads.\n```");
    MetaPrompt current{0, 1, "Try bigger blocks.", 3, 20, 1, true, 0};
    MetaPrompt other{0, 2, "Use warp shuffles for reductions and vector loads.", 5, 30, 6, true, 0};
    MetaPromptResult result = rewrite_meta_prompt(capture.provider, shipped_prompts(), {rowscale_task(), current, {current, other}, 800});
    REQUIRE(result.text);
    REQUIRE(capture.seen.size() == 1);
    auto prompt = recorded_prompt(capture.seen[0]);
    REQUIRE(prompt);
    check_golden("meta_prompt", prompt->system, prompt->user);
}

TEST_CASE("golden: distilling a lesson from a parent and child", "[agents][golden]")
{
    CapturingProvider capture("LESSON: float4 loads helped.\nTAGS: vectorisation");
    CandidateView child = sample_parent();
    child.id = 18;
    child.source = replace_all(child.source, "\"VEC\": [1, 2, 4]", "\"VEC\": [4, 8]");
    child.fitness = 2.2;
    child.times = {{"M=4096,N=4096", 98000, 216000}, {"M=1,N=1048576", 8000, 15000}};
    child.metrics = Json{{"dram_throughput_pct", 88.0}, {"registers", 24}, {"achieved_occupancy", 0.80}};
    child.note = "eight elements per thread";
    LessonResult result = distil_lesson(capture.provider, shipped_prompts(), {rowscale_task(), sample_parent(), child});
    REQUIRE(result.lesson);
    auto prompt = recorded_prompt(capture.seen.at(0));
    REQUIRE(prompt);
    check_golden("analyst", prompt->system, prompt->user);
}

TEST_CASE("a prompt shows the bench shapes, checks and roofline but never a held-out shape", "[agents]")
{
    Prompt prompt = build_proposal_prompt(shipped_prompts(), full_context(), PromptTrim::full);
    CHECK_THAT(prompt.user, Catch::Contains("M=4096,N=4096") && Catch::Contains("M=1,N=1048576"));
    CHECK_THAT(prompt.user, Catch::Contains("atol = 0 and rtol = 1e-07"));
    CHECK_THAT(prompt.user, Catch::Contains("no kernel can take less than"));
    CHECK_THAT(prompt.user, !Catch::Contains("4242") && !Catch::Contains("777"));
    CHECK_THAT(prompt.system, Catch::Contains("extern \"C\" __global__") && Catch::Contains("at most 512 threads per block"));
}

TEST_CASE("a trimmed prompt drops lessons first, then inspirations", "[agents]")
{
    ProposalContext context = full_context();
    std::string full = build_proposal_prompt(shipped_prompts(), context, PromptTrim::full).user;
    std::string fewer = build_proposal_prompt(shipped_prompts(), context, PromptTrim::without_lessons).user;
    std::string least = build_proposal_prompt(shipped_prompts(), context, PromptTrim::without_lessons_and_inspirations).user;
    CHECK_THAT(full, Catch::Contains("# Lessons") && Catch::Contains("# Another kernel"));
    CHECK_THAT(fewer, !Catch::Contains("# Lessons") && Catch::Contains("# Another kernel"));
    CHECK_THAT(least, !Catch::Contains("# Lessons") && !Catch::Contains("# Another kernel"));
    CHECK_THAT(least, Catch::Contains("# The current kernel"));
}

TEST_CASE("the contract tells a model about library steps only for a task with a matrix product or a convolution",
          "[agents]")
{
    Task gemm = load_task(source_dir() / "tasks" / "sgemm_f32.json");
    ProposalContext gemm_context{gemm};
    std::string with = build_proposal_prompt(shipped_prompts(), gemm_context, PromptTrim::full).system;
    CHECK(with.find("*library step*") != std::string::npos);
    CHECK(with.find("\"library\": \"matmul\"") != std::string::npos);
    CHECK(with.find("\"library\": \"conv\"") != std::string::npos);
    CHECK(with.find("fp32 steps never use TF32") != std::string::npos);

    ProposalContext rowscale_context{rowscale_task()};
    std::string without = build_proposal_prompt(shipped_prompts(), rowscale_context, PromptTrim::full).system;
    CHECK(without.find("library step") == std::string::npos);

    // A region `kforge model extract` wrote spells its GEMM in ATen, and is told too.
    Task region = rowscale_task();
    region.reference_kind = ReferenceKind::torch;
    region.reference.source = "addmm = torch.ops.aten.addmm.default(bias, view, t);  view = t = None\n";
    ProposalContext region_context{region};
    CHECK(build_proposal_prompt(shipped_prompts(), region_context, PromptTrim::full).system.find("*library step*") !=
          std::string::npos);
    region.reference.source = "relu = torch.ops.aten.relu.default(x0)\n";
    ProposalContext pointwise_context{region};
    CHECK(build_proposal_prompt(shipped_prompts(), pointwise_context, PromptTrim::full).system.find("library step") ==
          std::string::npos);
}

TEST_CASE("golden: the library-step section in each task's own names", "[agents][golden]")
{
    // A bundled GEMM (sizes M, N, K; no weight parameter: the second matrix is B), an imported linear
    // layer (a weight stored [512, in_features], its bias) and a Llama MLP's down projection whose
    // sizes are constants (n = 2048, k = 5632, not symbols the problem does not have).
    for (const auto& [name, spec] :
         std::vector<std::pair<std::string, std::filesystem::path>>{{"library_sgemm", source_dir() / "tasks" / "sgemm_f32.json"},
                                                       {"library_linear", fixtures_dir() / "prompts" / "library" / "linear_relu.json"},
                                                       {"library_llama_down", fixtures_dir() / "prompts" / "library" /
                                                                                  "llama_block_r08_gemm_add.json"}}) {
        Task task = load_task(spec);
        ProposalContext context{task};
        Prompt prompt = build_proposal_prompt(shipped_prompts(), context, PromptTrim::full);
        INFO(name);
        check_golden(name, prompt.system, "");
    }
    Task llama = load_task(fixtures_dir() / "prompts" / "library" / "llama_block_r08_gemm_add.json");
    ProposalContext context{llama};
    std::string system = build_proposal_prompt(shipped_prompts(), context, PromptTrim::full).system;
    CHECK_THAT(system, Catch::Contains("\"n\": 2048, \"k\": 5632"));
    CHECK_THAT(system, Catch::Contains("\"m\": \"batch_size * seq_len\""));
    CHECK_THAT(system, !Catch::Contains("out_features"));
    CHECK_THAT(system, Catch::Contains("an index past the list is a plan_error"));
    CHECK_THAT(system, Catch::Contains("256-byte aligned"));
}

