// `kforge optimize`, `resume`, `lessons` and `inspect --grid` through the real binary.
//
// Without a GPU, optimize and resume must fail before they touch anything: no half-written archive,
// an interrupted archive left exactly as it was. With a GPU (the lead's machine) the same tests run a
// short real search on softmax with the builtin proposer.
#include "kf_catch.hpp"

#include <fstream>

#include "archive/archive.hpp"
#include "core/source.hpp"
#include "search/search_harness.hpp"
#include "test_support.hpp"
#include "util/interrupt.hpp"
#include "util/json_reader.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

std::string softmax_spec()
{
    return (source_dir() / "tasks" / "softmax_f32.json").string();
}

// A small interrupted builtin run made by the library with the fake evaluator.
void make_interrupted_run(const std::filesystem::path& path)
{
    clear_interrupt();
    HarnessOptions options;
    options.builtin = true;
    options.config.islands = 3;
    options.config.budgets.candidates = 30;
    int recorded = 0;
    options.on_recorded = [&](const Candidate&) {
        if (++recorded == 10)
            request_interrupt();
    };
    run_session(path, options);
    clear_interrupt();
}

} // namespace

TEST_CASE("optimize without a GPU exits 4 naming the missing driver and leaves no archive behind",
          "[e2e][search]")
{
    TempDir dir;
    auto archive = dir / "softmax.kforge";
    auto result = run_kforge({"optimize", softmax_spec(), "--budget", "5", "-o", archive.string(), "--no-knowledge",
                              "--progress", "lines"},
                             {"OPENAI_API_KEY=", "ANTHROPIC_API_KEY="});
    INFO(result.out << result.err);
    // No key and no --model: the builtin proposer, never a paid model.
    CHECK_THAT(result.err, Catch::Contains("proposer: the builtin offline proposer"));
    if (!gpu_unavailable_reason().empty()) {
        CHECK(result.exit_code == 4);
        CHECK_THAT(result.err, Catch::Contains("no NVIDIA driver/GPU found"));
        CHECK_FALSE(std::filesystem::exists(archive));
        CHECK_FALSE(std::filesystem::exists(archive.string() + ".lock"));
        return;
    }
    // On a GPU: a real, short search with the builtin proposer.
    REQUIRE(result.exit_code == 0);
    CHECK_THAT(result.out, Catch::Contains("best: #"));
    CHECK_THAT(result.out, Catch::Contains("held-out shapes: passed"));
    CHECK_THAT(result.err, Catch::Contains("[5/5]"));
    Archive run = Archive::open(archive, OpenMode::read_only);
    CHECK(run.run_info().state == "finished");
    CHECK(run.candidate_count() >= 3); // the reference and the two seeds; duplicates get no row
    CHECK(run.candidate_count() <= 5);
    CHECK_FALSE(run.elites().empty());
    CHECK(run.run_info().config.dump().find("secret") == std::string::npos);
}

