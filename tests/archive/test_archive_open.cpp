// Opening archives: what is refused and how it is named, and schema upgrades through migrations.
#include <catch2/catch.hpp>

#include <fstream>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/sample_run.hpp"
#include "archive/sqlite.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

namespace kforge::test {
namespace {

// The error an open throws, as text (the test fails if it does not throw).
std::string open_error(const std::filesystem::path& path, OpenMode mode,
                       const std::vector<Migration>& migrations = schema_migrations())
{
    try {
        Archive::open(path, mode, migrations);
    } catch (const Error& e) {
        return e.what();
    }
    FAIL("opening " << path << " did not fail");
    return "";
}

// The schema version of this kforge, and the one after it.
const int k_now = schema_migrations().back().version;
const int k_next = k_now + 1;

// The real schema plus a hypothetical next version that a later kforge might ship (one readers
// need applied: not additive).
std::vector<Migration> migrations_with_next()
{
    auto steps = schema_migrations();
    steps.push_back({k_next, "test: candidates get a review flag",
                     "ALTER TABLE candidate ADD COLUMN reviewed INTEGER NOT NULL DEFAULT 0;"
                     "CREATE TABLE review (candidate_id INTEGER NOT NULL REFERENCES candidate(id), "
                     "text TEXT);"});
    return steps;
}

bool has_column(const std::filesystem::path& path, const std::string& table,
                const std::string& column)
{
    Database db(path.string(), DbAccess::read_only);
    Statement query(db, "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?");
    query.bind_text(table).bind_text(column);
    query.step();
    return query.column_int(0) == 1;
}

} // namespace

TEST_CASE("opening a file that is not a kforge archive names the file and the problem", "[archive]")
{
    TempDir dir;
    for (auto mode : {OpenMode::read_only, OpenMode::write}) {
        CHECK_THAT(open_error(dir / "missing.kforge", mode),
                   Catch::Contains("missing.kforge: no such archive"));

        write_text(dir / "garbage.kforge", std::string(4096, '\x5a') + "not sqlite at all");
        CHECK_THAT(
            open_error(dir / "garbage.kforge", mode),
            Catch::Contains("garbage.kforge: not a kforge archive (not an SQLite database)"));

        write_text(dir / "empty.kforge", "");
        CHECK_THAT(open_error(dir / "empty.kforge", mode),
                   Catch::Contains("empty.kforge: not a kforge archive (the file is empty)"));

        CHECK_THAT(open_error(dir.path(), mode), Catch::Contains("not a regular file"));

        // SQLite's magic followed by noise: SQLite itself finds the damage, and the file is named.
        write_text(dir / "damaged.kforge",
                   std::string("SQLite format 3\0", 16) + std::string(8192, '\x7f'));
        CHECK_THAT(open_error(dir / "damaged.kforge", mode),
                   Catch::Contains("damaged.kforge: damaged file: SQLite says") &&
                       Catch::Contains("not a database"));
    }
    // Nothing was written beside the refused files.
    CHECK_FALSE(std::filesystem::exists(dir / "garbage.kforge.lock"));
    CHECK(std::filesystem::file_size(dir / "empty.kforge") == 0);
}

TEST_CASE("an SQLite database that is not a kforge archive is refused and left untouched",
          "[archive]")
{
    TempDir dir;
    auto path = dir / "other.db";
    {
        Database db(path.string(), DbAccess::read_write_create);
        db.execute("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('hello')");
    }
    auto size = std::filesystem::file_size(path);
    for (auto mode : {OpenMode::read_only, OpenMode::write})
        CHECK_THAT(
            open_error(path, mode),
            Catch::Contains(
                "other.db: an SQLite database, but not a kforge archive (application id 0x0)"));
    CHECK(std::filesystem::file_size(path) == size);
    CHECK_FALSE(std::filesystem::exists(dir / "other.db-wal"));
}

TEST_CASE("creating an archive over an existing file is refused", "[archive]")
{
    TempDir dir;
    build_sample_archive(dir / "run.kforge");
    try {
        Archive::create(dir / "run.kforge", softmax_run_info());
        FAIL("create over an existing archive succeeded");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::bad_input);
        CHECK_THAT(e.what(), Catch::Contains("run.kforge: already exists") &&
                                 Catch::Contains("kforge resume"));
    }
    CHECK(Archive::open(dir / "run.kforge", OpenMode::read_only).candidate_count() == 7);
}

TEST_CASE("a read-only archive refuses writes and says so", "[archive]")
{
    TempDir dir;
    build_sample_archive(dir / "run.kforge");
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::read_only);
    CHECK_THROWS_WITH(archive.set_run_state("running"),
                      Catch::Contains("run.kforge: cannot set the run state: the "
                                      "archive is open read-only"));
    CHECK_THROWS_WITH(archive.insert_candidate(Candidate{}), Catch::Contains("read-only"));
    CHECK(archive.run_info().state == "finished");
}

