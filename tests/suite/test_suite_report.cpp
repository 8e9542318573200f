// `kforge suite report` over a hand-made suite: archives written through the archive API with known
// baselines and best kernels, a manifest that names them, and problems that never got a correct
// kernel, failed before making an archive, or were skipped. The fast_p arithmetic is checked
// number by number (suite/results.hpp states it), in the library and through the real binary
// (--json, the text table and the HTML page with its per-problem pages).
#include "kf_catch.hpp"

#include <cmath>

#include "archive/archive.hpp"
#include "core/source.hpp"
#include "suite/manifest.hpp"
#include "suite/results.hpp"
#include "test_support.hpp"
#include "util/hash.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

const std::vector<std::string> k_suite_shapes = {"n=1024", "n=4096"};

Measurement suite_timing(const std::string& subject, const std::string& shape, double ns, bool confirmed = true,
                         double roofline_ns = 0)
{
    Measurement m;
    m.shape_set = "bench";
    m.shape_label = shape;
    m.subject = subject;
    m.median_ns = m.q1_ns = m.q3_ns = m.min_ns = ns;
    m.samples = 50;
    m.confirmed = confirmed;
    m.roofline_ns = roofline_ns;
    return m;
}

// A run of a task whose reference is a PyTorch program (torch) or a CUDA kernel.
RunInfo suite_run_info(const std::string& name, bool torch)
{
    RunInfo run;
    run.run_id = name + "-20261125-120000";
    run.task_name = name;
    run.task_spec = torch ? R"({"schema": "kforge.task/1", "name": "p", "reference": {"torch": "p.py"}})"
                          : R"({"schema": "kforge.task/1", "name": "p", "reference": {"file": "p.cu"}})";
    run.task_hash = hash_hex(run.task_spec);
    run.config = {{"search", {{"islands", 1}}}};
    run.kforge_version = "0.1.0";
    run.state = "finished";
    return run;
}

Candidate suite_candidate(VerdictKind verdict, int serial)
{
    Candidate c;
    c.source = "// candidate " + std::to_string(serial) + "\nextern \"C\" __global__ void k() {}\n";
    c.source_hash = normalized_source_hash(c.source);
    c.origin = Origin::llm;
    c.evaluation.verdict = {verdict, verdict == VerdictKind::correct ? "" : "wrong at index 3"};
    return c;
}

// A correct candidate whose bench times are `times` (one per shape).
Candidate suite_correct(double fitness, const std::vector<double>& times, int serial,
                        const std::vector<Measurement>& extra = {}, const std::vector<double>& roofline = {})
{
    Candidate c = suite_candidate(VerdictKind::correct, serial);
    c.evaluation.fitness = fitness;
    for (size_t i = 0; i < times.size(); ++i)
        c.evaluation.measurements.push_back(
            suite_timing("candidate", k_suite_shapes[i], times[i], true, roofline.empty() ? 0 : roofline[i]));
    c.evaluation.measurements.insert(c.evaluation.measurements.end(), extra.begin(), extra.end());
    return c;
}

std::vector<Measurement> suite_baselines(const std::vector<double>& reference, const std::vector<double>& compile)
{
    std::vector<Measurement> out;
    for (size_t i = 0; i < reference.size(); ++i)
        out.push_back(suite_timing("reference", k_suite_shapes[i], reference[i]));
    for (size_t i = 0; i < compile.size(); ++i)
        out.push_back(suite_timing("torch_compile", k_suite_shapes[i], compile[i]));
    return out;
}

struct HandMadeArchive {
    std::string id;
    bool torch = true;
    std::vector<Measurement> baselines;
    std::vector<Candidate> candidates;
    double cost_usd = 0;
    double busy_s = 0;
};

void write_hand_made_archive(const std::filesystem::path& path, const HandMadeArchive& spec)
{
    Archive archive = Archive::create(path, suite_run_info(spec.id, spec.torch));
    archive.insert_baselines(spec.baselines);
    for (const auto& c : spec.candidates)
        archive.insert_candidate(c);
    if (spec.cost_usd > 0) {
        LlmCallRecord call;
        call.provider = "openai";
        call.model = "gpt-test";
        call.cost_usd = spec.cost_usd;
        call.input_tokens = 1000;
        archive.insert_llm_call(call);
    }
    if (spec.busy_s > 0) {
        GpuUsage usage;
        usage.gpu = GpuIdentity{"node1", 0, 0, "GPU-test", "test GPU"};
        usage.busy_s = spec.busy_s;
        usage.wall_s = spec.busy_s * 1.5;
        archive.record_gpu_usage(1, {usage});
    }
}

