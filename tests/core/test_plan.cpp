// Launch plans: parsing, validation against a task, and resolution with launch limits.
#include "kf_catch.hpp"

#include "core/plan_check.hpp"
#include "core/source.hpp"
#include "test_support.hpp"

using namespace kforge;

namespace {

const Task& softmax()
{
    static Task task = load_task(test::source_dir() / "tasks" / "softmax_f32.json");
    return task;
}

Plan plan_of(const std::string& json) { return parse_plan(Json::parse(json), "plan"); }

std::string resolve_error(const std::string& json, const Shape& shape, ParamPoint point = {})
{
    try {
        Plan plan = plan_of(json);
        validate_plan(softmax(), plan, {"k", "k2"});
        resolve_plan(softmax(), plan, shape, point);
    } catch (const PlanError& e) {
        return e.what();
    }
    return "";
}

const Shape& big() { return softmax().bench.at(1); } // M=8192, N=16384

} // namespace

TEST_CASE("a plan block is found in a comment and parsed", "[core][plan]")
{
    std::string source = R"(// header
/* kforge:plan
{ "params": {"BLOCK": [128, 256]},
  "launches": [{"kernel": "k", "grid": ["M"], "block": ["BLOCK"], "args": ["x", "y", "M", "N"]}] }
*/
extern "C" __global__ void k(const float* x, float* y, int M, int N) {}
)";
    auto json = extract_plan_json(source);
    REQUIRE(json);
    Plan plan = parse_plan(*json, "plan");
    CHECK(plan.params.at("BLOCK") == std::vector<int64_t>{128, 256});
    CHECK(find_kernel_names(source) == std::vector<std::string>{"k"});
    validate_plan(softmax(), plan, find_kernel_names(source));
    ResolvedPlan resolved = resolve_plan(softmax(), plan, big(), {{"BLOCK", 256}});
    REQUIRE(resolved.launches.size() == 1);
    CHECK(resolved.launches[0].grid[0] == 8192);
    CHECK(resolved.launches[0].block[0] == 256);
    CHECK(resolved.launches[0].args[2].int_value == 8192);
    CHECK(resolved.launches[0].args[0].kind == ResolvedArg::Kind::tensor);
}

TEST_CASE("plan JSON errors say where", "[core][plan]")
{
    CHECK_THROWS_WITH(extract_plan_json("/* kforge:plan {\"launches\": [} */"),
                      Catch::Contains("not valid JSON") && Catch::Contains("line 1"));
    CHECK_THROWS_WITH(extract_plan_json("/* kforge:plan {} "), Catch::Contains("never closed"));
    CHECK_THROWS_WITH(plan_of(R"({"launches": []})"), Catch::Contains("at least one launch"));
    CHECK_THROWS_WITH(plan_of(R"({"launches": [{"kernel": "k", "grid": [1], "block": [1], "args": [], "smem": "1 +"}]})"),
                      Catch::Contains("launches[0].smem") && Catch::Contains("'1 +'"));
    CHECK_THROWS_WITH(plan_of(R"({"launches": [{"kernel": "k", "grid": [1, 1, 1, 1], "block": [1], "args": []}]})"),
                      Catch::Contains("launches[0].grid: expected 1 to 3 dimensions"));
    CHECK_THROWS_WITH(plan_of(R"({"params": {"B": []}, "launches": [{"kernel": "k", "grid": [1], "block": [1], "args": []}]})"),
                      Catch::Contains("params.B: a param needs at least one value"));
}

