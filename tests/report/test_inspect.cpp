// `kforge inspect`, end to end: the real binary reports a run in text and as JSON, reads while a
// writer holds the archive, and names what is wrong with a bad archive.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/flagged_candidate.hpp"
#include "archive/sample_run.hpp"
#include "core/source.hpp"
#include "test_support.hpp"
#include "util/json_reader.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

Json inspect_json(const std::vector<std::string>& args)
{
    auto result = run_kforge(args);
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    return parse_json_text(result.out, "inspect --json output");
}

} // namespace

TEST_CASE("inspect shows the run, the top candidates with bench times, and the failure breakdown",
          "[e2e][inspect]")
{
    TempDir dir;
    auto archive = (dir / "run.kforge").string();
    SampleIds ids = build_sample_archive(archive);
    auto result = run_kforge({"inspect", archive});
    INFO(result.out << result.err);
    REQUIRE(result.exit_code == 0);
    const std::string& out = result.out;
    CHECK_THAT(out, Catch::Contains("run       softmax_f32-20261121-220815, finished"));
    CHECK_THAT(
        out, Catch::Contains("task      softmax_f32 (hash " + softmax_run_info().task_hash + ")"));
    CHECK_THAT(out,
               Catch::Contains(
                   "device    NVIDIA H100 80GB HBM3, driver 580.65.06, toolkit 13.0, kforge 0.1.0, "
                   "seed 18446744073709551557"));
    CHECK_THAT(out, Catch::Contains(
                        "budget    7 candidates, 3 LLM calls (1 failed), 21000 input + 5500 output "
                        "tokens, $0.110 spent"));
    CHECK_THAT(out, Catch::Contains("best      #" + std::to_string(ids.best) +
                                    ", fitness 2.50x over the reference"));
    CHECK_THAT(
        out, Catch::Contains("verdicts  correct 3, incorrect 1, runtime_error 1, compile_error 2"));
    // Columns per bench shape; each candidate's medians, and the reference's row beneath.
    CHECK_THAT(out, Catch::Contains("params     M=65536,N=1024  M=8192,N=16384  M=512,N=262144"));
    CHECK_THAT(
        out, Catch::Contains(
                 "#6    2.50x  correct       0  tune          #2  BLOCK=128        16.40 us        "
                 "79.20 us       122.00 us"));
    CHECK_THAT(
        out,
        Catch::Contains(
            "reference    1.00x                   baseline                           41.00 us"));
    CHECK_THAT(out, Catch::Contains("failures (4)"));
    CHECK_THAT(out, Catch::Contains("compile_error      2  2x kernel.cu(61): error: identifier "
                                    "\"foo\" is undefined (e.g. #3)"));
    // The optional sections stay out unless asked for.
    CHECK_THAT(out, !Catch::Contains("recent failures") && !Catch::Contains("LLM usage") &&
                        !Catch::Contains("lineage"));
}

TEST_CASE("inspect --json carries the same report as one JSON document", "[e2e][inspect]")
{
    TempDir dir;
    auto archive = (dir / "run.kforge").string();
    SampleIds ids = build_sample_archive(archive);
    Json report = inspect_json({"inspect", archive, "--json"});
    CHECK(report["run"]["task"] == "softmax_f32");
    CHECK(report["run"]["seed"].get<uint64_t>() == softmax_run_info().seed);
    CHECK(report["run"]["state"] == "finished");
    CHECK(report["budget"]["candidates"] == 7);
    CHECK(report["budget"]["llm"]["calls"] == 3);
    CHECK(report["budget"]["llm"]["cost_usd"].get<double>() == Approx(0.1095));
    CHECK(report["best"]["id"] == ids.best);
    CHECK(report["best"]["fitness"].get<double>() == Approx(k_best_fitness));
    CHECK(report["verdicts"]["correct"] == 3);
    CHECK(report["verdicts"]["compile_error"] == 2);
    CHECK(report["verdicts"]["timeout"] == 0);
    CHECK(report["bench_shapes"] == Json(bench_labels()));
    REQUIRE(report["top"].size() == 3);
    const Json& best = report["top"][0];
    CHECK(best["id"] == ids.best);
    CHECK(best["parent"] == ids.improved);
    CHECK(best["origin"] == "tune");
    CHECK(best["params"] == Json{{"BLOCK", 128}});
    for (size_t i = 0; i < bench_labels().size(); ++i) {
        INFO("bench shape " << i << " " << bench_labels()[i]);
        CHECK(best["times_ns"][bench_labels()[i]].get<double>() ==
              Approx(reference_bench_ns()[i] / k_best_fitness));
    }
    CHECK(report["top"][2]["parent"].is_null());
    REQUIRE(report["baselines"].size() == 3);
    CHECK(report["baselines"][0]["subject"] == "reference");
    const Json& failures = report["failures"];
    CHECK(failures["total"] == 4);
    REQUIRE(failures["by_verdict"].size() == 3);
    CHECK(failures["by_verdict"][0]["verdict"] == "compile_error"); // the most frequent first
    CHECK(failures["by_verdict"][0]["common_messages"][0]["count"] == 2);
    CHECK(failures["by_verdict"][0]["common_messages"][0]["message"] ==
          "kernel.cu(61): error: identifier \"foo\" is undefined");
    CHECK_FALSE(failures.contains("recent"));
    CHECK_FALSE(report.contains("calls"));
    CHECK_FALSE(report.contains("lineage"));

    CHECK(inspect_json({"inspect", archive, "--json", "--top", "1"})["top"].size() == 1);
}

