// `kforge resume` of an archive whose stored run configuration and saved search state hold nulls
// where numbers or strings were (a number that was not finite is stored as null; a hand edit or an
// older kforge may leave one anywhere): each reads as absent, so the run continues with the
// setting's default. A setting of the wrong type is refused naming the archive and the field, never
// with the JSON library's own words.
#include "kf_catch.hpp"

#include "archive/archive.hpp"
#include "archive/sqlite.hpp"
#include "evaluator/simulated_runs.hpp"
#include "test_support.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

namespace fs = std::filesystem;

void edit_archive(const fs::path& archive, const std::string& sql)
{
    Database db(archive.string(), DbAccess::read_write);
    db.execute(sql);
}

} // namespace

TEST_CASE("a run whose stored settings and saved state hold nulls resumes with their defaults", "[cli][e2e]")
{
    TempDir dir;
    fs::path archive = dir / "run.kforge";
    std::vector<std::string> env = simulated_env("1");
    CommandResult first = run_kforge({"optimize", (source_dir() / "tasks" / "axpy_f32.json").string(), "-o",
                                      archive.string(), "--budget", "3", "--islands", "2", "--no-knowledge",
                                      "--progress", "lines"},
                                     env);
    INFO(first.err);
    REQUIRE(first.exit_code == 0);
    int64_t before = Archive::open(archive, OpenMode::read_only).candidate_count();

    edit_archive(archive, "UPDATE run SET config = json_set(config, '$.evaluator.deadline_s', json('null'), "
                          "'$.evaluator.gpus', json('null'), '$.evaluator.reuse', json('null'), "
                          "'$.provider.timeout_s', json('null'))");
    edit_archive(archive, "UPDATE search_state SET value = json_set(value, '$.island_best[0]', json('null'), "
                          "'$.best_fitness', json('null'), '$.searched_s', json('null'), "
                          "'$.generation', json('null')) WHERE key = 'loop'");
    CommandResult resumed = run_kforge({"resume", archive.string(), "--budget", "+2", "--progress", "lines"}, env);
    INFO(resumed.err);
    CHECK(resumed.exit_code == 0);
    CHECK(Archive::open(archive, OpenMode::read_only).candidate_count() > before);

    edit_archive(archive, "UPDATE run SET config = json_set(config, '$.evaluator.deadline_s', 'soon')");
    CommandResult refused = run_kforge({"resume", archive.string(), "--budget", "+2", "--progress", "lines"}, env);
    INFO(refused.err);
    CHECK(refused.exit_code == 3);
    CHECK_THAT(refused.err, Catch::Contains(archive.string() + ": run config: evaluator.deadline_s") &&
                                Catch::Contains("expected a number"));
    CHECK(refused.err.find("json.exception") == std::string::npos);
}
