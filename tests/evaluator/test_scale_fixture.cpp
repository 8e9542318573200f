// The fixed work of `kforge_bench scale` (tests/fixtures/replay/softmax_f32_scale.jsonl, written
// by scripts/replay/scale.py): every reply yields a softmax candidate whose plan is valid, with
// 6 to 8 param points, and no two are the same source, so no row rejects one as a duplicate.
#include "kf_catch.hpp"

#include <fstream>
#include <set>

#include "agents/proposer.hpp"
#include "agents/reply_parser.hpp"
#include "core/plan.hpp"
#include "core/plan_check.hpp"
#include "core/source.hpp"
#include "core/task.hpp"
#include "test_support.hpp"
#include "util/json_reader.hpp"

using namespace kforge;

TEST_CASE("the scale bench's recorded replies are distinct softmax candidates with 6 to 8 param points each",
          "[evaluator]")
{
    Task task = load_task(test::source_dir() / "tasks" / "softmax_f32.json");
    std::ifstream in(test::fixtures_dir() / "replay" / "softmax_f32_scale.jsonl");
    std::set<std::string> sources;
    size_t replies = 0;
    for (std::string line; std::getline(in, line);) {
        if (line.empty())
            continue;
        ++replies;
        INFO("reply " << replies);
        Json record = Json::parse(line);
        CHECK(record.at("status") == "ok");
        ParsedReply parsed = parse_reply(record.at("reply").get<std::string>(), EditForm::whole_file, nullptr);
        REQUIRE(parsed.source);
        sources.insert(*parsed.source);
        std::optional<Json> plan_json = extract_plan_json(*parsed.source);
        REQUIRE(plan_json);
        Plan plan = parse_plan(*plan_json, "plan");
        CHECK_NOTHROW(validate_plan(task, plan, find_kernel_names(*parsed.source)));
        size_t points = enumerate_param_points(plan, 64).size();
        CHECK(points >= 6);
        CHECK(points <= 8);
        CHECK(parsed.source->find("if (M == -" + std::to_string(replies) + ")") != std::string::npos);
    }
    CHECK(replies >= 32); // enough for 8 GPUs (scripts/gpu/checks/scale.sh)
    CHECK(sources.size() == replies);
}