SuiteProblem suite_entry(const std::string& id, ProblemKind kind, ProblemState state, const std::string& spec)
{
    SuiteProblem p;
    p.id = id;
    p.source = "/problems/" + id + (kind == ProblemKind::python ? ".py" : ".json");
    p.kind = kind;
    p.spec = spec;
    p.archive = "runs/" + id + ".kforge";
    p.log = "logs/" + id + ".log";
    p.state = state;
    return p;
}

constexpr double k_session_start = 1795000000;

// The hand-made suite: six imported programs (t1..t6) and three bundled-style tasks (c1..c3).
//   t1 correct: 2.5x eager, 1.2x torch.compile (the run's baselines), 50% of roofline, $0.25, 1 h held
//   t2 correct: 1.2x eager, 0.8x torch.compile (timed beside the best, not the run's 0.5x); running
//   t3 correct: 0.9x eager, 0.5x torch.compile
//   t4 never correct (incorrect, compile error); baselines with torch.compile
//   t5 correct: 1.6x eager; torch.compile failed (baselines without it)
//   t6 failed at import: no archive
//   c1 correct: 3.0x its reference, $0.50;  c2 only held_out_failed and runtime_error;  c3 skipped
SuiteFolder build_hand_made_suite(const std::filesystem::path& root)
{
    SuiteFolder folder(root, true);
    auto path = [&](const std::string& id) { return root / "runs" / (id + ".kforge"); };
    std::vector<Measurement> beside_t2{suite_timing("torch_compile", k_suite_shapes[0], 80),
                                       suite_timing("torch_compile", k_suite_shapes[1], 80)};
    write_hand_made_archive(path("t1"), {"t1", true, suite_baselines({100, 400}, {48, 192}),
                                         {suite_correct(1.5, {80, 240}, 1), suite_correct(2.5, {40, 160}, 2, {}, {20, 80}),
                                          suite_candidate(VerdictKind::incorrect, 3)},
                                         0.25, 1800});
    write_hand_made_archive(path("t2"), {"t2", true, suite_baselines({120, 120}, {50, 50}),
                                         {suite_correct(1.2, {100, 100}, 1, beside_t2)}, 0, 0});
    write_hand_made_archive(path("t3"), {"t3", true, suite_baselines({90, 90}, {50, 50}),
                                         {suite_correct(0.9, {100, 100}, 1)}, 0, 0});
    write_hand_made_archive(path("t4"), {"t4", true, suite_baselines({90, 90}, {50, 50}),
                                         {suite_candidate(VerdictKind::incorrect, 1),
                                          suite_candidate(VerdictKind::compile_error, 2)},
                                         0, 0});
    write_hand_made_archive(path("t5"), {"t5", true, suite_baselines({160, 160}, {}),
                                         {suite_correct(1.6, {100, 100}, 1)}, 0, 0});
    write_hand_made_archive(path("c1"), {"c1", false, suite_baselines({300, 300}, {}),
                                         {suite_correct(3.0, {100, 100}, 1)}, 0.5, 0});
    write_hand_made_archive(path("c2"), {"c2", false, suite_baselines({300, 300}, {}),
                                         {suite_candidate(VerdictKind::runtime_error, 1),
                                          suite_candidate(VerdictKind::held_out_failed, 2)},
                                         0, 0});
    std::string bundled_spec = (source_dir() / "tasks" / "axpy_f32.json").string();
    folder.update([&](SuiteManifest& m) {
        for (const char* id : {"t1", "t2", "t3", "t4", "t5"})
            m.problems.push_back(suite_entry(id, ProblemKind::python, ProblemState::finished,
                                             std::string("problems/") + id + "/" + id + ".json"));
        m.problems.push_back(suite_entry("t6", ProblemKind::python, ProblemState::failed, "problems/t6/t6.json"));
        m.problems.back().reason = "import exited with status 3: t6.py: defines no Model";
        m.problems.push_back(suite_entry("c1", ProblemKind::spec, ProblemState::finished, bundled_spec));
        m.problems.push_back(suite_entry("c2", ProblemKind::spec, ProblemState::finished, bundled_spec));
        m.problems.push_back(suite_entry("c3", ProblemKind::spec, ProblemState::skipped, bundled_spec));
        m.problems.back().reason = "no recorded replies, and task 'c3' has no seed kernels";
        ProblemSession hour;
        hour.command = "optimize";
        hour.started_at = k_session_start;
        hour.ended_at = k_session_start + 3600;
        m.find("t1")->sessions.push_back(hour);
        ProblemSession open;
        open.command = "resume";
        open.started_at = k_session_start;
        m.find("t2")->state = ProblemState::running;
        m.find("t2")->sessions.push_back(open);
    });
    return folder;
}

