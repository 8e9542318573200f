// The export's host-code generator on a task made to reach every corner of the plan language:
// every operator (negative operands of / % and ceil_div included), min/max of three, repeat with
// `iter`, swapped scratch buffers, a derived symbol, a size no scalar carries, a symbol only a
// constraint names, an integer scalar that is not a size, and argument types from i8 to u32.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core/plan_check.hpp"
#include "export/export_harness.hpp"
#include "export/host_code.hpp"
#include "test_support.hpp"

namespace kforge::test {
namespace {

using Json = nlohmann::json;

Task corners_task(const TempDir& dir)
{
    write_text(dir / "ref.cu", R"(/* kforge:plan
{ "launches": [{"kernel": "ref", "grid": [1], "block": [1], "args": ["x", "w", "out", "n", "total", "scale"]}] }
*/
extern "C" __global__ void ref(const float* x, __half* w, int* out, int64_t n, int total, __half scale) {}
)");
    const char* spec = R"json({
      "schema": "kforge.task/1", "name": "corners", "description": "every corner of the plan language",
      "symbols": {"n": {"min": 1}, "T": {"min": 1, "max": 12}, "U": {"min": 1}, "D": {"value": "n * 2"}},
      "constraints": ["U <= n", "n % 5 != 4"],
      "args": [
        {"name": "x", "dtype": "f32", "shape": ["n"]},
        {"name": "w", "dtype": "f16", "shape": ["D"], "intent": "inout", "check": {"atol": 1e-3, "rtol": 1e-3}},
        {"name": "out", "dtype": "i32", "shape": ["ceil_div(n, 4)"], "intent": "out", "check": {"metric": "exact"}},
        {"name": "n", "dtype": "i64", "value": "n"},
        {"name": "total", "dtype": "i32", "value": "n + D"},
        {"name": "scale", "dtype": "f16", "value": "0.5"}
      ],
      "reference": "ref.cu",
      "shapes": {"tests": [{"n": 1, "T": 1, "U": 1}, {"n": 37, "T": 5, "U": 2}, {"n": 100, "T": 12, "U": 3}],
                 "bench": [{"n": 1000003, "T": 7, "U": 1}]},
      "roofline": {"flops": "n", "bytes": "4 * n"}
    })json";
    return parse_task(spec, "corners.json", dir.path());
}

const char* const k_corners_plan = R"json({
  "params": {"BLOCK": [64, 128]},
  "scratch": [{"name": "a", "bytes": "4 * ceil_div(n, BLOCK) + n % 7"},
              {"name": "b", "bytes": "max(D - 3 * n, 16, n / 1000)"}],
  "launches": [
    {"kernel": "first", "grid": ["max(ceil_div(n, BLOCK), 1)", "min(T, 3)", 1], "block": ["BLOCK", 1, 1],
     "smem": "(BLOCK / 32) * 8 + (n % 2) * 4",
     "args": ["x", "w", "a", "n", "total", "scale",
              {"value": "ceil_div(-n, 3) + (-n) % 4 + (-n) / 4", "dtype": "i64"},
              {"value": "!(n > 5) || (D == 2 && n != 3)", "dtype": "i8"}]},
    {"kernel": "steps", "grid": ["ceil_div(D, 2 * BLOCK)"], "block": [32, 2, "min(T, 4)"],
     "repeat": "T - 1", "swap": ["a", "b"],
     "args": ["a", "b", "iter", {"value": "(iter - 3) / 2 - (n % -5) * -1", "dtype": "i64"},
              {"value": "50 - iter * 10", "dtype": "u32"}, "out"]},
    {"kernel": "last", "grid": [1], "block": [1], "args": ["out", "b", "T", {"value": "n * n * n", "dtype": "i64"}]}
  ] })json";

const char* const k_corners_kernels = R"cu(
extern "C" __global__ void first(const float* x, __half* w, unsigned char* a, int64_t n, int total,
                                 __half scale, int64_t v, int8_t b) {}
extern "C" __global__ void steps(unsigned char* a, unsigned char* b, int iter, int64_t v, uint32_t u,
                                 int* out) {}
extern "C" __global__ void last(int* out, unsigned char* b, int T, int64_t v) {}
)cu";

} // namespace