TEST_CASE("inspect --failures, --calls and --lineage add their sections in text and JSON",
          "[e2e][inspect]")
{
    TempDir dir;
    auto archive = (dir / "run.kforge").string();
    SampleIds ids = build_sample_archive(archive);
    std::vector<std::string> args{"inspect", archive,     "--failures",
                                  "--calls", "--lineage", std::to_string(ids.runtime_error),
                                  "--limit", "2"};
    auto text = run_kforge(args);
    INFO(text.out << text.err);
    REQUIRE(text.exit_code == 0);
    CHECK_THAT(text.out, Catch::Contains("recent failures (newest first)"));
    CHECK_THAT(text.out, Catch::Contains(
                             "CUDA_ERROR_ILLEGAL_ADDRESS in softmax_rows at shape M=65536,N=1024"));
    CHECK_THAT(text.out, Catch::Contains("lineage of #7 (newest first)"));
    CHECK_THAT(text.out, Catch::Contains("one online max/sum pass instead of two"));
    CHECK_THAT(text.out, Catch::Contains("LLM usage by model"));
    CHECK_THAT(
        text.out,
        Catch::Contains(
            "anthropic  claude-sonnet-4-5      1       0          9000           2500  $0.065"));
    CHECK_THAT(text.out, Catch::Contains("HTTP 500: internal server error"));

    args.push_back("--json");
    Json report = inspect_json(args);
    REQUIRE(report["failures"]["recent"].size() == 2); // --limit
    CHECK(report["failures"]["recent"][0]["id"] == ids.runtime_error);
    REQUIRE(report["lineage"].size() == 4);
    CHECK(report["lineage"][1]["id"] == ids.best);
    CHECK(report["lineage"][3]["id"] == ids.seed);
    REQUIRE(report["calls"]["by_model"].size() == 2);
    CHECK(report["calls"]["by_model"][1]["model"] == "gpt-5");
    CHECK(report["calls"]["by_model"][1]["failed_calls"] == 1);
    REQUIRE(report["calls"]["recent"].size() == 2);
    CHECK(report["calls"]["recent"][0]["status"] == "http_error");
}

TEST_CASE("inspect reads an archive while its writer runs, including rows committed since",
          "[e2e][inspect]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    build_sample_archive(path);
    Archive writer = Archive::open(path, OpenMode::write);
    writer.set_run_state("running");
    Json before = inspect_json({"inspect", path.string(), "--json"});
    CHECK(before["budget"]["candidates"] == 7);
    CHECK(before["run"]["state"] == "running");

    Candidate better;
    better.source = softmax_candidate_source() + "#define FASTER 1\n";
    better.source_hash = normalized_source_hash(better.source);
    better.evaluation.verdict = {VerdictKind::correct, ""};
    better.evaluation.fitness = 3.0;
    better.evaluation.measurements = bench_measurements("candidate", 3.0);
    int64_t id = writer.insert_candidate(better);
    Json after = inspect_json({"inspect", path.string(), "--json"});
    CHECK(after["budget"]["candidates"] == 8);
    CHECK(after["best"]["id"] == id);
}

TEST_CASE("inspect of a run with no candidates yet says so", "[e2e][inspect]")
{
    TempDir dir;
    auto path = dir / "fresh.kforge";
    Archive::create(path, softmax_run_info());
    auto result = run_kforge({"inspect", path.string()});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    CHECK_THAT(result.out, Catch::Contains("best      no correct candidate yet"));
    CHECK_THAT(result.out, Catch::Contains("verdicts  none yet"));
    CHECK_THAT(result.out, Catch::Contains("top candidates (0 of 0 correct"));
    CHECK_THAT(result.out, Catch::Contains("failures (0)\n  none"));
    Json report = inspect_json({"inspect", path.string(), "--json"});
    CHECK(report["best"].is_null());
    CHECK(report["top"].empty());
}

