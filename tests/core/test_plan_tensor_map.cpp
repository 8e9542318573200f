// Tensor-map launch arguments: parsing, validation against a task, and resolution into the numbers
// cuTensorMapEncodeTiled takes (innermost dimension first), with the encoder's rules checked early.
#include "kf_catch.hpp"

#include "core/plan_check.hpp"
#include "test_support.hpp"

using namespace kforge;

namespace {

// A is M x K bf16, C is M x N bf16 (row-major); M, N, K multiples of 16.
const Task& hgemm()
{
    static Task task = load_task(test::source_dir() / "tasks" / "hgemm_bf16.json");
    return task;
}

Shape shape(int64_t m, int64_t n, int64_t k)
{
    Shape s = hgemm().tests.at(0);
    s.sizes["M"] = m;
    s.sizes["N"] = n;
    s.sizes["K"] = k;
    return s;
}

std::string plan_with_arg(const std::string& arg)
{
    return R"({"params": {"BM": [128, 256]}, "launches": [{"kernel": "k", "grid": [1], "block": [128], "args": [)" +
           arg + R"(, "C", "M", "N", "K"]}]})";
}

ResolvedArg resolve_first(const std::string& arg, const Shape& at, ParamPoint point = {{"BM", 128}})
{
    Plan plan = parse_plan(Json::parse(plan_with_arg(arg)), "plan");
    validate_plan(hgemm(), plan, {"k"});
    return resolve_plan(hgemm(), plan, at, point).launches.at(0).args.at(0);
}

std::string error_of(const std::string& arg, const Shape& at = shape(4096, 4096, 4096))
{
    try {
        resolve_first(arg, at);
    } catch (const PlanError& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST_CASE("a tensor map resolves to the tensor's extents, strides and box, innermost first", "[core][plan]")
{
    ResolvedArg arg = resolve_first(R"({"tensor_map": "A", "box": ["BM", 64], "swizzle": 128})", shape(4096, 2048, 1024),
                                    {{"BM", 256}});
    CHECK(arg.kind == ResolvedArg::Kind::tensor_map);
    CHECK(arg.name == "A");
    CHECK(arg.dtype == DType::bf16);
    CHECK(arg.map_dims == std::vector<uint64_t>{1024, 4096});  // K, then M
    CHECK(arg.map_box == std::vector<uint32_t>{64, 256});      // 64 along K, BM rows
    CHECK(arg.map_strides == std::vector<uint64_t>{1024 * 2}); // bytes between rows
    CHECK(arg.map_swizzle == 128);
}

TEST_CASE("a tensor map without swizzle defaults to none", "[core][plan]")
{
    ResolvedArg arg = resolve_first(R"({"tensor_map": "A", "box": [16, 32]})", shape(64, 64, 64));
    CHECK(arg.map_swizzle == 0);
    CHECK(arg.map_box == std::vector<uint32_t>{32, 16});
}

TEST_CASE("tensor map syntax errors name the field", "[core][plan]")
{
    auto parse_error = [](const std::string& arg) {
        try {
            parse_plan(Json::parse(plan_with_arg(arg)), "plan");
        } catch (const PlanError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK_THAT(parse_error(R"({"tensor_map": "A", "box": [64, 64], "swizzle": 96})"),
               Catch::Contains("swizzle") && Catch::Contains("0, 32, 64 or 128"));
    CHECK_THAT(parse_error(R"({"tensor_map": "A", "box": []})"), Catch::Contains("1 to 5 box extents"));
    CHECK_THAT(parse_error(R"({"tensor_map": "A", "box": [64, 64], "stride": 2})"), Catch::Contains("stride"));
    CHECK_THAT(parse_error(R"({"tensor_map": "A"})"), Catch::Contains("box"));
}

TEST_CASE("validation refuses tensor maps of non-tensors, wrong ranks and unknown names", "[core][plan]")
{
    CHECK_THAT(error_of(R"({"tensor_map": "M", "box": [64, 64]})"), Catch::Contains("must name a tensor argument"));
    CHECK_THAT(error_of(R"({"tensor_map": "Q", "box": [64, 64]})"), Catch::Contains("must name a tensor argument"));
    CHECK_THAT(error_of(R"({"tensor_map": "A", "box": [64]})"),
               Catch::Contains("1 box extents") && Catch::Contains("2 dimensions"));
    CHECK_THAT(error_of(R"({"tensor_map": "A", "box": ["BX", 64]})"), Catch::Contains("BX"));
}

TEST_CASE("resolution refuses boxes the TMA encoder would refuse", "[core][plan]")
{
    CHECK_THAT(error_of(R"({"tensor_map": "A", "box": [512, 64]})"), Catch::Contains("box[0] = 512, outside 1..256"));
    CHECK_THAT(error_of(R"({"tensor_map": "A", "box": [128, 4]})"),
               Catch::Contains("innermost box is 8 bytes") && Catch::Contains("multiple of 16"));
    CHECK_THAT(error_of(R"({"tensor_map": "A", "box": [128, 128], "swizzle": 128})"),
               Catch::Contains("256 bytes, over the 128-byte swizzle"));
    CHECK(error_of(R"({"tensor_map": "A", "box": [128, 64], "swizzle": 128})").empty());
}
