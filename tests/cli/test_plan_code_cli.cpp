// The two-phase step through the real binary: `optimize --strategy plan` with recorded replies on a
// simulated GPU, then what `inspect`, `report` and `dataset` show of its plans; `propose` printing
// either phase's prompt and running both; the flags' usage errors.
#include "kf_catch.hpp"

#include "archive/archive.hpp"
#include "archive/knowledge_base.hpp"
#include "evaluator/simulated_runs.hpp"
#include "test_support.hpp"
#include "util/json_reader.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

std::string spec(const std::string& task)
{
    return (source_dir() / "tasks" / (task + ".json")).string();
}

std::string replies(const std::string& task)
{
    return "replay:" + (source_dir() / "tests" / "fixtures" / "replay" / ("plancode_" + task + ".jsonl")).string();
}

// The planned softmax run of scripts/gpu/checks/plancode.sh, on one simulated GPU; made once per process.
const std::filesystem::path& planned_archive()
{
    static const TempDir dir;
    static const std::filesystem::path path = [] {
        auto archive = dir / "planned-softmax.kforge";
        CommandResult result = run_kforge({"optimize", spec("softmax_f32"), "--model", replies("softmax_f32"),
                                           "--strategy", "plan", "--parallel", "1", "--no-repair", "--no-tune",
                                           "--max-lessons", "0", "--meta-every", "100", "--islands", "1", "--budget",
                                           "12", "--seed", "5", "--no-knowledge", "--progress", "lines", "-o",
                                           archive.string()},
                                          simulated_env("1"));
        INFO(result.out << result.err);
        REQUIRE(result.exit_code == 0);
        CHECK_THAT(result.err, Catch::Contains("all proposals in two phases (a plan, then the code): menu rowwise"));
        return archive;
    }();
    return path;
}

} // namespace

TEST_CASE("inspect shows a planned run's techniques table and the plan behind each step of a lineage",
          "[e2e][plan]")
{
    const auto& archive = planned_archive();
    CommandResult json = run_kforge({"inspect", archive.string(), "--json", "--lineage", "10"});
    REQUIRE(json.exit_code == 0);
    Json report = parse_json_text(json.out, "inspect --json");
    const Json& techniques = report["techniques"];
    CHECK(techniques["plans"] == 9);
    CHECK(techniques["parsed"] == 6);
    CHECK(techniques["repaired"] == 2);
    CHECK(techniques["failed"] == 1);
    CHECK(techniques["ignored"] == 1);
    CHECK(techniques["menus"] == Json::array({"rowwise"}));
    int64_t tried = 0, left_out = 0;
    bool new_one = false;
    for (const auto& row : techniques["rows"]) {
        tried += row["tried"].get<int64_t>();
        left_out += row["missing"].get<int64_t>();
        new_one = new_one || row["technique"] == "new:length-dispatched-kernels";
    }
    CHECK(tried == 9);    // 8 plans with code, one of them two techniques, one with both left out
    CHECK(left_out == 2); // the code that ignored its plan (vectorize-16b, fast-math-intrinsics)
    CHECK(new_one);
    const Json& lineage = report["lineage"];
    REQUIRE(lineage.size() >= 2);
    CHECK(lineage[0]["plan"]["techniques"][0]["id"] == "single-pass-rows");
    CHECK(lineage[0]["plan"]["status"] == "repaired");
    CHECK(lineage[0]["plan"]["steps"].size() == 3);
    CHECK(lineage.back()["plan"].is_null()); // the seed it started from

    CommandResult text = run_kforge({"inspect", archive.string(), "--lineage", "10"});
    REQUIRE(text.exit_code == 0);
    CHECK_THAT(text.out, Catch::Contains("techniques: 9 plans (6 read, 2 repaired, 1 unreadable)"));
    CHECK_THAT(text.out, Catch::Contains("new:length-dispatched-kernels"));
    CHECK_THAT(text.out, Catch::Contains("plan of #10: single-pass-rows, expected 1.15x measured"));
}

