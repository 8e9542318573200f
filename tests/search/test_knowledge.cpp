// Knowledge: the user-level knowledge base, lessons flowing from a run into it and back into later
// runs' prompts, and meta-prompt scores.
#include "kf_catch.hpp"

#include <set>

#include "archive/knowledge_base.hpp"
#include "search/knowledge.hpp"
#include "search/meta_prompts.hpp"
#include "search/search_harness.hpp"
#include "test_support.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

Lesson make_lesson(const std::string& task, const std::string& category, std::vector<std::string> tags,
                   const std::string& text)
{
    Lesson lesson;
    lesson.task_name = task;
    lesson.category = category;
    lesson.tags = std::move(tags);
    lesson.text = text;
    lesson.evidence = Json{{"fitness_after", 1.5}};
    lesson.candidate_id = 7;
    return lesson;
}

} // namespace

TEST_CASE("the knowledge base keeps each lesson once per task and reads as empty before it exists", "[search]")
{
    TempDir dir;
    auto path = dir / "nested" / "knowledge.sqlite";
    KnowledgeBase missing = KnowledgeBase::open(path, KnowledgeAccess::read_only);
    CHECK(missing.lessons().empty());
    CHECK_FALSE(std::filesystem::exists(path));

    KnowledgeBase knowledge = KnowledgeBase::open(path, KnowledgeAccess::read_write);
    CHECK(knowledge.add(make_lesson("softmax_f32", "memory", {"softmax"}, "float4 loads help"), "run-a"));
    CHECK_FALSE(knowledge.add(make_lesson("softmax_f32", "memory", {"softmax"}, "float4 loads help"), "run-b"));
    CHECK(knowledge.add(make_lesson("layernorm_f32", "memory", {"norm"}, "float4 loads help"), "run-b"));
    auto lessons = KnowledgeBase::open(path, KnowledgeAccess::read_only).lessons();
    REQUIRE(lessons.size() == 2);
    CHECK(lessons[0].run_id == "run-a");
    CHECK(lessons[0].lesson.tags == std::vector<std::string>{"softmax"});
    CHECK(lessons[0].lesson.candidate_id == 7);
    CHECK(lessons[0].lesson.evidence["fitness_after"] == 1.5);

    write_text(dir / "not-a-kb.sqlite", "hello");
    CHECK_THROWS_AS(KnowledgeBase::open(dir / "not-a-kb.sqlite", KnowledgeAccess::read_write), Error);
}

TEST_CASE("a run archive is not mistaken for a knowledge base", "[search]")
{
    clear_interrupt();
    TempDir dir;
    HarnessOptions options;
    options.builtin = true;
    options.config.budgets.candidates = 4;
    run_session(dir / "run.kforge", options);
    try {
        KnowledgeBase::open(dir / "run.kforge", KnowledgeAccess::read_write);
        FAIL("a run archive opened as a knowledge base");
    } catch (const Error& e) {
        CHECK_THAT(e.what(), Catch::Contains("not a kforge knowledge base"));
    }
}

TEST_CASE("prompts draw the most relevant lessons: same task, then category, then shared tags", "[search]")
{
    const Task& task = softmax_task(); // memory; tags softmax, row-wise, reduction, fp32
    std::vector<Lesson> lessons = {make_lesson("sgemm_f32", "compute", {"gemm"}, "unrelated"),
                                   make_lesson("layernorm_f32", "memory", {"reduction", "row-wise"}, "related"),
                                   make_lesson("softmax_f32", "memory", {}, "same task"),
                                   make_lesson("scan_u32", "irregular", {"fp32"}, "one tag")};
    for (size_t i = 0; i < lessons.size(); ++i)
        lessons[i].id = static_cast<int64_t>(i + 1);
    CHECK(choose_lessons(lessons, task, 10) == std::vector<int64_t>{3, 2, 4});
    CHECK(choose_lessons(lessons, task, 1) == std::vector<int64_t>{3});
    CHECK(lesson_relevance(lessons[0], task) == 0);
}

