// Every record type goes into the archive and comes back unchanged, alone or grouped in one
// transaction; a candidate whose parent is unknown is refused.
#include <catch2/catch.hpp>

#include "archive/archive.hpp"
#include "archive/sample_run.hpp"
#include "core/source.hpp"
#include "test_support.hpp"

namespace kforge::test {
namespace {

void check_same_measurement(const Measurement& a, const Measurement& b, size_t index)
{
    INFO("measurement " << index << ": " << a.shape_set << " " << a.shape_label << " "
                        << a.subject);
    CHECK(a.shape_set == b.shape_set);
    CHECK(a.shape_label == b.shape_label);
    CHECK(a.subject == b.subject);
    CHECK(a.median_ns == b.median_ns);
    CHECK(a.q1_ns == b.q1_ns);
    CHECK(a.q3_ns == b.q3_ns);
    CHECK(a.min_ns == b.min_ns);
    CHECK(a.samples == b.samples);
    CHECK(a.discarded == b.discarded);
    CHECK(a.sm_clock_mhz == b.sm_clock_mhz);
    CHECK(a.confirmed == b.confirmed);
    CHECK(a.below_roofline == b.below_roofline);
    CHECK(a.roofline_ns == b.roofline_ns);
}

Candidate full_candidate(int64_t parent, int64_t inspiration, int64_t call)
{
    Candidate c;
    c.source = softmax_candidate_source();
    c.source_hash = normalized_source_hash(c.source) + ":plan";
    c.parent_id = parent;
    c.inspiration_ids = {inspiration, parent};
    c.island = 3;
    c.generation = 7;
    c.origin = Origin::repair;
    c.llm_call_id = call;
    c.note = "fix the tail of the row";
    c.evaluation.verdict = {VerdictKind::correct, ""};
    c.evaluation.fitness = 1.75;
    c.evaluation.best_params = {{"BLOCK", 256}, {"VEC", 4}};
    c.evaluation.measurements = bench_measurements("candidate", 1.75);
    Measurement held = c.evaluation.measurements[0];
    held.shape_set = "held_out";
    held.shape_label = "M=24000,N=5000";
    held.below_roofline = true;
    c.evaluation.measurements.push_back(held);
    c.evaluation.descriptors = {{"memory", "vec4"}, {"occupancy", 3}};
    c.evaluation.metrics = {{"dram_throughput", 0.91}, {"registers", 40}};
    c.evaluation.compile_info = {{"points", 6}, {"cache_hits", 2}};
    c.evaluation.eval_seconds = 3.25;
    c.created_at = 1763763000.5;
    return c;
}

} // namespace

TEST_CASE("a candidate with its evaluation, inspirations and measurements comes back unchanged",
          "[archive]")
{
    TempDir dir;
    SampleIds ids = build_sample_archive(dir / "run.kforge");
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::write);
    Candidate in = full_candidate(ids.improved, ids.seed, ids.calls[1]);
    int64_t id = archive.insert_candidate(in);

    auto out = archive.candidate(id);
    REQUIRE(out);
    CHECK(out->id == id);
    CHECK(out->source == in.source);
    CHECK(out->source_hash == in.source_hash);
    CHECK(out->parent_id == in.parent_id);
    CHECK(out->inspiration_ids == in.inspiration_ids);
    CHECK(out->island == 3);
    CHECK(out->generation == 7);
    CHECK(out->origin == Origin::repair);
    CHECK(out->llm_call_id == in.llm_call_id);
    CHECK(out->note == in.note);
    CHECK(out->evaluation.verdict.kind == VerdictKind::correct);
    CHECK(out->evaluation.fitness == in.evaluation.fitness);
    CHECK(out->evaluation.best_params == in.evaluation.best_params);
    CHECK(out->evaluation.descriptors == in.evaluation.descriptors);
    CHECK(out->evaluation.metrics == in.evaluation.metrics);
    CHECK(out->evaluation.compile_info == in.evaluation.compile_info);
    CHECK(out->evaluation.eval_seconds == in.evaluation.eval_seconds);
    CHECK(out->created_at == in.created_at);
    REQUIRE(out->evaluation.measurements.size() == in.evaluation.measurements.size());
    for (size_t i = 0; i < in.evaluation.measurements.size(); ++i)
        check_same_measurement(out->evaluation.measurements[i], in.evaluation.measurements[i], i);
    CHECK_FALSE(archive.candidate(id + 1000));
}

