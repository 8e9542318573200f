// A search whose model answers with library-step plans, end to end through the real binary on
// simulated GPUs: the replies are parsed as candidates (a plan of steps alone has no kernel of its
// own and once came out as no_code), reach the evaluator, and a step that would overrun its output
// is refused by the plan checks with the operand named, as on a real GPU.
#include "kf_catch.hpp"

#include <fstream>

#include "archive/archive.hpp"
#include "test_support.hpp"
#include "util/json_reader.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

std::string library_step_reply(const std::string& file, const std::string& change)
{
    std::string source = read_file(fixtures_dir() / "kernels" / "sgemm_f32_library" / file);
    return "CHANGE: " + change + "\n\n```cuda\n" + source + "```\n";
}

void write_library_replies(const std::filesystem::path& path, const std::vector<std::string>& replies)
{
    std::ofstream out(path);
    for (size_t i = 0; i < replies.size(); ++i)
        out << Json{{"schema", "kforge.llm_call/1"}, {"provider", "openai"}, {"model", "recorded-model"},
                    {"purpose", "propose"}, {"reply", replies[i]}, {"input_tokens", 1000},
                    {"output_tokens", 200}, {"cost_usd", 0.0}, {"latency_s", 0.1}, {"status", "ok"},
                    {"started_at", 1795000000.0 + static_cast<double>(i)}}
                   .dump()
            << "\n";
}

} // namespace

TEST_CASE("a search takes library-step plans from a model: steps alone are a candidate, an overrun is refused",
          "[e2e][library]")
{
    TempDir dir;
    auto replies = dir / "steps.jsonl";
    write_library_replies(replies, {library_step_reply("good_matmul_step.cu", "C = A @ B as one cuBLASLt call"),
                                    library_step_reply("step_past_output.cu", "two copies of C from one call")});
    auto archive_path = dir / "run.kforge";
    auto result = run_kforge({"optimize", (source_dir() / "tasks" / "sgemm_f32.json").string(), "--model",
                              "replay:" + replies.string(), "-o", archive_path.string(), "--no-knowledge",
                              "--budget", "6", "--progress", "lines"},
                             {"KFORGE_SIMULATE_GPUS=1"});
    INFO(result.out << result.err);
    REQUIRE(std::filesystem::exists(archive_path));

    Archive archive = Archive::open(archive_path, OpenMode::read_only);
    int steps_alone = 0, overrun = 0;
    archive.for_each_candidate([&](const Candidate& c) {
        if (c.origin != Origin::llm || c.source.find("\"library\": \"matmul\"") == std::string::npos)
            return;
        INFO(verdict_name(c.evaluation.verdict.kind) << ": " << c.evaluation.verdict.message);
        if (c.source.find("\"batch\": 2") != std::string::npos) {
            ++overrun;
            CHECK(c.evaluation.verdict.kind == VerdictKind::plan_error);
            CHECK_THAT(c.evaluation.verdict.message, Catch::Contains("'C' would be written over"));
        } else {
            ++steps_alone;
            // The simulated GPU gives verdicts from the plan's hash; what matters here is that the
            // plan was taken as code and evaluated, not refused before it ran.
            CHECK(c.evaluation.verdict.kind != VerdictKind::no_code);
            CHECK(c.evaluation.verdict.kind != VerdictKind::plan_error);
            CHECK(c.evaluation.verdict.kind != VerdictKind::compile_error);
        }
    });
    CHECK(steps_alone == 1);
    CHECK(overrun == 1);
}
