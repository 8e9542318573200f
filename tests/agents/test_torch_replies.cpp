// The recorded replies of the torch fixture problems (tests/fixtures/torch/replies/): what the replay
// provider serves must read back, through the real reply parser, as the kernel files they were
// written from, with plans that parse and name kernels the files define, in the order and with the
// expectations of replies/expected.json (scripts/replay/torch.py writes them from it).
#include "kf_catch.hpp"

#include <set>

#include "agents/call_record_json.hpp"
#include "agents/reply_parser.hpp"
#include "core/plan.hpp"
#include "core/source.hpp"
#include "core/verdict.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

using namespace kforge;

TEST_CASE("every recorded torch reply reads back as its kernel file with a plan of its own kernels", "[agents]")
{
    auto folder = test::fixtures_dir() / "torch" / "replies";
    Json expected = Json::parse(read_file(folder / "expected.json"));
    REQUIRE(expected.at("problems").size() == 8);
    for (const auto& [problem, entry] : expected.at("problems").items()) {
        const Json& replies = entry.at("replies");
        std::vector<LlmCallRecord> records = load_call_records(folder / (problem + ".jsonl"));
        INFO(problem << ": " << records.size() << " recorded, " << replies.size() << " in expected.json");
        REQUIRE(records.size() == replies.size());
        std::set<std::string> correct;
        for (size_t i = 0; i < records.size(); ++i) {
            const Json& reply = replies.at(i);
            INFO("reply " << i << ": " << reply.dump());
            REQUIRE(parse_verdict(reply.at("verdict").get<std::string>()).has_value());
            ParsedReply parsed = parse_reply(records[i].reply, EditForm::whole_file, nullptr);
            CHECK_FALSE(parsed.note.empty());
            if (reply.at("file").is_null()) {
                CHECK_FALSE(parsed.source.has_value());
                CHECK(reply.at("verdict") == "no_code");
                continue;
            }
            std::string file = reply.at("file").get<std::string>();
            REQUIRE(parsed.source.has_value());
            CHECK(trim(*parsed.source) == trim(read_file(folder / problem / file))); // the fence takes the last newline
            auto plan_json = extract_plan_json(*parsed.source);
            REQUIRE(plan_json.has_value());
            Plan plan = parse_plan(*plan_json, file);
            auto kernels = find_kernel_names(*parsed.source);
            for (const auto& launch : plan.launches)
                CHECK(std::find(kernels.begin(), kernels.end(), launch.kernel) != kernels.end());
            if (reply.at("verdict") == "correct")
                correct.insert(file);
        }
        CHECK(correct.count(entry.at("best").get<std::string>()) == 1);
    }
}