const BaselineSummary& suite_group(const SuiteSummary& s, const std::string& name)
{
    for (const auto& b : s.baselines)
        if (b.baseline == name)
            return b;
    FAIL("no baseline group " << name);
    return s.baselines.front();
}

} // namespace

TEST_CASE("the suite summary counts fast_p over the problems that have each baseline, failures included",
          "[cli][suite]")
{
    TempDir dir;
    SuiteFolder folder = build_hand_made_suite(dir / "suite");
    std::vector<ProblemResult> results;
    SuiteManifest manifest = *folder.read();
    for (const auto& p : manifest.problems)
        results.push_back(read_problem_result(folder, p, k_session_start + 100));
    REQUIRE(results.size() == 9);
    std::map<std::string, const ProblemResult*> by_id;
    for (const auto& r : results)
        by_id[r.id] = &r;

    // Rows: the best (not the first correct candidate), speedups, furthest verdicts.
    const ProblemResult& t1 = *by_id["t1"];
    CHECK(t1.correct());
    CHECK(t1.candidates == 3);
    CHECK(*t1.vs_reference == Approx(2.5));
    CHECK(*t1.vs_compile == Approx(1.2));
    CHECK(*t1.best_time_ns == Approx(80)); // sqrt(40 * 160)
    CHECK(*t1.roofline == Approx(0.5));
    CHECK(t1.cost_usd == Approx(0.25));
    CHECK(t1.held_s == Approx(3600));
    CHECK(*by_id["t2"]->vs_compile == Approx(0.8)); // timed beside the best beats the run's baseline
    CHECK(by_id["t2"]->held_s == Approx(100));     // still running: its session ends "now"
    CHECK(*by_id["t3"]->vs_compile == Approx(0.5));
    CHECK_FALSE(by_id["t4"]->correct());
    CHECK(by_id["t4"]->verdict == "incorrect");
    CHECK(by_id["t4"]->verdicts.at("compile_error") == 1);
    CHECK(by_id["t5"]->compile_missing);
    CHECK_FALSE(by_id["t6"]->has_archive);
    CHECK(by_id["t6"]->torch);
    CHECK(by_id["c2"]->verdict == "held_out_failed");
    CHECK_FALSE(by_id["c3"]->torch);

    SuiteSummary s = summarize_suite(results);
    CHECK(s.problems == 9);
    CHECK(s.correct == 5);
    CHECK(s.correctness_rate() == Approx(5.0 / 9));
    CHECK(s.states.at("finished") == 6);
    CHECK(s.states.at("running") == 1);
    CHECK(s.states.at("failed") == 1);
    CHECK(s.states.at("skipped") == 1);

    const BaselineSummary& eager = suite_group(s, "torch_eager");
    CHECK(eager.label == "torch eager");
    CHECK(eager.problems == 6); // t1..t6: the failed import counts
    CHECK(eager.correct == 4);
    CHECK(eager.fast == std::vector<int64_t>{4, 3, 2, 1}); // > 0, > 1 (2.5, 1.2, 1.6), > 1.5 (2.5, 1.6), > 2
    CHECK(eager.fast_share(1) == Approx(0.5));
    CHECK(*eager.geomean == Approx(std::pow(2.5 * 1.2 * 0.9 * 1.6, 0.25)));
    CHECK(eager.geomean_over == 4);

    const BaselineSummary& compile = suite_group(s, "torch_compile");
    CHECK(compile.problems == 5); // t5 has no torch.compile baseline
    CHECK(compile.correct == 3);
    CHECK(compile.fast == std::vector<int64_t>{3, 1, 0, 0});
    CHECK(*compile.geomean == Approx(std::cbrt(1.2 * 0.8 * 0.5)));

    const BaselineSummary& own = suite_group(s, "reference");
    CHECK(own.problems == 3);
    CHECK(own.fast == std::vector<int64_t>{1, 1, 1, 1});
    CHECK(*own.geomean == Approx(3.0));

    CHECK(s.cost_usd == Approx(0.75));
    CHECK(s.gpu_hours == Approx(3700.0 / 3600));
    CHECK(s.busy_gpu_hours == Approx(0.5));
    CHECK(s.candidates == 3 + 1 + 1 + 2 + 1 + 1 + 2);
}

