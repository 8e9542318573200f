// The "gpu work" part of `kforge inspect`: GPU time spent measuring a point again, from the runs the
// evaluator records, and estimated for archives recorded before it did.
#include "kf_catch.hpp"

#include "archive/archive.hpp"
#include "archive/sample_run.hpp"
#include "report/inspect_report.hpp"
#include "test_support.hpp"

namespace kforge::test {
namespace {

Json run(const std::string& key, const std::string& timing, bool tests, double gpu_s, bool reused = false,
         bool profile = false, const std::string& verdict = "correct")
{
    Json r{{"params", {{"B", 128}}}, {"tests", tests},     {"timing", timing},   {"held_out", false},
           {"profile", profile},     {"verdict", verdict}, {"gpu_s", gpu_s},      {"key", key}};
    if (reused)
        r["reused"] = Json{{"phases", Json::array({"tests"})}, {"from", Json::array({Json{{"ticket", 0}}})}};
    return r;
}

void add_candidate(Archive& archive, const std::string& marker, Json runs)
{
    Candidate c;
    c.source = softmax_candidate_source() + "// " + marker + "\n";
    c.source_hash = marker;
    c.origin = Origin::builtin;
    c.evaluation.verdict = Verdict{VerdictKind::correct, ""};
    c.evaluation.fitness = 1.5;
    c.evaluation.metrics = Json{{"runs", std::move(runs)}};
    archive.insert_candidate(c);
}

} // namespace

TEST_CASE("inspect counts GPU time spent measuring a point again, and reuses", "[inspect]")
{
    TempDir dir;
    {
        Archive archive = Archive::create(dir / "run.kforge", softmax_run_info());
        add_candidate(archive, "first", Json::array({run("a", "sweep", true, 1.0), run("a", "quick", false, 2.0)}));
        // Measured again (as with --no-reuse): the sweep and the quick run of point a are repeats.
        add_candidate(archive, "second", Json::array({run("a", "sweep", true, 1.0), run("b", "sweep", true, 1.5),
                                                      run("a", "quick", false, 2.0)}));
        // Reused whole, then a confirmation that needed the GPU (no earlier run was that strict).
        add_candidate(archive, "third", Json::array({run("a", "sweep", true, 0.0, true),
                                                     run("a", "confirm", true, 3.0, true, true)}));
        // A failing point measured twice: the second failure is a repeat too.
        add_candidate(archive, "fourth", Json::array({run("c", "sweep", true, 0.5, false, false, "incorrect"),
                                                      run("c", "quick", true, 0.5, false, false, "incorrect")}));
    }
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    Json gpu = gpu_work_section(archive);
    INFO(gpu.dump(2));
    CHECK(gpu["runs"] == 9);
    CHECK(gpu["measured_runs"] == 8);
    CHECK(gpu["reused_runs"] == 1);
    CHECK(gpu["partly_reused_runs"] == 1);
    CHECK(gpu["repeat_runs"] == 3);
    CHECK(gpu["gpu_s"].get<double>() == Approx(11.5));
    CHECK(gpu["repeat_gpu_s"].get<double>() == Approx(3.5));
    CHECK(gpu["estimated"] == false);
    CHECK_THAT(gpu_work_text(gpu), Catch::Contains("GPU time on repeats: 3.5 s of 11.5 s (30%)"));
}

TEST_CASE("candidates that never reached a GPU leave inspect's GPU figures measured, not estimated", "[inspect]")
{
    TempDir dir;
    {
        Archive archive = Archive::create(dir / "run.kforge", softmax_run_info());
        add_candidate(archive, "measured", Json::array({run("a", "sweep", true, 1.0), run("a", "confirm", true, 2.0)}));
        // A failed model call and a compile error: no code or no binary, so no GPU run and no "runs".
        for (auto [marker, kind] : {std::pair{"no code", VerdictKind::no_code}, {"no binary", VerdictKind::compile_error}}) {
            Candidate c;
            c.source = kind == VerdictKind::no_code ? "" : softmax_candidate_source() + "// " + marker + "\n";
            c.source_hash = marker;
            c.origin = Origin::llm;
            c.evaluation.verdict = Verdict{kind, "failed before the GPU"};
            c.evaluation.eval_seconds = 0.5;
            archive.insert_candidate(c);
        }
    }
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    Json gpu = gpu_work_section(archive);
    INFO(gpu.dump(2));
    CHECK(gpu["runs"] == 2);
    CHECK(gpu["gpu_s"].get<double>() == Approx(3.0));
    CHECK(gpu["estimated"] == false);
    CHECK_THAT(gpu_work_text(gpu), !Catch::Contains("estimated"));
}

TEST_CASE("inspect estimates repeats in a run recorded before per-run GPU times", "[inspect][recorded]")
{
    // The builtin softmax run of tests/fixtures (64 candidates on an H200): its children re-swept
    // their parents' params, and its best configuration was timed again and again.
    TempDir dir;
    std::filesystem::copy_file(fixtures_dir() / "softmax-h200-builtin.kforge", dir / "run.kforge");
    auto result = run_kforge({"inspect", (dir / "run.kforge").string(), "--json"});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    Json gpu = Json::parse(result.out)["gpu"];
    INFO(gpu.dump(2));
    CHECK(gpu["estimated"] == true);
    CHECK(gpu["runs"] == 318);
    CHECK(gpu["repeat_runs"] == 220);
    CHECK(gpu["repeat_share"].get<double>() > 0.5);
    CHECK(gpu["first_candidate_s"].get<double>() > 0);
    auto text = run_kforge({"inspect", (dir / "run.kforge").string()});
    CHECK_THAT(text.out, Catch::Contains("gpu work  GPU time on repeats: "));
    CHECK_THAT(text.out, Catch::Contains("220 of 318 runs measured a point again"));
}

} // namespace kforge::test
