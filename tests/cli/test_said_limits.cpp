// Issue 35, item 7: what kforge leaves out of a task or a sweep is said, never silent. A plan with
// more param points than the task sweeps is swept at a stated sample (`kforge eval --compile-only`
// prints it), and a PyTorch program whose sizes no GPU can hold imports with a warning naming the
// tensor, its shape and its bytes, then fails `kforge task check`.
#include "kf_catch.hpp"

#include <set>

#include <fmt/format.h>

#include "test_support.hpp"
#include "util/json_reader.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

namespace fs = std::filesystem;

// softmax_f32 copied into `dir` with limits.max_param_points = `cap`; returns the spec's path.
fs::path softmax_with_cap(const TempDir& dir, int cap)
{
    fs::copy(source_dir() / "tasks" / "softmax_f32", dir / "softmax_f32", fs::copy_options::recursive);
    Json spec = parse_json_file((source_dir() / "tasks" / "softmax_f32.json").string());
    spec["limits"]["max_param_points"] = cap;
    write_text(dir / "softmax_f32.json", spec.dump(2));
    return dir / "softmax_f32.json";
}

// 8 params of 8 values: 16,777,216 combinations.
std::string eight_by_eight_candidate()
{
    Json params = Json::object();
    for (const char* name : {"A", "B", "C", "D", "E", "F", "G", "H"})
        params[name] = Json::array({1, 2, 3, 4, 5, 6, 7, 8});
    Json plan{{"params", params},
              {"launches", Json::array({Json{{"kernel", "softmax"}, {"grid", {"M"}}, {"block", {32}},
                                             {"args", {"x", "y", "M", "N"}}}})}};
    return "/* kforge:plan\n" + plan.dump() + "\n*/\n" +
           "extern \"C\" __global__ void softmax(const float* x, float* y, int M, int N)\n"
           "{ if (threadIdx.x == 0 && M + N + A + B + C + D + E + F + G + H > 0) y[0] = x[0]; }\n";
}

} // namespace

TEST_CASE("eval --compile-only of a plan with more param points than the task sweeps says which it swept",
          "[e2e][cli]")
{
    TempDir dir;
    fs::path spec = softmax_with_cap(dir, 4);
    write_text(dir / "wide.cu", eight_by_eight_candidate());
    std::vector<std::string> env{"XDG_CACHE_HOME=" + (dir / "cache").string()};
    std::vector<std::string> args{"eval", spec.string(), (dir / "wide.cu").string(), "--compile-only"};

    CommandResult text = run_kforge(args, env);
    INFO(text.out << text.err);
    CHECK(text.exit_code == 0);
    CHECK_THAT(text.out, Catch::Contains("4 of 16777216 param points swept: the task sweeps at most 4 (its "
                                         "limits.max_param_points); they are a sample of the whole product"));

    args.push_back("--json");
    CommandResult first = run_kforge(args, env);
    CommandResult second = run_kforge(args, env);
    REQUIRE(first.exit_code == 0);
    Json report = parse_json_text(first.out, "eval --json");
    CHECK(report["param_points"]["swept"] == 4);
    CHECK(report["param_points"]["total"] == 16777216);
    CHECK(report["param_points"]["cap"] == 4);
    REQUIRE(report["variants"].size() == 4);
    // The same points every time (a resumed run sweeps what the first one did), and from the
    // whole product rather than its first corner (A..F fixed at 1, G and H turning).
    CHECK(parse_json_text(second.out, "eval --json")["variants"] == report["variants"]);
    std::set<std::string> leading;
    for (const auto& variant : report["variants"]) {
        std::string params = variant["params"].get<std::string>();
        leading.insert(params.substr(0, params.find(" G=")));
    }
    CHECK(leading != std::set<std::string>{"A=1 B=1 C=1 D=1 E=1 F=1"});
}

TEST_CASE("a program sized past any GPU imports with a warning naming the tensor, and task check refuses it",
          "[torch][import][e2e]")
{
    TempDir dir;
    fs::path spec = dir / "trillion_relu.json";
    CommandResult imported = run_kforge({"task", "import",
                                         (fixtures_dir() / "torch" / "oversized" / "trillion_relu.py").string(), "-o",
                                         spec.string()});
    INFO(imported.err);
    REQUIRE(imported.exit_code == 0);
    CHECK_THAT(imported.err, Catch::Contains("warning: bench shape size=1000000000000: its tensors need 7.3 TiB "
                                             "(8000000000000 bytes): "));
    CHECK_THAT(imported.err, Catch::Contains("x [1000000000000] f32 3.6 TiB"));
    CHECK_THAT(imported.err, Catch::Contains("more than the largest GPU kforge knows has (268.2 GiB)"));
    CHECK_THAT(imported.err, !Catch::Contains("warning: tests shape"));

    CommandResult checked = run_kforge({"task", "check", spec.string()});
    INFO(checked.out << checked.err);
    CHECK(checked.exit_code == 1);
    CHECK_THAT(checked.out, Catch::Contains("valid kforge.task/1 spec 'trillion_relu'"));
    CHECK_THAT(checked.out, Catch::Contains("bench shape size=1000000000000: its tensors need 7.3 TiB (8000000000000 "
                                            "bytes): x [1000000000000] f32 3.6 TiB"));
    CHECK_THAT(checked.out, Catch::Contains("1 shape(s) need more device memory than "));
    CHECK_THAT(checked.out, !Catch::Contains("compiling"));
}

} // namespace kforge::test