TEST_CASE("inspect names the file and the problem for a bad archive or an unknown candidate",
          "[e2e][inspect]")
{
    TempDir dir;
    auto missing = run_kforge({"inspect", (dir / "nope.kforge").string()});
    CHECK(missing.exit_code == 3);
    CHECK_THAT(missing.err, Catch::Contains("nope.kforge: no such archive"));

    write_text(dir / "notes.txt", "SQLite format 3 is what this pretends to be, but it is not");
    auto garbage = run_kforge({"inspect", (dir / "notes.txt").string()});
    CHECK(garbage.exit_code == 3);
    CHECK_THAT(garbage.err, Catch::Contains("notes.txt: not a kforge archive"));

    auto archive = (dir / "run.kforge").string();
    build_sample_archive(archive);
    auto unknown = run_kforge({"inspect", archive, "--lineage", "99"});
    CHECK(unknown.exit_code == 3);
    CHECK_THAT(unknown.err, Catch::Contains(archive + ": no candidate 99 (the archive holds 7)"));
    CHECK(unknown.out.empty());
}

} // namespace kforge::test

namespace kforge::test {

TEST_CASE("inspect and report list a flagged candidate with its times, why, and how to accept it, then as accepted",
          "[e2e][inspect]")
{
    TempDir dir;
    auto archive = (dir / "run.kforge").string();
    build_sample_archive(archive);
    int64_t flagged = add_flagged_candidate(archive);
    auto text = run_kforge({"inspect", archive});
    INFO(text.out << text.err);
    REQUIRE(text.exit_code == 0);
    CHECK_THAT(text.out, Catch::Contains("Flagged: 1 correct candidate timed below the roofline floor"));
    CHECK_THAT(text.out, Catch::Contains("3.90x") && Catch::Contains("not counted"));
    CHECK_THAT(text.out, Catch::Contains("10.51 us is under the floor of 12.00 us"));
    CHECK_THAT(text.out, Catch::Contains(fmt::format("accept it after re-measuring: kforge eval {} --candidate {} "
                                                     "--held-out --accept",
                                                     archive, flagged)));
    Json report = inspect_json({"inspect", archive, "--json"});
    REQUIRE(report["flagged"].size() == 1);
    CHECK(report["flagged"][0]["id"] == flagged);
    CHECK(report["flagged"][0]["accepted"] == false);
    CHECK(report["flagged"][0]["fitness"].is_null());
    CHECK(report["best"]["id"] != flagged);

    auto html = run_kforge({"report", archive, "-o", (dir / "r.html").string()});
    REQUIRE(html.exit_code == 0);
    std::string page = read_file(dir / "r.html");
    CHECK_THAT(page, Catch::Contains("Flagged: faster than the roofline floor") &&
                         Catch::Contains("--candidate " + std::to_string(flagged) + " --held-out --accept"));

    {
        Archive writer = Archive::open(archive, OpenMode::write);
        writer.accept_flagged_candidate(flagged, 3.0, Json{{"gpu", "NVIDIA H100 80GB HBM3"}}, {});
    }
    auto after = run_kforge({"inspect", archive});
    INFO(after.out);
    CHECK_THAT(after.out, Catch::Contains("accepted at 3.00x on NVIDIA H100 80GB HBM3"));
    CHECK_THAT(after.out, Catch::Contains("best      #" + std::to_string(flagged) + ", fitness 3.00x"));
}

TEST_CASE("eval --accept refuses, before any GPU work, what it cannot accept", "[e2e][inspect]")
{
    TempDir dir;
    auto archive = (dir / "run.kforge").string();
    SampleIds ids = build_sample_archive(archive);
    int64_t flagged = add_flagged_candidate(archive);
    auto id = [](int64_t v) { return std::to_string(v); };

    auto no_held_out = run_kforge({"eval", archive, "--candidate", id(flagged), "--accept"});
    CHECK(no_held_out.exit_code == 2);
    CHECK_THAT(no_held_out.err, Catch::Contains("--accept needs --held-out"));
    auto quick = run_kforge({"eval", archive, "--candidate", id(flagged), "--held-out", "--quick", "--accept"});
    CHECK(quick.exit_code == 2);
    auto without_candidate = run_kforge({"eval", archive, "--accept"});
    CHECK(without_candidate.exit_code == 2);
    CHECK_THAT(without_candidate.err, Catch::Contains("--accept takes a run's candidate"));
    auto with_file = run_kforge({"eval", archive, "x.cu", "--candidate", id(flagged)});
    CHECK(with_file.exit_code == 2);

    auto not_flagged = run_kforge({"eval", archive, "--candidate", id(ids.best), "--held-out", "--accept"});
    CHECK(not_flagged.exit_code == 3);
    CHECK_THAT(not_flagged.err, Catch::Contains("is not flagged as faster than the roofline floor"));
    auto missing = run_kforge({"eval", archive, "--candidate", "9999", "--held-out", "--accept"});
    CHECK(missing.exit_code == 3);
    CHECK_THAT(missing.err, Catch::Contains("no candidate 9999"));
}

} // namespace kforge::test