TEST_CASE(
    "a fresh archive is at the latest schema version, in WAL mode, and passes integrity_check",
    "[archive]")
{
    TempDir dir;
    build_sample_archive(dir / "run.kforge");
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::write);
    CHECK(archive.schema_version() == schema_migrations().back().version);
    CHECK(archive.integrity_check() == "ok");
    Database db((dir / "run.kforge").string(), DbAccess::read_only);
    Statement mode(db, "PRAGMA journal_mode");
    mode.step();
    CHECK(mode.column_text(0) == "wal");
}

TEST_CASE("opening an older archive for writing applies the new migration and keeps the data",
          "[archive]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    SampleIds ids = build_sample_archive(path);
    CHECK_FALSE(has_column(path, "candidate", "reviewed"));

    // A reader of the newer kforge cannot upgrade the file and says how to.
    CHECK_THAT(open_error(path, OpenMode::read_only, migrations_with_next()),
               Catch::Contains(fmt::format("schema version {}, older than this kforge's {}", k_now, k_next)) &&
                   Catch::Contains("kforge resume"));
    {
        Archive upgraded = Archive::open(path, OpenMode::write, migrations_with_next());
        CHECK(upgraded.schema_version() == k_next);
        CHECK(upgraded.candidate_count() == 7);
        CHECK(upgraded.best_candidate()->id == ids.best);
        CHECK(upgraded.integrity_check() == "ok");
    }
    CHECK(has_column(path, "candidate", "reviewed"));
    CHECK(has_column(path, "review", "text"));
    // Reopening does not apply the step twice.
    CHECK(Archive::open(path, OpenMode::write, migrations_with_next()).schema_version() == k_next);
    CHECK(Archive::open(path, OpenMode::read_only, migrations_with_next()).candidate_count() == 7);
}

TEST_CASE("an archive newer than this kforge is refused with both versions named", "[archive]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    build_sample_archive(path);
    Archive::open(path, OpenMode::write, migrations_with_next());
    for (auto mode : {OpenMode::read_only, OpenMode::write})
        CHECK_THAT(
            open_error(path, mode),
            Catch::Contains(fmt::format(
                "run.kforge: the archive has schema version {}, newer than this kforge knows ({})", k_next, k_now)) &&
                Catch::Contains("written by kforge 0.1.0"));
}

TEST_CASE("a migration that fails leaves the archive at the previous version", "[archive]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    build_sample_archive(path);
    auto steps = schema_migrations();
    steps.push_back({k_next, "test: a broken step",
                     "ALTER TABLE candidate ADD COLUMN ok INTEGER; ALTER TABLE nowhere ADD x;"});
    CHECK_THAT(
        open_error(path, OpenMode::write, steps),
        Catch::Contains(fmt::format("upgrading the archive to schema version {} (test: a broken step) failed", k_next)) &&
            Catch::Contains("no such table: nowhere"));
    CHECK_FALSE(has_column(path, "candidate", "ok"));
    Archive archive = Archive::open(path, OpenMode::write);
    CHECK(archive.schema_version() == k_now);
    CHECK(archive.integrity_check() == "ok");
}

// A file whose schema_version rows say less than its tables hold (edited by hand, or pieced together
// from two archives): the upgrade finds a table it would create and names the damage, as bad input,
// leaving the file as it was (it was an SQLite error of the runtime kind, rc 4).
TEST_CASE("an archive whose recorded schema version disagrees with its tables is named as damaged, unchanged",
          "[archive]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    build_sample_archive(path);
    {
        Database db(path.string(), DbAccess::read_write);
        db.execute("DELETE FROM schema_version WHERE version > 1; PRAGMA wal_checkpoint(TRUNCATE);");
    }
    std::string before = test::slurp_file(path);
    try {
        Archive::open(path, OpenMode::write);
        FAIL("an inconsistent archive was upgraded");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::bad_input);
        CHECK_THAT(std::string(e.what()),
                   Catch::Contains("damaged archive: it records schema version 1 but already holds what version 2 adds") &&
                       Catch::Contains("already exists"));
    }
    CHECK(test::slurp_file(path) == before);
}

TEST_CASE("a migration list with a gap is a bug and is refused before touching the file",
          "[archive]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    build_sample_archive(path);
    auto steps = schema_migrations();
    steps.push_back({k_next + 1, "skips a version", "SELECT 1"});
    CHECK_THAT(open_error(path, OpenMode::write, steps),
               Catch::Contains(fmt::format("has version {}, expected {}", k_next + 1, k_next)));
}

} // namespace kforge::test
