// Issue 23 end to end: the real binary on hostile command lines, candidates, specs, archives and
// output paths. Each gets a clear message and the documented exit code (2 usage, 3 bad input,
// 1 a negative verdict), never a crash, a hang or a replaced FIFO.
#include "kf_catch.hpp"

#include <sys/stat.h>

#include <fmt/format.h>

#include "archive/archive.hpp"
#include "archive/sample_run.hpp"
#include "archive/sqlite.hpp"
#include "search/search_harness.hpp"
#include "test_support.hpp"
#include "util/interrupt.hpp"
#include "util/json_reader.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

std::string hostile_cli_spec() { return (source_dir() / "tasks" / "softmax_f32.json").string(); }

std::string hostile_plan_source(const std::string& plan, const std::string& kernel)
{
    return "/* kforge:plan\n" + plan + "\n*/\n" + kernel;
}

const std::string k_hostile_kernel = "extern \"C\" __global__ void softmax(const float* x, float* y, int M, int N)"
                             " { if (M + N) y[0] = x[0]; }\n";

} // namespace

TEST_CASE("numeric options out of range and unknown archs are usage errors", "[e2e][cli][hostile]")
{
    TempDir dir;
    auto archive = (dir / "run.kforge").string();
    build_sample_archive(archive);
    struct Case {
        std::vector<std::string> args;
        std::string message;
    };
    std::vector<Case> cases{
        {{"inspect", archive, "--top", "-5"}, "--top: expected a whole number from 1 to 1000000, got '-5'"},
        {{"inspect", archive, "--limit", "-1"}, "--limit: expected a whole number from 1"},
        {{"inspect", archive, "--lineage", "0"}, "--lineage: expected a whole number from 1"},
        {{"eval", hostile_cli_spec(), "x.cu", "--secret", "-1"}, "--secret: expected a whole number from 0 to"},
        {{"eval", hostile_cli_spec(), "x.cu", "--deadline", "nan"}, "--deadline: expected a number above 0"},
        {{"eval", hostile_cli_spec(), "x.cu", "--compile-only", "--arch", "sm_banana"}, "'sm_banana' is not a real GPU "
                                                                                     "architecture"},
        {{"task", "check", hostile_cli_spec(), "--arch", "compute_90"}, "'compute_90' is not a real GPU architecture"},
        {{"optimize", hostile_cli_spec(), "--budget", "1e99"}, "--budget '1e99': expected a whole number from 0 to "
                                                           "1000000000"},
        {{"optimize", hostile_cli_spec(), "--budget", "2.5"}, "--budget '2.5': expected a whole number"},
        {{"optimize", hostile_cli_spec(), "--max-cost", "inf"}, "--max-cost 'inf': expected a number"},
        {{"optimize", hostile_cli_spec(), "--time", "99999999h"}, "--time '99999999h': at most a year"},
        {{"optimize", hostile_cli_spec(), "--parallel", "0"}, "--parallel: expected a whole number from 1 to 64"},
        {{"optimize", hostile_cli_spec(), "--seed", "-3"}, "--seed: expected a whole number from 0"},
        {{"optimize", hostile_cli_spec(), "--model", "openai:x@notaurl"}, "'notaurl' after '@' is not a base URL"},
        {{"optimize", hostile_cli_spec(), "--model", "openai:x@ftp://host/v1"}, "is not a base URL"},
    };
    for (const auto& c : cases) {
        auto result = run_kforge(c.args);
        INFO(join(c.args, " ") << "\n" << result.err);
        CHECK(result.exit_code == 2);
        CHECK_THAT(result.err, Catch::Contains(c.message));
    }
}

TEST_CASE("-o never replaces a FIFO or a device: export, report and dataset refuse them", "[e2e][cli][hostile]")
{
    TempDir dir;
    auto archive = (dir / "run.kforge").string();
    build_sample_archive(archive);
    auto fifo = dir / "out.fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    for (const auto& target : {fifo.string(), std::string("/dev/full")}) {
        for (const auto& args : std::vector<std::vector<std::string>>{
                 {"export", archive, "--best", "-o", target},
                 {"report", archive, "-o", target},
                 {"dataset", archive, "-o", target, "--force"}}) {
            auto result = run_kforge(args);
            INFO(join(args, " ") << "\n" << result.err);
            CHECK(result.exit_code == 2);
            CHECK_THAT(result.err, Catch::Contains("kforge writes only regular files"));
        }
    }
    CHECK(std::filesystem::is_fifo(fifo));
    CHECK(std::filesystem::is_character_file("/dev/full"));
}