TEST_CASE("validation refuses unknown kernels, names and param clashes", "[core][plan]")
{
    auto error = [](const std::string& json, std::vector<std::string> kernels = {"k"}) {
        try {
            validate_plan(softmax(), plan_of(json), kernels);
        } catch (const PlanError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK_THAT(error(R"({"launches": [{"kernel": "kk", "grid": [1], "block": [1], "args": []}]})"),
               Catch::Contains("no __global__ function 'kk'") && Catch::Contains("did you mean 'k'"));
    CHECK_THAT(error(R"({"launches": [{"kernel": "k", "grid": ["K"], "block": [1], "args": []}]})"),
               Catch::Contains("grid[0]: unknown name 'K'"));
    CHECK_THAT(error(R"({"launches": [{"kernel": "k", "grid": [1], "block": [1], "args": ["xx"]}]})"),
               Catch::Contains("args[0]: 'xx' is not an argument") && Catch::Contains("did you mean 'x'"));
    CHECK_THAT(error(R"({"params": {"N": [1]}, "launches": [{"kernel": "k", "grid": [1], "block": [1], "args": []}]})"),
               Catch::Contains("'N' already names a symbol"));
    CHECK_THAT(error(R"({"scratch": [{"name": "y", "bytes": 4}], "launches": [{"kernel": "k", "grid": [1], "block": [1], "args": []}]})"),
               Catch::Contains("scratch[0] (y): the name must be new"));
    CHECK_THAT(error(R"({"launches": [{"kernel": "k", "grid": [1], "block": [1], "args": ["x"], "repeat": 2, "swap": ["x", "y"]}]})"),
               Catch::Contains("'x' must be an output tensor or a scratch buffer"));
}

TEST_CASE("resolution refuses zero, oversized and too many launches", "[core][plan]")
{
    CHECK_THAT(resolve_error(R"({"launches": [{"kernel": "k", "grid": ["M - 8192"], "block": [1], "args": []}]})", big()),
               Catch::Contains("grid[0] = 'M - 8192' = 0, outside 1..2147483647"));
    CHECK_THAT(resolve_error(R"({"launches": [{"kernel": "k", "grid": [1], "block": [32, 64], "args": []}]})", big()),
               Catch::Contains("2048 threads per block, over the limit of 1024"));
    CHECK_THAT(resolve_error(R"({"launches": [{"kernel": "k", "grid": [1, 70000], "block": [1], "args": []}]})", big()),
               Catch::Contains("grid[1]") && Catch::Contains("outside 1..65535"));
    CHECK_THAT(resolve_error(R"({"launches": [{"kernel": "k", "grid": [1], "block": [1], "smem": "300000", "args": []}]})", big()),
               Catch::Contains("dynamic shared memory '300000' = 300000 bytes"));
    CHECK_THAT(resolve_error(R"({"launches": [{"kernel": "k", "grid": [1], "block": [1], "args": [], "repeat": 5}]})", big()),
               Catch::Contains("5 launches in all, over the task's limit of 4"));
    CHECK_THAT(resolve_error(R"({"scratch": [{"name": "s", "bytes": "M * N"}], "launches": [{"kernel": "k", "grid": [1], "block": [1], "args": ["s"]}]})",
                             big()),
               Catch::Contains("over the task's limit"));
    CHECK_THAT(resolve_error(R"({"launches": [{"kernel": "k", "grid": [1], "block": [1], "args": ["M * N * 64"]}]})", big()),
               Catch::Contains("does not fit in i32") && Catch::Contains("\"dtype\": \"i64\""));
    CHECK(resolve_error(R"({"launches": [{"kernel": "k", "grid": [1], "block": [1], "args": [{"value": "M * N * 64", "dtype": "i64"}]}]})",
                        big()) == "");
    CHECK_THAT(resolve_error(R"({"params": {"B": [64]}, "launches": [{"kernel": "k", "grid": [1], "block": ["B"], "args": []}]})", big()),
               Catch::Contains("no value chosen for param 'B'"));
}

TEST_CASE("repeat unrolls launches, binds iter and swaps buffers", "[core][plan]")
{
    Plan plan = plan_of(R"({"scratch": [{"name": "tmp", "bytes": "4 * M * N"}],
        "launches": [{"kernel": "k", "grid": [1], "block": [1], "args": ["y", "tmp", "iter"], "repeat": 3, "swap": ["y", "tmp"]}]})");
    validate_plan(softmax(), plan, {"k"});
    ResolvedPlan resolved = resolve_plan(softmax(), plan, softmax().tests.at(1), {});
    REQUIRE(resolved.launches.size() == 3);
    CHECK(resolved.launches[0].args[0].name == "y");
    CHECK(resolved.launches[0].args[1].name == "tmp");
    CHECK(resolved.launches[1].args[0].name == "tmp");
    CHECK(resolved.launches[1].args[1].name == "y");
    CHECK(resolved.launches[2].args[0].name == "y");
    CHECK(resolved.launches[2].args[2].int_value == 2);
    CHECK(resolved.launches[1].args[0].kind == ResolvedArg::Kind::scratch);
}

TEST_CASE("param points enumerate every combination in a fixed order", "[core][plan]")
{
    Plan plan = plan_of(R"({"params": {"A": [1, 2], "B": [10, 20, 30]}, "launches": [{"kernel": "k", "grid": [1], "block": [1], "args": []}]})");
    CHECK(count_param_points(plan) == 6);
    auto points = enumerate_param_points(plan, 100);
    REQUIRE(points.size() == 6);
    CHECK(points[0] == ParamPoint{{"A", 1}, {"B", 10}});
    CHECK(points[5] == ParamPoint{{"A", 2}, {"B", 30}});
    CHECK(enumerate_param_points(plan, 4).size() == 4);
    CHECK(describe_param_point(points[1]) == "A=1 B=20");
}

TEST_CASE("replacing a plan block keeps the code and parses back", "[core][plan]")
{
    std::string source = "// top\n/* kforge:plan\n{\"launches\": []}\n*/\nextern \"C\" __global__ void k() {}\n";
    Json plan = Json::parse(R"({"launches": [{"kernel": "k", "grid": [2], "block": [32], "args": []}]})");
    std::string replaced = replace_plan_block(source, plan);
    CHECK(replaced.find("extern \"C\" __global__ void k() {}") != std::string::npos);
    CHECK(*extract_plan_json(replaced) == plan);
    std::string added = replace_plan_block("extern \"C\" __global__ void k() {}", plan);
    CHECK(*extract_plan_json(added) == plan);
    // Everything outside the block is kept byte for byte; the plan is written compactly.
    std::string head = "// head\n/* kforge:plan\n{\"params\": {\"B\": [1]}}\n*/\nint x;\n";
    CHECK(replace_plan_block(head, Json::parse(R"({"params": {"B": [2, 4]}})")) ==
          "// head\n/* kforge:plan\n{ \"params\": {\"B\": [2, 4]} }\n*/\nint x;\n");
    CHECK(replace_plan_block("int y;\n", Json::parse(R"({"launches": []})")) == "/* kforge:plan\n{ \"launches\": [] }\n*/\nint y;\n");
}

TEST_CASE("kernel names and includes are read past comments, strings and attributes", "[core][source]")
{
    std::string source = R"SRC(
#include <cuda_fp16.h>
#include "local.h"
// #include <iostream>
/* __global__ void commented_out() {} */
const char* s = "__global__ void in_string()";
extern "C" __global__ void __launch_bounds__(256, 2) first(float* y) {}
extern "C" __global__
void second(float* y) {}
)SRC";
    CHECK(find_kernel_names(source) == std::vector<std::string>{"first", "second"});
    auto includes = find_includes(source);
    REQUIRE(includes.size() == 2);
    CHECK(includes[0].path == "cuda_fp16.h");
    CHECK(includes[0].angled);
    CHECK(includes[1].path == "local.h");
    CHECK_FALSE(includes[1].angled);
    CHECK(normalized_source_hash("int  a; // x\n") == normalized_source_hash("int a;\n/* y */"));
    CHECK(normalized_source_hash("int a;") != normalized_source_hash("int b;"));
}