TEST_CASE("suite report prints the same numbers as JSON, as text and as a page linking each problem's report",
          "[cli][suite][e2e]")
{
    TempDir dir;
    build_hand_made_suite(dir / "suite");
    CommandResult json = run_kforge({"suite", "report", (dir / "suite").string(), "--json"});
    INFO(json.err);
    REQUIRE(json.exit_code == 0);
    Json report = Json::parse(json.out);
    const Json& summary = report["summary"];
    CHECK(summary["problems"] == 9);
    CHECK(summary["correct"] == 5);
    CHECK(summary["against"]["torch_eager"]["fast_counts"]["fast_1"] == 3);
    CHECK(summary["against"]["torch_eager"]["fast"]["fast_1.5"].get<double>() == Approx(2.0 / 6));
    CHECK(summary["against"]["torch_compile"]["problems"] == 5);
    CHECK(summary["against"]["torch_compile"]["fast_counts"]["fast_0"] == 3);
    CHECK(summary["against"]["reference"]["geomean_speedup"].get<double>() == Approx(3.0));
    CHECK(summary["busy_gpu_hours"].get<double>() == Approx(0.5));
    REQUIRE(report["problems"].size() == 9);
    const Json& t1 = report["problems"][report["problems"][0]["id"] == "c1" ? 3 : 0];
    CHECK(report["problems"][0]["id"] == "c1"); // sorted by id
    CHECK(t1["id"] == "t1");
    CHECK(t1["speedup"]["torch_eager"].get<double>() == Approx(2.5));
    CHECK(t1["speedup"]["reference"].is_null());
    CHECK(t1["best"] == 2);

    CommandResult text = run_kforge({"suite", "report", (dir / "suite").string()});
    REQUIRE(text.exit_code == 0);
    CHECK_THAT(text.out, Catch::Contains("correct: 5/9 (55.6%)"));
    CHECK_THAT(text.out, Catch::Contains("vs torch eager (6 problems): fast_0 66.7%  fast_1 50.0%  fast_1.5 33.3%  "
                                         "fast_2 16.7%"));
    CHECK_THAT(text.out, Catch::Contains("vs torch.compile (5 problems)"));
    CHECK_THAT(text.out, Catch::Contains("t6 failed: import exited with status 3"));
    CHECK_THAT(text.out, Catch::Contains("c3 skipped: no recorded replies"));

    std::filesystem::path page = dir / "pages" / "suite.html";
    std::filesystem::create_directories(page.parent_path());
    CommandResult html = run_kforge({"suite", "report", (dir / "suite").string(), "-o", page.string()});
    INFO(html.err);
    REQUIRE(html.exit_code == 0);
    std::string markup = slurp_file(page);
    CHECK_THAT(markup, Catch::Contains("<svg"));
    CHECK_THAT(markup, Catch::Contains("55.6%"));
    CHECK_THAT(markup, Catch::Contains(R"(href="../suite/runs/t1.html")"));
    CHECK(std::filesystem::exists(dir / "suite" / "runs" / "t1.html")); // each problem's own report
    CHECK_FALSE(std::filesystem::exists(dir / "suite" / "runs" / "t6.html"));
    CHECK_THAT(markup, !Catch::Contains("<script") && !Catch::Contains("<link"));
    std::string without_namespace = replace_all(markup, "xmlns=\"http://www.w3.org/2000/svg\"", "");
    CHECK_THAT(without_namespace, !Catch::Contains("http://") && !Catch::Contains("https://"));

    CommandResult missing = run_kforge({"suite", "report", (dir / "nowhere").string()});
    CHECK(missing.exit_code == 3);
    CHECK_THAT(missing.err, Catch::Contains("not a kforge suite folder"));
}