TEST_CASE("report shows the techniques table and the plan column of the best's lineage", "[e2e][plan]")
{
    const auto& archive = planned_archive();
    TempDir dir;
    CommandResult result = run_kforge({"report", archive.string(), "-o", (dir / "report.html").string()});
    REQUIRE(result.exit_code == 0);
    std::string html = read_file(dir / "report.html");
    CHECK_THAT(html, Catch::Contains(R"(<section id="techniques"><h2>Techniques (plan, then code)</h2>)"));
    CHECK_THAT(html, Catch::Contains("<code>new:length-dispatched-kernels</code>"));
    CHECK_THAT(html, Catch::Contains("<th>plan</th>"));
}

TEST_CASE("dataset records both phases: each planned candidate carries its plan and the planner's calls",
          "[e2e][plan]")
{
    const auto& archive = planned_archive();
    TempDir dir;
    auto out = dir / "planned.jsonl";
    CommandResult result = run_kforge({"dataset", archive.string(), "-o", out.string()});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    CHECK_THAT(result.err, Catch::Contains("and 10 planner calls"));
    int64_t calls = 0, plans = 0;
    for (const auto& line : split(read_file(out), '\n')) {
        if (line.empty())
            continue;
        Json record = parse_json_text(line, "record");
        calls += record["call"].is_null() ? 0 : 1;
        if (record["kind"] != "candidate" || record["plan"].is_null())
            continue;
        ++plans;
        for (const auto& call : record["plan"]["calls"]) {
            CHECK(call["purpose"] == "plan");
            CHECK(call["messages"].size() == 2);
            ++calls;
        }
        if (record["plan"]["status"] != "failed")
            CHECK(record["call"]["purpose"] == "code");
    }
    CHECK(plans == 9);
    Archive read = Archive::open(archive, OpenMode::read_only);
    CHECK(calls == read.llm_usage_total().calls); // every call once: 11 planner and 8 coder calls
    CHECK(calls == 19);
}

TEST_CASE("propose --strategy plan prints the planner's prompt, the coder's prompt for a plan, and runs both phases",
          "[e2e][plan]")
{
    TempDir dir;
    std::string parent = (source_dir() / "tasks" / "softmax_f32" / "seed_row_regs.cu").string();
    CommandResult planner = run_kforge({"propose", spec("softmax_f32"), "--strategy", "plan", "--parent", parent,
                                        "--focus", "single-pass-rows", "--print-prompt"});
    REQUIRE(planner.exit_code == 0);
    CHECK_THAT(planner.out, Catch::Contains("# The optimisation menu: memory-bound elementwise and row-wise kernels"));
    CHECK_THAT(planner.out, Catch::Contains("The search suggests trying single-pass-rows"));
    CHECK_THAT(planner.out, Catch::Contains("Reply with one JSON object in a ```json block"));

    auto plan = dir / "plan.json";
    write_file_atomic(plan, R"({"techniques": ["vectorise 16b"], "expected_speedup": "1.1x", "steps": ["use float4"]})");
    CommandResult coder = run_kforge({"propose", spec("softmax_f32"), "--plan", plan.string(), "--parent", parent,
                                      "--print-prompt"});
    REQUIRE(coder.exit_code == 0);
    CHECK_THAT(coder.out, Catch::Contains("# The plan to implement"));
    CHECK_THAT(coder.out, Catch::Contains("- vectorize-16b: vectorise global loads and stores to 16 bytes"));
    CHECK_THAT(coder.out, Catch::Contains("Expected speedup over the current kernel: 1.10x"));
    CHECK_THAT(coder.out, Catch::Contains("1. use float4"));

    CommandResult both = run_kforge({"propose", spec("axpy_f32"), "--strategy", "plan", "--model", replies("axpy_f32"),
                                     "--json", "-o", (dir / "axpy.cu").string()},
                                    {"OPENAI_API_KEY=", "ANTHROPIC_API_KEY="});
    INFO(both.err);
    REQUIRE(both.exit_code == 0);
    Json out = parse_json_text(both.out, "propose --json");
    CHECK(out["outcome"] == "source");
    CHECK(out["plan"]["plan"]["techniques"][0]["id"] == "vectorize-16b");
    CHECK(out["calls"].size() == 2);
    CHECK_THAT(read_file(dir / "axpy.cu"), Catch::Contains("axpy_vec4_unroll"));
}