TEST_CASE("a huge param product is never built: only the first points up to the cap exist", "[core][plan][hostile]")
{
    // 8 params of 8 values: 16.7 million points, which reached 6 GB when built whole.
    Json params = Json::object();
    for (int i = 0; i < 8; ++i)
        params["P" + std::to_string(i)] = {1, 2, 3, 4, 5, 6, 7, 8};
    Json json = {{"params", params}, {"launches", {{{"kernel", "k"}, {"grid", {1}}, {"block", {1}}, {"args", Json::array()}}}}};
    Plan plan = parse_plan(json, "plan");
    CHECK(count_param_points(plan) == 16777216);
    auto points = enumerate_param_points(plan, 64);
    REQUIRE(points.size() == 64);
    CHECK(points[0].at("P7") == 1);
    CHECK(points[1].at("P7") == 2);  // the last param turns fastest
    CHECK(points[8].at("P6") == 2);
    CHECK(points[63].at("P6") == 8);
    CHECK(points[63].at("P0") == 1);
    CHECK(enumerate_param_points(plan, 0).empty());
}

TEST_CASE("plans with too many launches or arguments, or nested too deep, are plan errors", "[core][plan][hostile]")
{
    Json launch = {{"kernel", "k"}, {"grid", {1}}, {"block", {1}}, {"args", Json::array()}};
    Json many = {{"launches", Json::array()}};
    for (int i = 0; i < 65; ++i)
        many["launches"].push_back(launch);
    CHECK_THROWS_WITH(parse_plan(many, "plan"), Catch::Contains("at most 64 launches, found 65"));
    Json args = launch;
    for (int i = 0; i < 129; ++i)
        args["args"].push_back("M");
    CHECK_THROWS_WITH(parse_plan(Json{{"launches", {args}}}, "plan"), Catch::Contains("at most 128 arguments, found 129"));
    std::string deep = "/* kforge:plan\n{\"launches\": " + std::string(100000, '[') + std::string(100000, ']') + "}\n*/\n";
    CHECK_THROWS_WITH(extract_plan_json(deep), Catch::Contains("not valid JSON") && Catch::Contains("nested more than"));
    std::string huge = "/* kforge:plan\n{\"launches\": [{\"kernel\": \"k\", \"grid\": [1e999]}]}\n*/\n";
    CHECK_THROWS_WITH(extract_plan_json(huge), Catch::Contains("launches[0].grid[0]") && Catch::Contains("1e999"));
}