TEST_CASE("inspect of an archive missing a table prints what it can read and exits 3", "[e2e][cli][hostile]")
{
    TempDir dir;
    auto archive = dir / "run.kforge";
    SampleIds ids = build_sample_archive(archive);
    {
        Database db(archive.string(), DbAccess::read_write);
        db.execute("PRAGMA foreign_keys = OFF; DROP TABLE measurement;");
    }
    auto result = run_kforge({"inspect", archive.string()});
    INFO(result.out << result.err);
    CHECK(result.exit_code == 3);
    CHECK_THAT(result.out, Catch::Contains("DAMAGED ARCHIVE") && Catch::Contains("softmax_f32") &&
                               Catch::Contains(fmt::format("#{}", ids.best)));
    CHECK_THAT(result.err, Catch::Contains("damaged archive: table 'measurement' is missing"));
    auto json = run_kforge({"inspect", archive.string(), "--json"});
    CHECK(json.exit_code == 3);
    Json report = parse_json_text(json.out, "inspect --json");
    CHECK(report["damaged"].size() >= 1);
    CHECK(report["run"]["task"] == "softmax_f32");
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"report", archive.string(), "-o", (dir / "r.html").string()},
             {"export", archive.string(), "--best", "-o", (dir / "best.cu").string()},
             {"dataset", archive.string(), "-o", (dir / "d.jsonl").string()},
             {"resume", archive.string()}}) {
        auto other = run_kforge(args);
        INFO(join(args, " ") << "\n" << other.err);
        CHECK(other.exit_code == 3);
        CHECK_THAT(other.err, Catch::Contains("damaged archive: table 'measurement' is missing"));
    }
    CHECK_FALSE(std::filesystem::exists(dir / "r.html"));
}

TEST_CASE("dataset and export of an archive missing a table they do not need write and name the damage",
          "[e2e][cli][hostile]")
{
    TempDir dir;
    auto archive = dir / "run.kforge";
    build_sample_archive(archive);
    {
        Database db(archive.string(), DbAccess::read_write);
        db.execute("PRAGMA foreign_keys = OFF; DROP TABLE elite;");
    }
    auto result = run_kforge({"dataset", archive.string(), "-o", (dir / "d.jsonl").string()});
    INFO(result.out << result.err);
    CHECK(result.exit_code == 0);
    CHECK_THAT(result.err, Catch::Contains("damaged archive: table 'elite' is missing (the dataset's records do not "
                                           "need it)"));
    CHECK(std::filesystem::file_size(dir / "d.jsonl") > 0);
    auto exported = run_kforge({"export", archive.string(), "--best", "-o", (dir / "best.cu").string()});
    INFO(exported.out << exported.err);
    CHECK(exported.exit_code == 0);
    CHECK_THAT(exported.err, Catch::Contains("damaged archive: table 'elite' is missing (the export does not need it)"));
    CHECK(std::filesystem::exists(dir / "best.cu"));
}

TEST_CASE("inspect --lineage of candidates that are each other's parents ends and says so", "[e2e][cli][hostile]")
{
    TempDir dir;
    auto archive = dir / "run.kforge";
    SampleIds ids = build_sample_archive(archive);
    {
        Database db(archive.string(), DbAccess::read_write);
        db.execute(fmt::format("PRAGMA foreign_keys = OFF; UPDATE candidate SET parent_id = {} WHERE id = {};",
                               ids.best, ids.seed));
    }
    auto result = run_kforge({"inspect", archive.string(), "--lineage", std::to_string(ids.best)});
    INFO(result.out << result.err);
    CHECK(result.exit_code == 3);
    CHECK(result.out.size() < 20000);
    CHECK_THAT(result.err, Catch::Contains(fmt::format("the parents of candidate {} loop", ids.best)));
}