TEST_CASE("integer expressions become calls of the checked helpers", "[export][launcher]")
{
    CHECK(expr_to_cpp(Expr::parse("ceil_div(n, BLOCK) * -2 + min(a, b, c)"), {"BLOCK"}) ==
          "add(e, multiply(e, ceil_divide(e, sym_n, ((int64_t)(BLOCK))), negate(e, INT64_C(2))), "
          "min2(min2(sym_a, sym_b), sym_c))");
    CHECK(expr_to_cpp(Expr::parse("!(x >= 3) && iter % 2 == 1 || y != 0"), {}) ==
          "either(both(logical_not(is_ge(sym_x, INT64_C(3))), is_eq(modulo(e, iter, INT64_C(2)), "
          "INT64_C(1))), is_ne(sym_y, INT64_C(0)))");
    CHECK_THROWS_AS(expr_to_cpp(Expr::parse("sqrt(n)"), {}), PlanError);
}

TEST_CASE("generated plan arithmetic matches resolve_plan in every corner of the plan language",
          "[export][launcher][slow]")
{
    TempDir dir;
    Task task = corners_task(dir);
    Plan plan = parse_plan(Json::parse(k_corners_plan), "plan");
    validate_plan(task, plan, {"first", "steps", "last"});
    LauncherSource source{task, plan, describe_launcher(task, plan)};
    const LauncherSignature& sig = source.signature;
    REQUIRE(sig.sizes.size() == 2);
    CHECK((sig.sizes[0].name == "n" && sig.sizes[0].is_task_arg));
    CHECK((sig.sizes[1].name == "T" && !sig.sizes[1].is_task_arg));
    CHECK(sig.unused_symbols == std::vector<std::string>{"U"});
    CHECK(sig.unchecked_constraints == std::vector<std::string>{"U <= n"});
    REQUIRE(sig.derived.size() == 1);
    CHECK(sig.derived[0].name == "D");

    std::vector<SizeValues> cases;
    for (const auto* list : {&task.tests, &task.bench})
        for (const auto& shape : *list)
            cases.push_back(sizes_of(sig, shape));
    for (int64_t n : std::initializer_list<int64_t>{1, 2, 3, 4, 5, 6, 9, 37, 100, 101, 1000, 715827882, 715827883, 2097151,
                      2097152, int64_t{1} << 62})
        for (int64_t t = 0; t <= 13; ++t)
            cases.push_back({n, t});
    for (auto& hostile : hostile_sizes(task, sig))
        cases.push_back(hostile);

    auto cu = dir / "corners.cu";
    write_text(cu, "#ifndef BLOCK\n#define BLOCK 64\n#endif\n" + generate_resolve_code(source));
    auto answers = run_resolve_harness(cu, plan, sig, cases);
    int overflows = compare_resolutions(task, plan, sig, {{"BLOCK", 64}}, cases, answers);
    CHECK(overflows > 0);

    SECTION("a -D on the command line moves the launches with the kernels")
    {
        auto moved = run_resolve_harness(cu, plan, sig, cases, "-DBLOCK=128");
        compare_resolutions(task, plan, sig, {{"BLOCK", 128}}, cases, moved);
    }
}

TEST_CASE("the launcher of the corner plan compiles under nvcc beside its kernels",
          "[export][launcher][slow]")
{
    TempDir dir;
    Task task = corners_task(dir);
    Plan plan = parse_plan(Json::parse(k_corners_plan), "plan");
    LauncherSource source{task, plan, describe_launcher(task, plan)};
    std::string declarations = generate_launcher_declarations(source);
    CHECK_THAT(declarations,
               Catch::Contains("cudaError_t kforge_corners(const float* x, __half* w, int32_t* out, "
                               "int64_t n, int32_t total, __half scale, int64_t T, void* "
                               "workspace, size_t workspace_bytes, cudaStream_t stream);"));
    CHECK_THAT(declarations,
               Catch::Contains("size_t kforge_corners_workspace_bytes(int64_t n, int64_t T);"));
    std::string code = generate_launcher_code(source);
    // total carries no size: the launcher holds it to the task's definition.
    CHECK_THAT(code, Catch::Contains("if ((int64_t)total != plan->value[4])"));
    write_text(dir / "corners_launch.cu",
               "#define BLOCK 64\n" + generate_resolve_code(source) +
                   "#include <cstdint>\n#include <cuda_fp16.h>\n" + k_corners_kernels + code);
    check_nvcc_compiles_file(dir / "corners_launch.cu");
}

} // namespace kforge::test
