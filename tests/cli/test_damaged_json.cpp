// Archives whose stored JSON is malformed (issue 35): a file edited by hand or damaged on its way
// between machines. Every command names the row and the column ("candidate 24 metrics: invalid
// JSON") with exit code 3, never SQLite's own words: inspect shows the rest of the run with a note,
// report writes no page, and resume refuses before it changes a byte of the file.
#include "kf_catch.hpp"

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/sqlite.hpp"
#include "search/search_harness.hpp"
#include "test_support.hpp"
#include "util/interrupt.hpp"
#include "util/json_reader.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

namespace fs = std::filesystem;

void damage(const fs::path& archive, const std::string& sql)
{
    Database db(archive.string(), DbAccess::read_write);
    db.execute("PRAGMA foreign_keys = OFF; " + sql);
}

// A run of the scripted model with two-phase proposals, so that it holds model calls, plans and
// strategy texts as well; and a lesson, whether or not its analyst wrote one.
void scripted_run(const fs::path& path)
{
    clear_interrupt();
    HarnessOptions options;
    options.config.islands = 2;
    options.config.budgets.candidates = 12;
    options.config.plan_share = 0.5;
    run_session(path, options);
    Archive archive = Archive::open(path, OpenMode::write);
    Lesson lesson;
    lesson.task_name = "softmax_f32";
    lesson.text = "float4 loads help";
    lesson.tags = {"softmax"};
    archive.insert_lesson(lesson);
}

// `kforge inspect`, `inspect --json`, `report` and `resume` of a damaged archive each exit 3 and
// name `what`; inspect still shows the run, report writes nothing, resume changes nothing.
void check_commands_name(const fs::path& archive, const std::string& what, bool run_readable)
{
    std::string before = slurp_file(archive);
    auto inspect = run_kforge({"inspect", archive.string()});
    INFO(what << "\ninspect:\n" << inspect.out << inspect.err);
    CHECK(inspect.exit_code == 3);
    CHECK_THAT(inspect.err, Catch::Contains(what));
    CHECK_THAT(inspect.out, Catch::Contains("DAMAGED ARCHIVE") && Catch::Contains(what));
    CHECK(inspect.err.find("SQLite") == std::string::npos);
    auto json = run_kforge({"inspect", archive.string(), "--json"});
    CHECK(json.exit_code == 3);
    Json report = parse_json_text(json.out, "inspect --json");
    CHECK_THAT(report["damaged"].dump(), Catch::Contains(what));
    CHECK(report["budget"]["candidates"].get<int64_t>() > 0);
    if (run_readable)
        CHECK(report["run"]["task"] == "softmax_f32");

    fs::path page = archive.parent_path() / "page.html";
    auto html = run_kforge({"report", archive.string(), "-o", page.string()});
    INFO("report:\n" << html.err);
    CHECK(html.exit_code == 3);
    CHECK_THAT(html.err, Catch::Contains(what));
    CHECK_FALSE(fs::exists(page));

    auto resume = run_kforge({"resume", archive.string(), "--no-knowledge", "--budget", "+2", "--progress", "lines"},
                             {"KFORGE_SIMULATE_GPUS=1"});
    INFO("resume:\n" << resume.out << resume.err);
    CHECK(resume.exit_code == 3);
    CHECK_THAT(resume.err, Catch::Contains(what) && Catch::Contains("a run cannot continue from it"));
    CHECK(resume.err.find("SQLite") == std::string::npos);
    CHECK(slurp_file(archive) == before);
}

} // namespace

