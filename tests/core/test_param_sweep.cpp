// The param points a sweep evaluates: all of them up to the cap, a stated, repeatable sample of
// the whole product beyond it (core/param_sweep.hpp).
#include "kf_catch.hpp"

#include <set>

#include <fmt/format.h>

#include "core/param_sweep.hpp"

using namespace kforge;

namespace {

// A plan with `params` params of `values` values each (P0 = {1..values}, P1 = {101..}, ...).
Plan plan_with(size_t params, size_t values, const std::string& kernel = "k")
{
    Json json{{"params", Json::object()},
              {"launches", Json::array({Json{{"kernel", kernel}, {"grid", {1}}, {"block", {1}}, {"args", Json::array()}}})}};
    for (size_t p = 0; p < params; ++p) {
        Json list = Json::array();
        for (size_t v = 1; v <= values; ++v)
            list.push_back(static_cast<int64_t>(100 * p + v));
        json["params"][fmt::format("P{}", p)] = list;
    }
    return parse_plan(json, "plan");
}

} // namespace

TEST_CASE("a plan within the cap is swept at every point, in order, and says nothing", "[core][plan]")
{
    Plan plan = plan_with(2, 3);
    ParamSweep sweep = sweep_param_points(plan, 64);
    CHECK(sweep.total == 9);
    CHECK(sweep.points == enumerate_param_points(plan, 64));
    CHECK_FALSE(sweep.sampled());
    CHECK(sweep.describe().empty());
    CHECK(sweep.to_json().is_null());
}

TEST_CASE("8 params of 8 values sweep a stated sample of 64 points from the whole product", "[core][plan]")
{
    Plan plan = plan_with(8, 8);
    ParamSweep sweep = sweep_param_points(plan, 64);
    CHECK(sweep.total == 16777216);
    REQUIRE(sweep.points.size() == 64);
    CHECK(sweep.sampled());
    std::set<ParamPoint> distinct(sweep.points.begin(), sweep.points.end());
    CHECK(distinct.size() == 64);
    // Not the first corner (the first 64 points of the odometer vary only P6 and P7): the slowest
    // param takes several values.
    std::set<int64_t> first_param;
    for (const auto& point : sweep.points) {
        REQUIRE(point.size() == 8);
        for (const auto& [name, value] : point) {
            int64_t p = name[1] - '0';
            CHECK(value > 100 * p);
            CHECK(value <= 100 * p + 8);
        }
        first_param.insert(point.at("P0"));
    }
    CHECK(first_param.size() > 1);
    CHECK(std::is_sorted(sweep.points.begin(), sweep.points.end()));
    CHECK(sweep.describe() ==
          "64 of 16777216 param points swept: the task sweeps at most 64 (its limits.max_param_points); they are a "
          "sample of the whole product, drawn with a seed from the plan's params, so the same params give the same "
          "points at every evaluation. Shorten the param lists to at most 64 combinations to sweep them all.");
    Json json = sweep.to_json();
    CHECK(json["swept"] == 64);
    CHECK(json["total"] == 16777216);
    CHECK(json["cap"] == 64);
    CHECK(json["note"] == sweep.describe());
}

TEST_CASE("the sample depends on the params alone: the same params give the same points", "[core][plan]")
{
    ParamSweep a = sweep_param_points(plan_with(8, 8), 64);
    ParamSweep again = sweep_param_points(plan_with(8, 8), 64);
    ParamSweep other_kernel = sweep_param_points(plan_with(8, 8, "k2"), 64);
    ParamSweep other_params = sweep_param_points(plan_with(8, 7), 64);
    CHECK(a.points == again.points);
    CHECK(a.seed == again.seed);
    CHECK(a.points == other_kernel.points);
    CHECK(a.seed != other_params.seed);
    // One point over the cap still samples (no first-N shortcut), and every point is distinct.
    ParamSweep tight = sweep_param_points(plan_with(1, 64), 63);
    std::set<ParamPoint> distinct(tight.points.begin(), tight.points.end());
    CHECK(tight.sampled());
    CHECK(distinct.size() == 63);
}

TEST_CASE("a param only the plan reads is not passed to NVRTC, so its values share one compile", "[core][plan]")
{
    std::string source = R"(/* kforge:plan
{ "params": {"ALGO": [0, 1, 2, 3], "BLOCK": [128, 256], "UNROLL": [1, 2]},
  "launches": [{"library": "matmul", "algo": "ALGO"},
               {"kernel": "tail", "grid": ["n / BLOCK", 1, 1], "block": ["BLOCK", 1, 1]}] }
*/
// ALGO only picks the library's algorithm; a comment naming UNROLL changes nothing.
#define STEP (BLOCK * 2)
extern "C" __global__ void __launch_bounds__(BLOCK) tail(float* y) { const char* s = "ALGO"; (void)s; y[STEP] = 0; }
__device__ int ALGORITHM_COUNT; // a longer name that starts with ALGO is not ALGO
)";
    ParamPoint point{{"ALGO", 3}, {"BLOCK", 256}, {"UNROLL", 2}};
    CHECK(params_for_compile(source, point) == ParamPoint{{"BLOCK", 256}});
    CHECK(params_for_compile("int f() { return UNROLL * ALGO; }", point) == ParamPoint{{"ALGO", 3}, {"UNROLL", 2}});
    CHECK(params_for_compile("", point).empty());
}
