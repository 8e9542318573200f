// The suite tests' shared checks; see suite_checks.hpp. The report is compared with `inspect`, not
// with the manifest, so a count the report got wrong cannot agree with itself.
#include "suite/suite_checks.hpp"

#include <algorithm>

#include "archive/archive.hpp"
#include "kf_catch.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

namespace kforge::test {

namespace fs = std::filesystem;

std::optional<SuiteManifest> suite_manifest_now(const fs::path& root)
{
    try {
        return SuiteFolder(root, false).read();
    } catch (const Error&) {
        return std::nullopt; // not written yet
    }
}

int64_t suite_count(const SuiteManifest& manifest, ProblemState state)
{
    return std::count_if(manifest.problems.begin(), manifest.problems.end(),
                         [&](const SuiteProblem& p) { return p.state == state; });
}

std::optional<int64_t> candidates_so_far(const fs::path& root, const std::string& id)
{
    try {
        return Archive::open(root / "runs" / (id + ".kforge"), OpenMode::read_only).candidate_count();
    } catch (const Error&) {
        return std::nullopt; // not created yet, or mid-creation
    }
}

void check_report_matches_archives(const fs::path& root)
{
    CommandResult report = run_kforge({"suite", "report", root.string(), "--json"});
    INFO(report.err);
    REQUIRE(report.exit_code == 0);
    Json json = Json::parse(report.out);
    int64_t total = 0;
    for (const auto& row : json["problems"]) {
        std::string id = row["id"].get<std::string>();
        INFO(id << ": suite report's row " << row.dump());
        CHECK(row["state"] == "finished");
        CommandResult inspect = run_kforge({"inspect", (root / "runs" / (id + ".kforge")).string(), "--json"});
        REQUIRE(inspect.exit_code == 0);
        Json archive = Json::parse(inspect.out);
        INFO("inspect: candidates " << archive["budget"]["candidates"].dump() << ", best " << archive["best"].dump());
        CHECK(row["candidates"] == archive["budget"]["candidates"]);
        CHECK(row["verdicts"] == archive["verdicts"]);
        CHECK(row["best"] == archive["best"]["id"]);
        if (!archive["best"].is_null()) {
            const Json& reported = row["speedup"][row["reference"] == "torch" ? "torch_eager" : "reference"];
            REQUIRE(reported.is_number());
            CHECK(reported.get<double>() == Approx(archive["best"]["fitness"].get<double>()));
        }
        total += archive["budget"]["candidates"].get<int64_t>();
    }
    CHECK(json["summary"]["candidates"] == total);
}

} // namespace kforge::test