TEST_CASE("a candidate's malformed metrics are named by inspect, report and resume; inspect shows the rest and "
          "resume changes nothing",
          "[e2e][cli][hostile][damaged]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    run_interrupted_builtin(path);
    int64_t best = 0;
    {
        Archive archive = Archive::open(path, OpenMode::read_only);
        auto top = archive.top_candidates(1);
        REQUIRE(top.size() == 1);
        best = top[0].id;
    }
    damage(path, fmt::format("UPDATE candidate SET metrics = '{{\"suspicious\": tru' WHERE id = {};", best));
    std::string what = fmt::format("damaged archive: candidate {} metrics: invalid JSON", best);
    check_commands_name(path, what, true);
    // What inspect could still read: the run and the other candidates.
    auto inspect = run_kforge({"inspect", path.string()});
    CHECK_THAT(inspect.out, Catch::Contains("softmax_f32"));
    // dataset named it already; it still does.
    auto dataset = run_kforge({"dataset", path.string(), "-o", (dir / "d.jsonl").string()});
    CHECK(dataset.exit_code == 3);
    CHECK_THAT(dataset.err, Catch::Contains(fmt::format("candidate {} metrics: invalid JSON", best)));
}

TEST_CASE("malformed JSON in any stored column is named by row and column everywhere", "[e2e][cli][hostile][damaged]")
{
    TempDir dir;
    auto pristine = dir / "pristine.kforge";
    scripted_run(pristine);
    int64_t best = 0, failed = 0, call = 0, lesson = 0, planned = 0;
    {
        Archive archive = Archive::open(pristine, OpenMode::read_only);
        best = archive.top_candidates(1).at(0).id;
        auto failures = archive.failures(1, 10);
        REQUIRE_FALSE(failures.empty());
        failed = failures[0].candidate_id;
        auto calls = archive.llm_calls(1, CallText::omit);
        REQUIRE_FALSE(calls.empty());
        call = calls[0].id;
        lesson = archive.lessons().back().id;
        auto plans = archive.candidate_plans();
        REQUIRE_FALSE(plans.empty());
        planned = plans[0].candidate_id;
    }
    struct Case {
        std::string sql;
        std::string what;
        bool run_readable = true;
    };
    std::vector<Case> cases{
        {"UPDATE run SET config = '{\"search\": '", "run config", false},
        {"UPDATE run SET task_files = '{'", "run task_files", false},
        {"UPDATE run SET device = 'nvidia'", "run device", false},
        {fmt::format("UPDATE candidate SET metrics = '[1, 2' WHERE id = {}", best), fmt::format("candidate {} metrics", best)},
        {fmt::format("UPDATE candidate SET best_params = '{{\"BLOCK\": }}' WHERE id = {}", best),
         fmt::format("candidate {} best_params", best)},
        {fmt::format("UPDATE candidate SET descriptors = 'x' WHERE id = {}", failed),
         fmt::format("candidate {} descriptors", failed)},
        {fmt::format("UPDATE candidate SET compile_info = '{{' WHERE id = {}", failed),
         fmt::format("candidate {} compile_info", failed)},
        {fmt::format("UPDATE llm_call SET request = '{{\"messages\": [' WHERE id = {}", call),
         fmt::format("llm_call {} request", call)},
        {fmt::format("UPDATE lesson SET tags = '[\"a\"' WHERE id = {}", lesson), fmt::format("lesson {} tags", lesson)},
        {fmt::format("UPDATE lesson SET evidence = '{{{{' WHERE id = {}", lesson), fmt::format("lesson {} evidence", lesson)},
        {"UPDATE search_state SET value = '{\"rng\"' WHERE key = 'loop'", "search_state 'loop'"},
        {fmt::format("UPDATE candidate_plan SET plan = '{{\"techniques\": [}}' WHERE candidate_id = {}", planned),
         fmt::format("the plan of candidate {}", planned)},
        {fmt::format("UPDATE candidate_plan SET calls = '[1,' WHERE candidate_id = {}", planned),
         fmt::format("the plan of candidate {} calls", planned)},
    };
    for (const auto& c : cases) {
        DYNAMIC_SECTION(c.what)
        {
            auto path = dir / "run.kforge";
            fs::remove(path);
            fs::copy_file(pristine, path);
            damage(path, c.sql + ";");
            check_commands_name(path, fmt::format("damaged archive: {}: invalid JSON", c.what), c.run_readable);
        }
    }
}

} // namespace kforge::test