TEST_CASE("resume leaves an archive of the previous schema untouched when the session cannot start",
          "[e2e][cli][hostile]")
{
    TempDir dir;
    auto path = dir / "run.kforge";
    run_interrupted_builtin(path);
    // Back to schema version 1: the tables of versions 2 (GPUs) and 3 (plans), both additive, removed.
    {
        Database db(path.string(), DbAccess::read_write);
        db.execute("PRAGMA foreign_keys = OFF; DROP TABLE candidate_gpu; DROP TABLE gpu_session; DROP TABLE gpu; "
                   "DROP TABLE candidate_technique; DROP TABLE candidate_plan; "
                   "DELETE FROM schema_version WHERE version > 1; PRAGMA wal_checkpoint(TRUNCATE);");
    }
    std::string before = slurp_file(path);
    auto result = run_kforge({"resume", path.string(), "--no-knowledge", "--progress", "lines"});
    INFO(result.out << result.err);
    if (!gpu_unavailable_reason().empty()) {
        CHECK(result.exit_code == 4);
        CHECK(slurp_file(path) == before);
        CHECK(Archive::open(path, OpenMode::read_only).schema_version() == 1);
        return;
    }
    CHECK(result.exit_code == 0);
    CHECK(Archive::open(path, OpenMode::read_only).schema_version() == schema_migrations().back().version);
}

TEST_CASE("eval --compile-only turns hostile plans and macros into verdicts", "[e2e][cli][hostile]")
{
    TempDir dir;
    struct Case {
        std::string name;
        std::string source;
        std::string verdict;
        std::string message;
    };
    std::string deep_grid = "[\"" + std::string(1000, '(') + "M" + std::string(1000, ')') + "\"]";
    std::string doubling = "#define A0 x x\n";
    for (int i = 1; i < 40; ++i)
        doubling += fmt::format("#define A{} A{} A{}\n", i, i - 1, i - 1);
    std::vector<Case> cases{
        {"deep.cu",
         hostile_plan_source(R"({"launches": [{"kernel": "softmax", "grid": )" + deep_grid +
                         R"(, "block": [256], "args": ["x", "y", "M", "N"]}]})",
                     k_hostile_kernel),
         "plan_error", "nested more than 200 levels deep"},
        {"two_args.cu",
         hostile_plan_source(R"({"launches": [{"kernel": "softmax", "grid": ["M"], "block": [256], "args": ["x", "y"]}]})",
                     k_hostile_kernel),
         "plan_error", "the plan passes 2 arguments, but kernel 'softmax' takes 4 parameters"},
        {"macro.cu",
         hostile_plan_source(R"({"launches": [{"kernel": "softmax", "grid": ["M"], "block": [256], "args": ["x", "y", "M", "N"]}]})",
                     doubling + "int A39;\n" + k_hostile_kernel),
         "compile_error", "its macros expand to more than 4194304 tokens"},
    };
    for (const auto& c : cases) {
        write_text(dir / c.name, c.source);
        auto result = run_kforge({"eval", hostile_cli_spec(), (dir / c.name).string(), "--compile-only"},
                                 {"XDG_CACHE_HOME=" + (dir / "cache").string()});
        INFO(c.name << "\n" << result.out << result.err);
        CHECK(result.exit_code == 1);
        CHECK_THAT(result.out, Catch::Contains(c.name + ": " + c.verdict) && Catch::Contains(c.message));
    }
    auto zero = run_kforge({"eval", hostile_cli_spec(), "/dev/zero", "--compile-only"});
    CHECK(zero.exit_code == 3);
    CHECK_THAT(zero.err, Catch::Contains("/dev/zero: cannot read candidate source: it is not a regular file"));
}

TEST_CASE("task check of /dev/zero, a directory or a spec reading outside its folder exits 3", "[e2e][cli][hostile]")
{
    auto zero = run_kforge({"task", "check", "/dev/zero"});
    CHECK(zero.exit_code == 3);
    CHECK_THAT(zero.err, Catch::Contains("not a regular file"));
    auto folder = run_kforge({"task", "check", (source_dir() / "tasks").string()});
    CHECK(folder.exit_code == 3);
    CHECK_THAT(folder.err, Catch::Contains("it is a directory"));
    TempDir dir;
    Json spec = parse_json_file(hostile_cli_spec());
    spec["reference"] = "../../../../../../etc/passwd";
    write_text(dir / "spec.json", spec.dump());
    auto escape = run_kforge({"task", "check", (dir / "spec.json").string()});
    CHECK(escape.exit_code == 3);
    CHECK_THAT(escape.err, Catch::Contains("reference: '../../../../../../etc/passwd' climbs out with '..'"));
}

} // namespace kforge::test