TEST_CASE("a failed candidate keeps its verdict message and has no fitness", "[archive]")
{
    TempDir dir;
    SampleIds ids = build_sample_archive(dir / "run.kforge");
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    auto failed = archive.candidate(ids.compile_error_a);
    REQUIRE(failed);
    CHECK(failed->evaluation.verdict.kind == VerdictKind::compile_error);
    CHECK(failed->evaluation.verdict.message.find("identifier \"foo\" is undefined") !=
          std::string::npos);
    CHECK_FALSE(failed->evaluation.fitness);
    CHECK(failed->evaluation.measurements.empty());
    CHECK(failed->created_at > 1.7e9); // 0 on insert means "now"
}

TEST_CASE("the run record, including a seed above INT64_MAX, comes back unchanged", "[archive]")
{
    TempDir dir;
    build_sample_archive(dir / "run.kforge");
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::write);
    RunInfo expected = softmax_run_info();
    RunInfo run = archive.run_info();
    CHECK(run.run_id == expected.run_id);
    CHECK(run.task_name == "softmax_f32");
    CHECK(run.task_spec == expected.task_spec);
    CHECK(run.task_hash == expected.task_hash);
    CHECK(run.task_files == expected.task_files);
    CHECK(run.config == expected.config);
    CHECK(run.device == expected.device);
    CHECK(run.toolkit_version == "13.0");
    CHECK(run.kforge_version == "0.1.0");
    CHECK(run.seed == expected.seed);
    CHECK(run.state == "finished");
    CHECK(run.started_at == expected.started_at);
    CHECK(run.updated_at >= run.started_at);

    expected.state = "running";
    expected.config["budget"]["candidates"] = 300;
    archive.update_run(expected);
    CHECK(archive.run_info().config["budget"]["candidates"] == 300);
    CHECK(archive.run_info().state == "running");
}

TEST_CASE("LLM calls come back unchanged and sum into usage per model", "[archive]")
{
    TempDir dir;
    SampleIds ids = build_sample_archive(dir / "run.kforge");
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::write);
    LlmCallRecord call;
    call.provider = "openai";
    call.model = "local-llama";
    call.base_url = "http://127.0.0.1:8080/v1";
    call.purpose = CallPurpose::analyst;
    call.request = {{"temperature", 0.2}};
    call.reply = "lesson: vectorise loads";
    call.input_tokens = 100;
    call.cached_input_tokens = 40;
    call.output_tokens = 20;
    call.cost_usd = 0;
    call.cost_known = false;
    call.latency_s = 0.75;
    call.retries = 2;
    call.started_at = 1763763100;
    int64_t id = archive.insert_llm_call(call);

    auto out = archive.llm_call(id);
    REQUIRE(out);
    CHECK(out->provider == "openai");
    CHECK(out->model == "local-llama");
    CHECK(out->base_url == call.base_url);
    CHECK(out->purpose == CallPurpose::analyst);
    CHECK(out->request == call.request);
    CHECK(out->reply == call.reply);
    CHECK(out->input_tokens == 100);
    CHECK(out->cached_input_tokens == 40);
    CHECK(out->output_tokens == 20);
    CHECK_FALSE(out->cost_known);
    CHECK(out->latency_s == 0.75);
    CHECK(out->retries == 2);
    CHECK(out->status == "ok");
    CHECK(out->started_at == 1763763100);

    auto listed = archive.llm_calls(2, CallText::omit);
    REQUIRE(listed.size() == 2);
    CHECK(listed[0].id == id); // newest first
    CHECK(listed[1].id == ids.calls[2]);
    CHECK(listed[0].reply.empty());
    CHECK(archive.llm_calls(10, CallText::include)[0].reply == call.reply);

    LlmUsage total = archive.llm_usage_total();
    CHECK(total.calls == 4);
    CHECK(total.failed_calls == 1);
    CHECK(total.input_tokens == 21100);
    CHECK(total.output_tokens == 5520);
    CHECK(total.cost_usd == Approx(0.1095));
    CHECK(total.calls_without_price == 1);
    auto by_model = archive.llm_usage_by_model();
    REQUIRE(by_model.size() == 3);
    CHECK(by_model[0].model == "claude-sonnet-4-5"); // most expensive first
    CHECK(by_model[1].model == "gpt-5");
    CHECK(by_model[1].calls == 2);
    CHECK(by_model[1].failed_calls == 1);

    // The builtin proposer's records are listed per model but are not language-model calls.
    LlmCallRecord builtin;
    builtin.provider = "builtin";
    builtin.model = "builtin";
    builtin.status = "ok";
    archive.insert_llm_call(builtin);
    CHECK(archive.llm_usage_total().calls == 4);
    CHECK(archive.llm_usage_by_model().size() == 4);
}

