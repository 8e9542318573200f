// A finished `kforge suite run` leaves each finished problem's archive as one file (issue 35): no
// SQLite -wal/-shm, no writer lock, no claim beside it; and running the suite again still works
// (it does nothing and says why).
#include "kf_catch.hpp"

#include <set>

#include "suite/suite_checks.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

namespace fs = std::filesystem;

// The names in `folder`, sorted.
std::set<std::string> names_in(const fs::path& folder)
{
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(folder))
        names.insert(entry.path().filename().string());
    return names;
}

} // namespace

TEST_CASE("a finished suite leaves only its archives in runs/, and a second run does nothing and says so",
          "[cli][suite][e2e]")
{
    TempDir dir;
    fs::path root = dir / "suite";
    std::vector<std::string> args{"suite", "run", (source_dir() / "tasks" / "axpy_f32.json").string(),
                                  (source_dir() / "tasks" / "transpose_f32.json").string(), "-o", root.string(),
                                  "--budget", "2", "--no-knowledge", "--progress", "lines"};
    std::vector<std::string> env{"KFORGE_SIMULATE_GPUS=1"};
    CommandResult first = run_kforge(args, env);
    INFO(first.out << first.err);
    REQUIRE(first.exit_code == 0);
    SuiteManifest done = *suite_manifest_now(root);
    REQUIRE(suite_count(done, ProblemState::finished) == 2);
    std::set<std::string> archives;
    for (const auto& p : done.problems)
        archives.insert(fs::path(p.archive).filename().string());
    CHECK(names_in(root / "runs") == archives);

    CommandResult again = run_kforge({"suite", "run", "-o", root.string(), "--progress", "lines"}, env);
    INFO(again.out << again.err);
    CHECK(again.exit_code == 0);
    CHECK_THAT(again.out, Catch::Contains("finished"));
    SuiteManifest after = *suite_manifest_now(root);
    for (const auto& p : after.problems) {
        INFO(p.id);
        CHECK(p.state == ProblemState::finished);
        CHECK(p.sessions.size() == done.find(p.id)->sessions.size()); // nothing ran again
    }
    CHECK(names_in(root / "runs") == archives);
    // The archives read as before, and reading them leaves nothing beside them either.
    for (const auto& p : after.problems) {
        CommandResult inspect = run_kforge({"inspect", (root / p.archive).string()});
        INFO(inspect.err);
        CHECK(inspect.exit_code == 0);
    }
    CHECK(names_in(root / "runs") == archives);
}