TEST_CASE("optimize refuses bad settings before looking for a GPU", "[e2e][search]")
{
    TempDir dir;
    auto out = (dir / "x.kforge").string();
    auto mix = run_kforge({"optimize", softmax_spec(), "--mix", "1,2", "-o", out});
    CHECK(mix.exit_code == 2);
    CHECK_THAT(mix.err, Catch::Contains("--mix '1,2'"));
    auto time = run_kforge({"optimize", softmax_spec(), "--time", "5x", "-o", out});
    CHECK(time.exit_code == 2);
    CHECK_THAT(time.err, Catch::Contains("unknown unit"));
    auto mixed = run_kforge({"optimize", softmax_spec(), "-m", "builtin", "-m", "openai:gpt-5", "-o", out});
    CHECK(mixed.exit_code == 2);
    for (const char* workers : {"0", "1025", "-1"}) {
        auto pool = run_kforge({"optimize", softmax_spec(), "--compile-workers", workers, "-o", out});
        INFO(pool.err);
        CHECK(pool.exit_code == 2);
        CHECK_THAT(pool.err, Catch::Contains("--compile-workers"));
    }
    // The whole documented range is taken: the largest pool passes the option's check and the run
    // stops at the next problem (a task that is not there).
    auto largest = run_kforge({"optimize", (dir / "missing.json").string(), "--compile-workers", "1024", "-o", out});
    CHECK(largest.exit_code != 0);
    CHECK_THAT(largest.err, Catch::Contains("missing.json") && !Catch::Contains("--compile-workers"));
    auto env_pool = run_kforge({"optimize", softmax_spec(), "-o", out, "--no-knowledge"},
                               {"KFORGE_COMPILE_WORKERS=lots", "KFORGE_SIMULATE_GPUS=1"});
    CHECK(env_pool.exit_code == 2);
    CHECK_THAT(env_pool.err, Catch::Contains("KFORGE_COMPILE_WORKERS is 'lots'"));
    auto no_key = run_kforge({"optimize", softmax_spec(), "-m", "openai:gpt-5", "-o", out, "--no-knowledge"},
                             {"OPENAI_API_KEY="});
    CHECK(no_key.exit_code == 3);
    CHECK_THAT(no_key.err, Catch::Contains("OPENAI_API_KEY"));
    CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("resume continues an interrupted run, or leaves it untouched without a GPU", "[e2e][search]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    make_interrupted_run(path);
    int64_t before = 0;
    {
        Archive archive = Archive::open(path, OpenMode::read_only);
        REQUIRE(archive.run_info().state == "interrupted");
        before = archive.candidate_count();
    }
    auto result = run_kforge({"resume", path.string(), "--no-knowledge", "--progress", "lines"});
    INFO(result.out << result.err);
    Archive archive = Archive::open(path, OpenMode::read_only);
    if (!gpu_unavailable_reason().empty()) {
        CHECK(result.exit_code == 4);
        CHECK_THAT(result.err, Catch::Contains("no NVIDIA driver/GPU found"));
        CHECK(archive.run_info().state == "interrupted");
        CHECK(archive.candidate_count() == before);
        return;
    }
    CHECK(result.exit_code == 0);
    CHECK(archive.run_info().state == "finished");
    CHECK(archive.candidate_count() > before);
}

TEST_CASE("resume refuses a run another process is writing, and a run whose budget is spent", "[e2e][search]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    clear_interrupt();
    HarnessOptions options;
    options.builtin = true;
    options.config.budgets.candidates = 8;
    run_session(path, options);
    {
        Archive writer = Archive::open(path, OpenMode::write);
        auto busy = run_kforge({"resume", path.string()});
        CHECK(busy.exit_code == 4);
        CHECK_THAT(busy.err, Catch::Contains("another kforge is writing this archive"));
    }
    auto spent = run_kforge({"resume", path.string()});
    CHECK(spent.exit_code == 2);
    CHECK_THAT(spent.err, Catch::Contains("used its budget of 8 candidates"));
    CHECK_THAT(spent.err, Catch::Contains("--budget +N"));
}

TEST_CASE("inspect --grid draws every island's grid as a heatmap", "[e2e][search]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    make_interrupted_run(path);
    auto text = run_kforge({"inspect", path.string(), "--grid"});
    INFO(text.out << text.err);
    REQUIRE(text.exit_code == 0);
    CHECK_THAT(text.out, Catch::Contains("MAP-Elites grids"));
    for (const char* island : {"island 0: ", "island 1: ", "island 2: "})
        CHECK_THAT(text.out, Catch::Contains(island));
    CHECK_THAT(text.out, Catch::Contains("memory/compute"));
    CHECK_THAT(text.out, Catch::Contains("  o25   o50   o75  o100"));
    CHECK_THAT(text.out, Catch::Contains("*"));
    CHECK_THAT(text.out, Catch::Contains("fittest: #"));

    auto json = run_kforge({"inspect", path.string(), "--grid", "--json"});
    REQUIRE(json.exit_code == 0);
    Json report = parse_json_text(json.out, "inspect --json");
    REQUIRE(report["grid"]["islands"].size() == 3);
    Archive archive = Archive::open(path, OpenMode::read_only);
    size_t elites = 0;
    for (const auto& island : report["grid"]["islands"])
        elites += island["elites"].size();
    CHECK(elites == archive.elites().size());
}

TEST_CASE("lessons are imported, listed by task, category and tag, and exported", "[e2e][search]")
{
    TempDir dir;
    auto knowledge = (dir / "kb.sqlite").string();
    auto file = dir / "lessons.jsonl";
    write_text(file, R"({"task": "softmax_f32", "category": "memory", "tags": ["softmax", "float4"], "text": "Row-wise float4 loads doubled bandwidth on wide rows.", "run_id": "r1"}
{"task": "sgemm_f32", "category": "compute", "tags": ["gemm"], "text": "128x128 tiles with double buffering beat 64x64.", "run_id": "r2"}
)");
    auto imported = run_kforge({"lessons", "--knowledge", knowledge, "--import", file.string()});
    INFO(imported.out << imported.err);
    REQUIRE(imported.exit_code == 0);
    CHECK_THAT(imported.out, Catch::Contains("imported 2 lessons"));
    auto again = run_kforge({"lessons", "--knowledge", knowledge, "--import", file.string()});
    CHECK_THAT(again.out, Catch::Contains("imported 0 lessons"));
    CHECK_THAT(again.out, Catch::Contains("(2 already there)"));

    auto all = run_kforge({"lessons", "--knowledge", knowledge});
    CHECK_THAT(all.out, Catch::Contains("2 lessons"));
    auto by_task = run_kforge({"lessons", "--knowledge", knowledge, "--task", "softmax_f32"});
    CHECK_THAT(by_task.out, Catch::Contains("float4 loads doubled"));
    CHECK(by_task.out.find("128x128") == std::string::npos);
    auto by_category = run_kforge({"lessons", "--knowledge", knowledge, "--category", "compute", "--json"});
    Json listed = parse_json_text(by_category.out, "lessons --json");
    REQUIRE(listed.size() == 1);
    CHECK(listed[0]["task"] == "sgemm_f32");
    CHECK(listed[0]["run_id"] == "r2");
    auto by_tag = run_kforge({"lessons", "--knowledge", knowledge, "--tag", "nothing"});
    CHECK_THAT(by_tag.out, Catch::Contains("no lessons matching the filter"));

    auto exported = dir / "out.jsonl";
    auto written = run_kforge({"lessons", "--knowledge", knowledge, "--export", exported.string()});
    REQUIRE(written.exit_code == 0);
    auto lines = split(trim(read_file(exported)), '\n');
    CHECK(lines.size() == 2);
    // An export imports into another knowledge base unchanged.
    auto elsewhere = (dir / "other.sqlite").string();
    auto moved = run_kforge({"lessons", "--knowledge", elsewhere, "--import", exported.string()});
    CHECK_THAT(moved.out, Catch::Contains("imported 2 lessons"));

    auto missing = run_kforge({"lessons", "--knowledge", (dir / "none.sqlite").string()});
    CHECK(missing.exit_code == 0);
    CHECK_THAT(missing.out, Catch::Contains("no lessons"));
}

TEST_CASE("a finished search's archive is read by inspect, inspect --lineage and export --best", "[e2e][search]")
{
    // The same archive a GPU run writes, made with the fake evaluator and the builtin proposer.
    clear_interrupt();
    TempDir dir;
    auto path = dir / "run.kforge";
    HarnessOptions options;
    options.builtin = true;
    options.config.islands = 2;
    options.config.budgets.candidates = 24;
    options.config.seed = 7;
    SearchOutcome outcome = run_session(path, options);
    REQUIRE(outcome.reason == StopReason::budget);
    REQUIRE(outcome.best_id);
    REQUIRE(outcome.best_fitness);
    CHECK(*outcome.best_fitness > 1.0); // the fake landscape has kernels faster than the reference
    CHECK(outcome.best_held_out == "passed");
    std::string best = "#" + std::to_string(*outcome.best_id);

    auto summary = run_kforge({"inspect", path.string()});
    INFO(summary.out << summary.err);
    REQUIRE(summary.exit_code == 0);
    CHECK_THAT(summary.out, Catch::Contains("softmax_f32"));
    CHECK_THAT(summary.out, Catch::Contains(best));

    auto lineage = run_kforge({"inspect", path.string(), "--lineage", std::to_string(*outcome.best_id)});
    INFO(lineage.out << lineage.err);
    REQUIRE(lineage.exit_code == 0);
    CHECK_THAT(lineage.out, Catch::Contains("lineage of " + best));

    auto file = dir / "best.cu";
    auto exported = run_kforge({"export", path.string(), "--best", "-o", file.string()});
    INFO(exported.out << exported.err);
    REQUIRE(exported.exit_code == 0);
    Archive archive = Archive::open(path, OpenMode::read_only);
    auto candidate = archive.candidate(*outcome.best_id);
    REQUIRE(candidate);
    std::string text = read_file(file);
    for (const auto& kernel : find_kernel_names(candidate->source))
        CHECK_THAT(text, Catch::Contains(kernel));
    CHECK(archive.run_info().state == "finished");
}