TEST_CASE("meta-prompts, lessons and search state come back unchanged", "[archive]")
{
    TempDir dir;
    SampleIds ids = build_sample_archive(dir / "run.kforge");
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::write);

    auto prompts = archive.meta_prompts(MetaPromptFilter::all);
    REQUIRE(prompts.size() == 1);
    CHECK(prompts[0].text == "Prefer one pass over the row.");
    CHECK(prompts[0].uses == 3);
    MetaPrompt prompt = prompts[0];
    prompt.active = false;
    prompt.improvements = 2;
    archive.update_meta_prompt(prompt);
    int64_t second = archive.insert_meta_prompt({0, 0, "Vectorise loads.", 4, 0, 0, true, 0});
    auto active = archive.meta_prompts(MetaPromptFilter::active);
    REQUIRE(active.size() == 1);
    CHECK(active[0].id == second);
    CHECK(active[0].generation == 4);
    CHECK(archive.meta_prompts(MetaPromptFilter::all)[0].improvements == 2);
    prompt.id = 999;
    CHECK_THROWS_WITH(archive.update_meta_prompt(prompt), Catch::Contains("no such meta-prompt"));

    auto lessons = archive.lessons();
    REQUIRE(lessons.size() == 1);
    CHECK(lessons[0].task_name == "softmax_f32");
    CHECK(lessons[0].category == "memory");
    CHECK(lessons[0].tags == std::vector<std::string>{"online-softmax"});
    CHECK(lessons[0].evidence["after"] == ids.improved);
    CHECK(lessons[0].candidate_id == ids.improved);

    CHECK(archive.search_state("rng") == Json{{"state", "12345678901234567890"}});
    CHECK_FALSE(archive.search_state("generation"));
    archive.set_search_state("generation", 12);
    archive.set_search_state("generation", 13);
    CHECK(archive.search_state("generation") == Json(13));
}

TEST_CASE("a replaced elite stays in the history and only the new one is current", "[archive]")
{
    TempDir dir;
    SampleIds ids = build_sample_archive(dir / "run.kforge");
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    auto current = archive.elites();
    REQUIRE(current.size() == 2);
    CHECK(current[0].island == 0);
    CHECK(current[0].candidate_id == ids.best);
    CHECK(current[0].fitness == k_best_fitness);
    CHECK(current[1].island == 1);
    CHECK(current[1].candidate_id == ids.seed);
    REQUIRE(archive.elites(1).size() == 1);
    CHECK(archive.elites(7).empty());

    auto history = archive.elite_history();
    REQUIRE(history.size() == 3);
    CHECK(history[0].elite.candidate_id == ids.improved);
    REQUIRE(history[0].replaced_at);
    CHECK(*history[0].replaced_at >= history[0].placed_at);
    CHECK_FALSE(history[1].replaced_at);
}

TEST_CASE("atomically commits every write together or none of them", "[archive]")
{
    TempDir dir;
    SampleIds ids = build_sample_archive(dir / "run.kforge");
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::write);
    Candidate c = full_candidate(ids.improved, ids.seed, ids.calls[0]);
    CHECK_THROWS_WITH(archive.atomically([&] {
        int64_t id = archive.insert_candidate(c);
        archive.set_elite({2, "vec4", id, 1.75});
        archive.set_search_state("rng", "after");
        throw std::runtime_error("the search stopped half way");
    }),
                      "the search stopped half way");
    CHECK(archive.candidate_count() == 7);
    CHECK(archive.elites(2).empty());
    CHECK(archive.search_state("rng") == Json{{"state", "12345678901234567890"}});

    archive.atomically([&] {
        int64_t id = archive.insert_candidate(c);
        archive.set_elite({2, "vec4", id, 1.75});
    });
    CHECK(archive.candidate_count() == 8);
    CHECK(archive.elites(2).size() == 1);
}

TEST_CASE("a candidate whose parent is not stored is refused", "[archive]")
{
    TempDir dir;
    build_sample_archive(dir / "run.kforge");
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::write);
    Candidate orphan = full_candidate(4242, 1, 1);
    CHECK_THROWS_WITH(archive.insert_candidate(orphan),
                      Catch::Contains("FOREIGN KEY constraint failed"));
    CHECK(archive.candidate_count() == 7);
}

} // namespace kforge::test