TEST_CASE("lessons learnt in a run reach the run archive and the knowledge base, and a later run draws them",
          "[search]")
{
    clear_interrupt();
    TempDir dir;
    KnowledgeBase knowledge = KnowledgeBase::open(dir / "knowledge.sqlite", KnowledgeAccess::read_write);
    knowledge.add(make_lesson("sgemm_f32", "compute", {"gemm"}, "tiles of 128 x 128 for big matrices"), "other-run");
    HarnessOptions options;
    options.config.islands = 2;
    options.config.budgets.candidates = 40;
    options.config.seed = 8;
    options.scripted.variants = 300;
    options.knowledge = &knowledge;
    run_session(dir / "first.kforge", options);

    Archive first = Archive::open(dir / "first.kforge", OpenMode::read_only);
    auto learnt = first.lessons();
    REQUIRE_FALSE(learnt.empty());
    for (const auto& lesson : learnt) {
        CHECK_FALSE(is_imported_lesson(lesson)); // the unrelated sgemm lesson was not drawn
        CHECK(lesson.task_name == "softmax_f32");
        CHECK(lesson.candidate_id.has_value());
        CHECK(std::find(lesson.tags.begin(), lesson.tags.end(), "softmax") != lesson.tags.end());
    }
    // The knowledge base keeps a lesson text once per task, and the scripted analyst writes one of
    // seven texts: two lessons of a run may be one there (which run does moves with any change of
    // what the search draws; the seeding change of issue 20 made seed 8's two lessons one text).
    std::set<std::string> texts;
    for (const auto& lesson : learnt)
        texts.insert(lesson.text);
    auto in_knowledge = knowledge.lessons();
    CHECK(in_knowledge.size() == 1 + texts.size());
    CHECK(in_knowledge.back().run_id == "first");

    run_session(dir / "second.kforge", options);
    Archive second = Archive::open(dir / "second.kforge", OpenMode::read_only);
    int imported = 0;
    for (const auto& lesson : second.lessons())
        imported += is_imported_lesson(lesson) ? 1 : 0;
    CHECK(imported == static_cast<int>(texts.size()));
    // ... and the prompts of the second run showed them.
    bool shown = false;
    for (const auto& call : second.llm_calls(1000, CallText::include))
        if (call.purpose == CallPurpose::propose && call.request.dump().find(learnt.front().text) != std::string::npos)
            shown = true;
    CHECK(shown);
}

TEST_CASE("the weakest strategy text is the one rewritten", "[search]")
{
    std::vector<MetaPrompt> prompts(3);
    for (int i = 0; i < 3; ++i)
        prompts[static_cast<size_t>(i)].island = i;
    prompts[0].uses = 10, prompts[0].improvements = 4;
    prompts[1].uses = 10, prompts[1].improvements = 1;
    prompts[2].uses = 2, prompts[2].improvements = 0; // too few tries to judge
    CHECK(weakest_island(prompts, 4) == 1);
    CHECK(weakest_island(prompts, 20) == std::nullopt);
    CHECK(meta_prompt_score(prompts[2]) == Approx(0.25));
    CHECK(initial_strategy(0) != initial_strategy(1));

    clear_interrupt();
    TempDir dir;
    HarnessOptions options;
    options.config.islands = 2;
    options.config.generation_size = 2;
    options.config.meta_every = 1;
    options.config.budgets.candidates = 40;
    options.scripted.variants = 300;
    run_session(dir / "run.kforge", options);
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    auto all = archive.meta_prompts(MetaPromptFilter::all);
    auto active = archive.meta_prompts(MetaPromptFilter::active);
    CHECK(active.size() == 2);
    CHECK(all.size() > 2);
    int uses = 0;
    for (const auto& prompt : all) {
        uses += prompt.uses;
        if (prompt.generation > 0)
            CHECK_THAT(prompt.text, Catch::StartsWith("Strategy note"));
    }
    CHECK(uses > 0);
}
