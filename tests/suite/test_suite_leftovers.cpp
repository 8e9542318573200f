// What a resumed suite reads of what earlier processes left: records whose fields are null or
// absent (a number that was not finite is written as null, a process killed before its end wrote
// none, an older kforge wrote fewer), and child summaries cut short. Each reads as unknown, and a
// record of the wrong kind is refused naming it.
#include "kf_catch.hpp"

#include "suite/child_outputs.hpp"
#include "suite/manifest.hpp"
#include "suite/page.hpp"
#include "test_support.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

Json manifest_with_nulls()
{
    Json m = Json::parse(read_file(source_dir() / "fuzz" / "corpus" / "suite_manifest" / "valid-two-problems.json"));
    for (auto& problem : m["problems"])
        for (auto& session : problem["sessions"])
            for (const char* key : {"gpu", "started_at", "ended_at", "exit_code", "busy_s", "search_s", "cost_cap", "host"})
                session[key] = nullptr;
    m["problems"][0]["cost_usd"] = nullptr;
    m["runs"] = Json::array({Json{{"token", nullptr},
                                  {"started_at", nullptr},
                                  {"host", nullptr},
                                  {"interrupted", nullptr},
                                  {"gpus", Json::array({Json{{"label", nullptr},
                                                             {"busy", nullptr},
                                                             {"search", nullptr},
                                                             {"problems", nullptr},
                                                             {"window_s", nullptr}}})}},
                             Json::object(), Json{{"gpus", nullptr}}});
    return m;
}

} // namespace

TEST_CASE("a suite manifest whose sessions and run records hold nulls reads, and its page shows them as unknown",
          "[cli][suite]")
{
    SuiteManifest m = SuiteManifest::from_json(manifest_with_nulls(), "suite.json");
    REQUIRE(m.problems.size() == 2);
    const ProblemSession& session = m.problems[0].sessions.at(0);
    CHECK(session.gpu == -1);
    CHECK(session.busy_s == 0);
    CHECK_FALSE(session.ended_at);
    CHECK_FALSE(session.exit_code);
    REQUIRE(m.runs.size() == 3);
    SuitePage page;
    page.folder = "suite";
    page.runs = m.runs;
    std::string html = render_suite_html(page);
    CHECK_THAT(html, Catch::Contains("suite run started"));
    // And it writes back as it read.
    CHECK(SuiteManifest::from_json(m.to_json(), "again").to_json() == m.to_json());
}

TEST_CASE("a suite manifest's run records are a list of objects, or null for none", "[cli][suite]")
{
    Json m = manifest_with_nulls();
    m["runs"] = nullptr;
    CHECK(SuiteManifest::from_json(m, "suite.json").runs.empty());
    m["runs"] = Json::array({Json::object(), 5});
    CHECK_THROWS_WITH(SuiteManifest::from_json(m, "suite.json"),
                      Catch::Contains("suite.json") && Catch::Contains("runs[1]") &&
                          Catch::Contains("the record of a `suite run` process"));
    m["runs"] = "none";
    CHECK_THROWS_WITH(SuiteManifest::from_json(m, "suite.json"), Catch::Contains("runs") && Catch::Contains("an array"));
}

TEST_CASE("a child's summary cut short or holding a null says only that the run finished", "[cli][suite]")
{
    TempDir dir;
    auto out = dir / "run.out";
    write_text(out, R"(some progress
{"stop": {"reason": "budget", "text": "the budget of 5 candidates is used up"}, "best": null})");
    CHECK(stop_text(out) == "the budget of 5 candidates is used up");
    write_text(out, R"({"stop": {"reason": "budget", "text": null}})");
    CHECK(stop_text(out) == "finished");
    write_text(out, R"({"stop": {"reason": "budget", "te)");
    CHECK(stop_text(out) == "finished");
    CHECK(stop_text(dir / "missing.out") == "finished");
}
