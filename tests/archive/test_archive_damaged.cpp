// Archives copied between machines and edited by hand: a missing table or a malformed JSON value
// is a "damaged archive" (bad input) naming it, a reader still reads the rest, a loop of parents
// ends the lineage walk, and opening a run to resume it changes nothing until the run is known to
// start.
#include "kf_catch.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/sample_run.hpp"
#include "archive/sqlite.hpp"
#include "test_support.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

void drop_archive_table(const std::filesystem::path& path, const std::string& table)
{
    Database db(path.string(), DbAccess::read_write);
    db.execute("PRAGMA foreign_keys = OFF; DROP TABLE " + table + ";");
}

template <typename F>
std::string damaged_archive_error(F&& read)
{
    try {
        read();
    } catch (const DamagedArchive& e) {
        CHECK(e.kind() == ErrorKind::bad_input);
        return e.what();
    }
    FAIL("no DamagedArchive was thrown");
    return "";
}

} // namespace

TEST_CASE("a missing table is named as a damaged archive; a reader still reads the rest", "[archive][hostile]")
{
    for (std::string table : {"candidate", "run", "measurement", "llm_call", "elite", "search_state"}) {
        INFO(table);
        TempDir dir;
        auto path = dir / "run.kforge";
        build_sample_archive(path);
        drop_archive_table(path, table);
        CHECK_THAT(damaged_archive_error([&] { Archive::open(path, OpenMode::write); }),
                   Catch::Contains(fmt::format("damaged archive: table '{}' is missing; a run cannot continue", table)));
        CHECK_THAT(damaged_archive_error([&] { Archive::open_for_resume(path); }),
                   Catch::Contains(fmt::format("table '{}' is missing", table)));
        Archive archive = Archive::open(path, OpenMode::read_only);
        CHECK(archive.missing_tables() == std::vector<std::string>{table});
        if (table == "candidate") {
            CHECK_THAT(damaged_archive_error([&] { archive.candidate_count(); }),
                       Catch::Contains("run.kforge: damaged archive: table 'candidate' is missing"));
            CHECK(archive.run_info().task_name == "softmax_f32");
        } else if (table == "run") {
            CHECK_THAT(damaged_archive_error([&] { archive.run_info(); }), Catch::Contains("table 'run' is missing"));
            CHECK(archive.candidate_count() == 7);
        } else {
            CHECK(archive.candidate_count() == 7);
        }
    }
}

TEST_CASE("a missing column is named as a damaged archive too", "[archive][hostile]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    build_sample_archive(path);
    {
        Database db(path.string(), DbAccess::read_write);
        db.execute("ALTER TABLE candidate DROP COLUMN note;");
    }
    Archive archive = Archive::open(path, OpenMode::read_only);
    CHECK_THAT(damaged_archive_error([&] { archive.top_candidates(5); }), Catch::Contains("damaged archive: column 'note' is missing"));
}

TEST_CASE("candidates that are each other's parents end the lineage walk", "[archive][hostile]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    SampleIds ids = build_sample_archive(path);
    {
        Database db(path.string(), DbAccess::read_write);
        db.execute("PRAGMA foreign_keys = OFF;");
        db.execute(fmt::format("UPDATE candidate SET parent_id = {} WHERE id = {};", ids.best, ids.seed));
    }
    Archive archive = Archive::open(path, OpenMode::read_only);
    auto chain = archive.lineage(ids.best);
    REQUIRE(chain.size() == 3); // best, improved, seed; then seed's parent is best again
    CHECK(chain[0].id == ids.best);
    CHECK(chain[2].id == ids.seed);
    CHECK(chain[2].parent_id == ids.best);
    // A candidate that is its own parent.
    {
        Database db(path.string(), DbAccess::read_write);
        db.execute(fmt::format("UPDATE candidate SET parent_id = id WHERE id = {};", ids.incorrect));
    }
    CHECK(Archive::open(path, OpenMode::read_only).lineage(ids.incorrect).size() == 1);
}

TEST_CASE("every malformed JSON value the archive holds is listed by row and column, as its reader names it",
          "[archive][hostile][damaged]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    SampleIds ids = build_sample_archive(path);
    CHECK(Archive::open(path, OpenMode::read_only).damaged_json(10).empty());
    {
        Database db(path.string(), DbAccess::read_write);
        for (int64_t id : {ids.best, ids.seed, ids.incorrect})
            db.execute(fmt::format("UPDATE candidate SET descriptors = '{{' WHERE id = {};", id));
    }
    Archive archive = Archive::open(path, OpenMode::read_only);
    auto found = archive.damaged_json(2);
    REQUIRE(found.size() == 2); // at most the limit, rows in id order
    std::vector<int64_t> damaged{ids.best, ids.seed, ids.incorrect};
    std::sort(damaged.begin(), damaged.end());
    CHECK_THAT(found[0], Catch::Contains(fmt::format("run.kforge: damaged archive: candidate {} descriptors: invalid "
                                                     "JSON", damaged[0])));
    CHECK_THAT(found[1], Catch::Contains(fmt::format("candidate {} descriptors", damaged[1])));
    CHECK(archive.damaged_json(10).size() == 3);
    // The reader that needs the value throws the same message, as a DamagedArchive.
    CHECK(damaged_archive_error([&] { (void)archive.candidate(damaged[0]); }) == found[0]);
    // A writer refuses the archive before it changes anything.
    CHECK_THAT(damaged_archive_error([&] { Archive::open(path, OpenMode::write); }),
               Catch::Contains(found[0]) && Catch::Contains("a run cannot continue from it"));
    CHECK_THAT(damaged_archive_error([&] { Archive::open_for_resume(path); }), Catch::Contains(found[0]));
}

TEST_CASE("opening a run to resume it changes nothing until begin_writing, which upgrades it",
          "[archive][hostile]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    // An archive of the previous schema: version 1, without the GPU tables.
    std::vector<Migration> first{schema_migrations().front()};
    {
        Archive archive = Archive::create(path, softmax_run_info(), first);
        archive.set_run_state("interrupted");
    }
    std::string before = slurp_file(path);
    {
        Archive archive = Archive::open_for_resume(path);
        CHECK(archive.schema_version() == 1);
        CHECK(archive.run_info().state == "interrupted");
        CHECK_THROWS_WITH(archive.set_run_state("running"), Catch::Contains("before begin_writing()"));
    }
    CHECK(slurp_file(path) == before);
    {
        Archive archive = Archive::open_for_resume(path);
        archive.begin_writing();
        CHECK(archive.schema_version() == schema_migrations().back().version);
        archive.set_run_state("running");
    }
    CHECK(Archive::open(path, OpenMode::read_only).run_info().state == "running");
}

} // namespace kforge::test

namespace kforge::test {

TEST_CASE("a call whose prompt carries bytes that are not UTF-8 is stored, not fatal", "[archive][hostile]")
{
    // A model's reply with a stray 0xff byte becomes a parent's source, then part of the next prompt.
    TempDir dir;
    build_sample_archive(dir / "run.kforge");
    Archive archive = Archive::open(dir / "run.kforge", OpenMode::write);
    LlmCallRecord call;
    call.provider = "openai";
    call.model = "m";
    call.purpose = CallPurpose::propose;
    call.request = {{"messages", {{{"role", "user"}, {"content", std::string("int x = 1; \xff\xfe // parent")}}}}};
    call.reply = "ok";
    int64_t id = archive.insert_llm_call(call);
    auto out = archive.llm_call(id);
    REQUIRE(out);
    CHECK_THAT(out->request.dump(), Catch::Contains("int x = 1;") && Catch::Contains("// parent"));
}

} // namespace kforge::test
