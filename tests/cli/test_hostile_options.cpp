// Issue 35, second round of hostile command lines: option values that used to slip past the
// parser (NaN and huge time limits, budgets a suite stored and its children then refused, empty
// texts read as "not given", JSON given where a file was read) are usage errors (exit 2) naming the
// option and what it accepts, and a refused `suite run` leaves its folder as it was.
#include "kf_catch.hpp"

#include <fmt/format.h>

#include "archive/sample_run.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

namespace fs = std::filesystem;

std::string bundled_spec(const std::string& name) { return (source_dir() / "tasks" / (name + ".json")).string(); }

struct HostileCase {
    std::vector<std::string> args;
    std::string message; // a part of stderr that names the option and what it accepts
};

void check_refused(const std::vector<HostileCase>& cases, const std::vector<std::string>& env = {})
{
    for (const auto& c : cases) {
        CommandResult result = run_kforge(c.args, env);
        INFO(join(c.args, " ") << "\n" << result.err);
        CHECK(result.exit_code == 2);
        CHECK_THAT(result.err, Catch::Contains(c.message));
    }
}

} // namespace

TEST_CASE("time limits, shares and ids out of range are usage errors naming the option and its range",
          "[e2e][cli][hostile]")
{
    TempDir dir;
    std::string program = (fixtures_dir() / "torch" / "quick_gelu.py").string();
    std::string spec = bundled_spec("softmax_f32");
    auto archive = (dir / "run.kforge").string();
    build_sample_archive(archive);
    const std::string time_limit = "--time-limit: expected a number above 0 and at most 86400";
    check_refused({
        {{"task", "import", program, "--time-limit", "nan"}, time_limit + ", got 'nan'"},
        {{"task", "import", program, "--time-limit", "1e308"}, time_limit + ", got '1e308'"},
        {{"task", "import", program, "--time-limit", "-5"}, time_limit + ", got '-5'"},
        {{"task", "import", program, "--time-limit", ""}, time_limit + ", got ''"},
        {{"eval", archive, "--candidate", "-5"}, "--candidate: expected a whole number from 1 to"},
        {{"eval", archive, "--candidate", "99999999999999999999"}, "--candidate: expected a whole number from 1 to"},
        {{"optimize", spec, "--plan-share", "nan"}, "--plan-share nan: expected a share between 0 and 1 (exclusive)"},
        {{"optimize", spec, "--plan-explore", "1e400"}, "--plan-explore: expected a number from 0 and at most 1"},
        {{"optimize", spec, "--mix", "inf,0,0"}, "--mix 'inf,0,0': 'inf' is not a finite number"},
        {{"optimize", spec, "--mix", "1e308,1e308,0"}, "--mix '1e308,1e308,0': the weights' sum is not a finite number"},
        {{"resume", archive, "--max-cost", ""}, "--max-cost: expected a value, got ''"},
    });
}

TEST_CASE("hostile option values of every kind are usage errors naming the option", "[e2e][cli][hostile]")
{
    TempDir dir;
    std::string spec = bundled_spec("softmax_f32");
    auto archive = (dir / "run.kforge").string();
    build_sample_archive(archive);
    std::string program = (fixtures_dir() / "torch" / "quick_gelu.py").string();
    check_refused({
        // Integers past 64 bits, and integers in other notations.
        {{"optimize", spec, "--islands", "99999999999999999999"}, "--islands: expected a whole number from 1 to 64"},
        {{"optimize", spec, "--compile-workers", "0x10"}, "--compile-workers: expected a whole number from 1 to 1024, "
                                                          "got '0x10'"},
        {{"optimize", spec, "--max-calls", "+-1"}, "--max-calls '+-1': expected a whole number from 0 to 1000000000"},
        // Negative, overflowing and underflowing durations.
        {{"optimize", spec, "--time", "-5m"}, "--time '-5m': expected a duration"},
        {{"optimize", spec, "--time", "1e400s"}, "--time '1e400s': unknown unit 'e'"},
        {{"optimize", spec, "--deadline", "1e-400"}, "--deadline: expected a number above 0 and at most 3600"},
        {{"task", "import", program, "--time-limit", "10 s"}, "--time-limit: expected a number above 0 and at most "
                                                              "86400, got '10 s'"},
        // --gpus garbage.
        {{"optimize", spec, "--gpus", "0,,1"}, "--gpus '0,,1': expected all, a count such as 4"},
        // Unicode: full-width digits, a minus sign that is not '-'.
        {{"optimize", spec, "--gpus", "\uFF11"}, "--gpus '\uFF11': expected all, a count such as 4"},
        {{"optimize", spec, "--seed", "\uFF11\uFF12"}, "--seed: expected a whole number from 0"},
        {{"eval", spec, "x.cu", "--deadline", "\u22121"}, "--deadline: expected a number above 0 and at most 3600"},
        // Empty values, which used to read as "not given".
        {{"optimize", spec, "--gpus", ""}, "--gpus: expected a value, got ''"},
        {{"optimize", spec, "--budget", ""}, "--budget: expected a value, got ''"},
        {{"resume", archive, "--gpus", ""}, "--gpus: expected a value, got ''"},
        {{"suite", "run", spec, "-o", (dir / "suite").string(), "--shard", ""}, "--shard: expected a value"},
        // Repeated single-valued options.
        {{"optimize", spec, "--budget", "5", "--budget", "6"}, "--budget: At Most 1 required but received 2"},
        {{"inspect", archive, "--top", "5", "--top", "6"}, "--top: At Most 1 required but received 2"},
    });
    CHECK_FALSE(fs::exists(dir / "suite"));
}

