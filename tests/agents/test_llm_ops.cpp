// Meta-prompt rewriting and lesson distillation: prompts go out, replies are read leniently,
// evidence comes from kforge's own measurements.
#include <catch2/catch.hpp>

#include "agents/llm_ops.hpp"
#include "agents/replay_provider.hpp"
#include "prompt_fixtures.hpp"
#include "test_support.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

ReplayProvider answering(const std::string& reply, const std::string& status = "ok")
{
    LlmCallRecord record;
    record.provider = "openai";
    record.model = "m";
    record.reply = reply;
    record.status = status;
    record.error = status == "ok" ? "" : "HTTP 500: down";
    return ReplayProvider(parse_model_spec("replay:x"), {record}, {});
}

CandidateView faster_child()
{
    CandidateView child = sample_parent();
    child.id = 18;
    child.fitness = 2.2;
    child.times = {{"M=4096,N=4096", 98000, 216000}};
    child.metrics = Json{{"dram_throughput_pct", 88.0}, {"registers", 24}};
    return child;
}

} // namespace

TEST_CASE("a rewritten strategy note is read from its block and kept within the length", "[agents]")
{
    MetaPrompt current{0, 1, "Try bigger blocks.", 3, 20, 1, true, 0};
    ReplayProvider provider = answering("Here is a note.\n```text\nUse float4 loads and grid-stride loops. " +
                                        std::string(500, 'z') + " end\n```\n");
    MetaPromptResult result = rewrite_meta_prompt(provider, shipped_prompts(), {rowscale_task(), current, {}, 100});
    REQUIRE(result.text);
    CHECK_THAT(*result.text, Catch::StartsWith("Use float4 loads and grid-stride loops."));
    CHECK(result.text->size() <= 100);
    CHECK(result.call.purpose == CallPurpose::meta_prompt);

    ReplayProvider plain = answering("Use warp shuffles.");
    CHECK(rewrite_meta_prompt(plain, shipped_prompts(), {rowscale_task(), current, {}, 100}).text == "Use warp shuffles.");
    ReplayProvider failing = answering("", "http_error");
    MetaPromptResult failed = rewrite_meta_prompt(failing, shipped_prompts(), {rowscale_task(), current, {}, 100});
    CHECK_FALSE(failed.text);
    CHECK_THAT(failed.problem, Catch::Contains("HTTP 500"));
}

TEST_CASE("a lesson carries the model's text and tags and kforge's own evidence", "[agents]")
{
    ReplayProvider provider = answering("**LESSON:** Eight elements per thread raised DRAM throughput to 88%\n"
                                        "and cut time by 18% on the 4096x4096 shape.\nTAGS: Vectorisation, ILP , memory-bound\n");
    LessonResult result = distil_lesson(provider, shipped_prompts(), {rowscale_task(), sample_parent(), faster_child()});
    REQUIRE(result.lesson);
    const Lesson& lesson = *result.lesson;
    CHECK(lesson.text == "Eight elements per thread raised DRAM throughput to 88% and cut time by 18% on the 4096x4096 shape.");
    CHECK(lesson.tags == std::vector<std::string>{"vectorisation", "ilp", "memory-bound"});
    CHECK(lesson.task_name == "rowscale_f32");
    CHECK(lesson.category == "memory");
    CHECK(lesson.candidate_id == 18);
    CHECK(lesson.evidence["fitness_before"] == 1.8);
    CHECK(lesson.evidence["fitness_after"] == 2.2);
    CHECK(lesson.evidence["times"][0]["before_ns"] == 120000.0);
    CHECK(lesson.evidence["times"][0]["after_ns"] == 98000.0);
    CHECK(lesson.evidence["metrics"]["dram_throughput_pct"] == Json::array({71.5, 88.0}));
    CHECK_FALSE(lesson.evidence["metrics"].contains("registers"));
    CHECK(result.call.purpose == CallPurpose::analyst);
}

TEST_CASE("an analyst reply without a LESSON line is a problem, not a lesson", "[agents]")
{
    ReplayProvider provider = answering("The change was good.");
    LessonResult result = distil_lesson(provider, shipped_prompts(), {rowscale_task(), sample_parent(), faster_child()});
    CHECK_FALSE(result.lesson);
    CHECK_THAT(result.problem, Catch::Contains("LESSON"));
}