TEST_CASE("the two-phase flags refuse what cannot work, naming the flag", "[e2e][plan]")
{
    auto refused = [](std::vector<std::string> args, const std::string& message) {
        CommandResult result = run_kforge(args, simulated_env("1"));
        INFO(result.err);
        CHECK(result.exit_code == 2);
        CHECK_THAT(result.err, Catch::Contains(message));
    };
    std::string model = replies("softmax_f32");
    refused({"optimize", spec("softmax_f32"), "--model", model, "--strategy", "mix", "--plan-share", "1.5"},
            "--plan-share 1.5: expected a share between 0 and 1");
    refused({"optimize", spec("softmax_f32"), "--model", model, "--strategy", "plan", "--plan-share", "0.5"},
            "--plan-share goes with --strategy mix");
    refused({"optimize", spec("softmax_f32"), "--model", model, "--strategy", "plan", "--planner-model", "builtin"},
            "--planner-model builtin: the builtin proposer does not plan");
    refused({"optimize", spec("softmax_f32"), "--model", model, "--strategy", "plan", "--menu", "rowwsie"},
            "--menu rowwsie: no such menu (did you mean rowwise?)");
    refused({"propose", spec("softmax_f32"), "--strategy", "plan", "--focus", "warp-per-col", "--print-prompt"},
            "--focus warp-per-col: not a technique of menu rowwise");
}

TEST_CASE("lessons --techniques lists the knowledge base's technique results and schedules per category",
          "[e2e][plan]")
{
    TempDir dir;
    auto path = dir / "kb.sqlite";
    {
        KnowledgeBase knowledge = KnowledgeBase::open(path, KnowledgeAccess::read_write);
        knowledge.add_technique_tries({{"vectorize-16b", "axpy_f32", "memory", 4, true, true, 1.5, 1.2},
                                       {"vectorize-16b", "softmax_f32", "memory", 9, false, false, std::nullopt, 1.1},
                                       {"tile-shape-sweep", "sgemm_f32", "compute", 5, true, false, 0.9, 1.3}},
                                      "run-1");
        Schedule schedule;
        schedule.run_id = "run-1";
        schedule.task_name = "axpy_f32";
        schedule.category = "memory";
        schedule.speedup = 1.5;
        schedule.steps = {{1, "seed", {}, "seed seed_vec4.cu", std::nullopt}, {4, "llm", {"vectorize-16b"}, "", 1.5}};
        knowledge.put_schedule(schedule);
    }
    CommandResult text = run_kforge({"lessons", "--techniques", "--knowledge", path.string(), "--category", "memory"});
    REQUIRE(text.exit_code == 0);
    CHECK_THAT(text.out, Catch::Contains("memory tasks"));
    CHECK_THAT(text.out, Catch::Contains("vectorize-16b") && !Catch::Contains("tile-shape-sweep"));
    CHECK_THAT(text.out, Catch::Contains("axpy_f32 (run-1, 1.50x): seed seed_vec4.cu -> vectorize-16b 1.50x"));
    CommandResult json = run_kforge({"lessons", "--techniques", "--knowledge", path.string(), "--json"});
    REQUIRE(json.exit_code == 0);
    Json categories = parse_json_text(json.out, "lessons --techniques --json");
    REQUIRE(categories.size() == 2);
    CHECK(categories[0]["category"] == "compute");
    CHECK(categories[1]["techniques"][0]["tried"] == 2);
    CHECK(categories[1]["techniques"][0]["improved"] == 1);
    CHECK(categories[1]["schedules"][0]["task"] == "axpy_f32");
}