TEST_CASE("suite run refuses what its optimize children would refuse, before it creates its folder",
          "[e2e][cli][suite][hostile]")
{
    TempDir dir;
    fs::path root = dir / "suite";
    std::string task = bundled_spec("axpy_f32");
    std::vector<std::string> sim{"KFORGE_SIMULATE_GPUS=1"};
    std::vector<std::string> run{"suite", "run", task, "-o", root.string(), "--progress", "quiet"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = run;
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    };
    std::vector<HostileCase> cases{
        {with({"--budget", "99999999999"}), "--budget '99999999999': expected a whole number from 0 to 1000000000"},
        {with({"--budget", "0"}), "--budget '0': expected at least 1 candidate per problem"},
        {with({"--max-cost", "1e400"}), "--max-cost '1e400': expected a number from 0 to 1000000000"},
        {with({"--time", "0"}), "--time '0': expected a positive duration"},
        {with({"--parallel", "65"}), "--parallel: expected a whole number from 1 to 64, got '65'"},
        {with({"--per-gpu", "99999999999"}), "--per-gpu 99999999999: expected auto or a whole number from 1 to 16"},
        {with({"--per-gpu", "0"}), "--per-gpu 0: expected auto or a whole number from 1 to 16"},
        {with({"--searches-per-gpu", "0"}), "--searches-per-gpu: expected a whole number from 1 to 16, got '0'"},
        {with({"--import-jobs", "-1"}), "--import-jobs: expected a whole number from 1 to 64, got '-1'"},
        // 0 imports at once never started one: a suite of PyTorch programs waited forever.
        {with({"--import-jobs", "0"}), "--import-jobs: expected a whole number from 1 to 64, got '0'"},
        {with({"--import-time-limit", "inf"}), "--import-time-limit: expected a number above 0 and at most 86400"},
        {with({"--optimize-args", "--plan-explore 7"}), "--plan-explore: expected a number from 0 and at most 1"},
        {with({"--optimize-args", "--mix nan,1,1"}), "--mix 'nan,1,1'"},
        {with({"--optimize-args", "--strategy direct --plan-share 0.5"}), "--plan-share goes with --strategy mix"},
    };
    check_refused(cases, sim);
    CHECK_FALSE(fs::exists(root));
}

TEST_CASE("a refused suite run leaves an existing suite's manifest as it was", "[e2e][cli][suite][hostile]")
{
    TempDir dir;
    fs::path root = dir / "suite";
    std::vector<std::string> sim{"KFORGE_SIMULATE_GPUS=1"};
    CommandResult first = run_kforge({"suite", "run", bundled_spec("axpy_f32"), "-o", root.string(), "--budget", "2",
                                      "--progress", "quiet"},
                                     sim);
    INFO(first.err);
    REQUIRE(first.exit_code == 0);
    std::string manifest = read_file(root / "suite.json");
    check_refused({
                      {{"suite", "run", "-o", root.string(), "--budget", "99999999999"}, "--budget '99999999999'"},
                      {{"suite", "run", "-o", root.string(), "--optimize-args", "--plan-explore 7"}, "--plan-explore"},
                      {{"suite", "run", "-o", root.string(), "--time", ""}, "--time: expected a value"},
                  },
                  sim);
    CHECK(read_file(root / "suite.json") == manifest);
}

TEST_CASE("propose --hardware takes a JSON object inline or a file holding one, and says which it could not read",
          "[e2e][cli][hostile]")
{
    TempDir dir;
    std::string spec = bundled_spec("softmax_f32");
    CommandResult inline_json = run_kforge({"propose", spec, "--print-prompt", "--hardware",
                                            R"({"name": "NVIDIA H100", "memory_bandwidth_gbps": 3350})"});
    INFO(inline_json.err);
    CHECK(inline_json.exit_code == 0);
    CHECK_THAT(inline_json.out, Catch::Contains("NVIDIA H100") && Catch::Contains("3350"));

    write_text(dir / "gpu.json", R"({"name": "NVIDIA H200"})");
    CommandResult file = run_kforge({"propose", spec, "--print-prompt", "--hardware", (dir / "gpu.json").string()});
    INFO(file.err);
    CHECK(file.exit_code == 0);
    CHECK_THAT(file.out, Catch::Contains("NVIDIA H200"));

    check_refused({
        {{"propose", spec, "--print-prompt", "--hardware", R"({"name": )"}, "--hardware: not a valid JSON object"},
        {{"propose", spec, "--print-prompt", "--hardware", "H100"}, "--hardware 'H100': neither a JSON object"},
        {{"propose", spec, "--print-prompt", "--hardware", " "}, "--hardware: expected a value"},
    });
    write_text(dir / "list.json", "[1, 2]");
    CommandResult list = run_kforge({"propose", spec, "--print-prompt", "--hardware", (dir / "list.json").string()});
    CHECK(list.exit_code == 3);
    CHECK_THAT(list.err, Catch::Contains("hardware facts must be a JSON object, found an array"));
}

} // namespace kforge::test
