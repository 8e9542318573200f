// The CSR generators of a task spec (`csr` on row pointers, `csr_cols` on column indices): what
// parses, what the sizes are at a shape, and one test per way a spec can get them wrong.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core/task.hpp"
#include "test_support.hpp"
#include "util/error.hpp"

using kforge::Task;
using Json = nlohmann::json;

namespace {

// A small SpMV-like spec; tests mutate it before parsing.
Json csr_spec()
{
    return Json::parse(R"({
      "schema": "kforge.task/1", "name": "csr_probe", "description": "CSR generator probe",
      "symbols": {"R": {}, "C": {}, "NNZ": {}},
      "args": [
        {"name": "row_ptr", "dtype": "i32", "shape": ["R + 1"], "gen": {"dist": "csr", "cols": "C"}},
        {"name": "col_idx", "dtype": "i32", "shape": ["NNZ"], "gen": {"dist": "csr_cols", "of": "row_ptr"}},
        {"name": "vals", "dtype": "f32", "shape": ["NNZ"]},
        {"name": "y", "dtype": "f32", "shape": ["R"], "intent": "out", "check": {"atol": 1e-5, "rtol": 1e-5}},
        {"name": "R", "dtype": "i32", "value": "R"}
      ],
      "reference": "ref.cu",
      "shapes": {"tests": [{"R": 10, "C": 20, "NNZ": 30}], "bench": [{"R": 1000, "C": 1000, "NNZ": 16000}]},
      "roofline": {"flops": "2 * NNZ", "bytes": "8 * NNZ"}
    })");
}

Task parse_spec(const Json& spec)
{
    static kforge::test::TempDir dir;
    kforge::test::write_text(dir / "ref.cu", R"(/* kforge:plan
{ "launches": [{"kernel": "k", "grid": [1], "block": [32], "args": ["row_ptr", "col_idx", "vals", "y", "R"]}] }
*/
extern "C" __global__ void k(const int* rp, const int* ci, const float* v, float* y, int R) {}
)");
    return kforge::parse_task(spec.dump(2), "csr.json", dir.path());
}

// The error message of parsing `spec`, which must fail with bad input.
std::string parse_error(const Json& spec)
{
    try {
        parse_spec(spec);
    } catch (const kforge::Error& e) {
        CHECK(e.kind() == kforge::ErrorKind::bad_input);
        return e.what();
    }
    FAIL("the spec was accepted");
    return "";
}

} // namespace

TEST_CASE("a csr generator parses with its defaults: sigma 0, band = cols, group 4096", "[task][csr]")
{
    Task task = parse_spec(csr_spec());
    const auto& gen = task.args[0].gen;
    REQUIRE(gen.dist == kforge::Generator::Dist::csr);
    REQUIRE(gen.csr);
    CHECK(gen.csr->cols.text() == "C");
    CHECK(gen.csr->band.text() == "C");
    CHECK(gen.csr->sigma.text() == "0");
    CHECK(gen.csr->group.text() == "4096");
    CHECK(task.args[1].gen.dist == kforge::Generator::Dist::csr_cols);
    CHECK(task.args[1].gen.of == "row_ptr");
    CHECK(kforge::dist_name(task.args[1].gen.dist) == "csr_cols");
}

TEST_CASE("csr sizes come from the shape: rows from the row pointers, nnz from the column tensor", "[task][csr]")
{
    Json spec = csr_spec();
    spec["args"][0]["gen"]["band"] = "C / 4";
    spec["args"][0]["gen"]["sigma"] = "1.5";
    Task task = parse_spec(spec);
    kforge::CsrSizes bench = kforge::csr_sizes(task, task.args[0], task.bench[0]);
    CHECK(bench.rows == 1000);
    CHECK(bench.cols == 1000);
    CHECK(bench.nnz == 16000);
    CHECK(bench.window == 250);
    CHECK(bench.sigma == 1.5);
    // G = max(1, min(4096, floor((W - 1) * R / NNZ))) = floor(249 * 1000 / 16000) = 15.
    CHECK(bench.group == 15);
    kforge::CsrSizes test = kforge::csr_sizes(task, task.args[0], task.tests[0]);
    CHECK(test.window == 5);
    CHECK(test.group == 1);   // floor(4 * 10 / 30) = 1
}

TEST_CASE("a csr group shrinks to fit the window and never below one row", "[task][csr]")
{
    Json spec = csr_spec();
    spec["args"][0]["gen"]["group"] = 8;
    Task task = parse_spec(spec);
    CHECK(kforge::csr_sizes(task, task.args[0], task.bench[0]).group == 8);   // fit = 999*1000/16000 = 62
    spec["shapes"]["bench"][0] = {{"R", 1000}, {"C", 16}, {"NNZ", 16000}};
    task = parse_spec(spec);
    CHECK(kforge::csr_sizes(task, task.args[0], task.bench[0]).group == 1);   // every row has exactly 16
}

TEST_CASE("an unknown distribution names the csr ones among the known", "[task][csr]")
{
    Json spec = csr_spec();
    spec["args"][2]["gen"] = {{"dist", "csr_values"}};
    std::string error = parse_error(spec);
    CHECK_THAT(error, Catch::Contains("args[2].gen.dist"));
    CHECK_THAT(error, Catch::Contains("csr, csr_cols"));
}

TEST_CASE("csr fields on another distribution are refused at their path", "[task][csr]")
{
    for (const char* key : {"cols", "sigma", "band", "group"}) {
        Json spec = csr_spec();
        spec["args"][2]["gen"] = {{"dist", "uniform"}, {key, "R"}};
        std::string error = parse_error(spec);
        CHECK_THAT(error, Catch::Contains(std::string("args[2].gen.") + key));
        CHECK_THAT(error, Catch::Contains("applies to the 'csr' distribution only"));
    }
    Json spec = csr_spec();
    spec["args"][0]["gen"]["of"] = "col_idx";
    CHECK_THAT(parse_error(spec), Catch::Contains("args[0].gen.of: 'of' applies to the 'csr_cols' distribution only"));
}

TEST_CASE("csr structures fill only i32 or i64 tensors", "[task][csr]")
{
    Json spec = csr_spec();
    spec["args"][0]["dtype"] = "f32";
    CHECK_THAT(parse_error(spec), Catch::Contains("args[0].gen.dist: 'csr' fills i32 or i64 tensors, found f32"));
    spec = csr_spec();
    spec["args"][1]["dtype"] = "u8";
    CHECK_THAT(parse_error(spec), Catch::Contains("'csr_cols' fills i32 or i64 tensors, found u8"));
    spec = csr_spec();
    spec["args"][0]["dtype"] = "i64";
    spec["args"][1]["dtype"] = "i64";
    CHECK_NOTHROW(parse_spec(spec));
}

TEST_CASE("a csr structure takes no plants", "[task][csr]")
{
    Json spec = csr_spec();
    spec["args"][1]["gen"]["plants"] = Json::parse(R"([{"at": "0", "value": 3}])");
    CHECK_THAT(parse_error(spec), Catch::Contains("args[1].gen.plants: a CSR structure takes no plants"));
}

TEST_CASE("a csr generator needs its column count", "[task][csr]")
{
    Json spec = csr_spec();
    spec["args"][0]["gen"].erase("cols");
    CHECK_THAT(parse_error(spec), Catch::Contains("args[0].gen"));
    CHECK_THAT(parse_error(spec), Catch::Contains("cols"));
}

TEST_CASE("csr expressions must use known symbols and integers where sizes are meant", "[task][csr]")
{
    Json spec = csr_spec();
    spec["args"][0]["gen"]["sigma"] = "SKEW / 10";
    CHECK_THAT(parse_error(spec), Catch::Contains("args[0].gen.sigma: unknown symbol 'SKEW'"));
    spec = csr_spec();
    spec["args"][0]["gen"]["band"] = "C / 2.5";
    CHECK_THAT(parse_error(spec), Catch::Contains("args[0].gen.band: 'C / 2.5' must be an integer expression"));
}

TEST_CASE("row pointers without exactly one column tensor are refused", "[task][csr]")
{
    Json spec = csr_spec();
    spec["args"][1]["gen"] = {{"dist", "randint"}, {"low", 0}, {"high", 5}};
    CHECK_THAT(parse_error(spec), Catch::Contains("args[0].gen: the CSR row pointers 'row_ptr' need exactly one "
                                                  "column-index tensor"));
    spec = csr_spec();
    spec["args"][2] = {{"name", "cols2"}, {"dtype", "i32"}, {"shape", {"NNZ"}},
                       {"gen", {{"dist", "csr_cols"}, {"of", "row_ptr"}}}};
    CHECK_THAT(parse_error(spec), Catch::Contains("found 2"));
}

TEST_CASE("a csr_cols tensor must name csr row pointers", "[task][csr]")
{
    Json spec = csr_spec();
    spec["args"][1]["gen"]["of"] = "vals";
    CHECK_THAT(parse_error(spec), Catch::Contains("args[1].gen.of: 'vals' is not an input tensor with {\"dist\": \"csr\"}"));
    spec["args"][1]["gen"]["of"] = "nowhere";
    CHECK_THAT(parse_error(spec), Catch::Contains("'nowhere' is not an input tensor"));
}

TEST_CASE("csr tensors are one-dimensional inputs", "[task][csr]")
{
    Json spec = csr_spec();
    spec["args"][1]["shape"] = {"NNZ", 1};
    CHECK_THAT(parse_error(spec), Catch::Contains("args[1].shape: a CSR column-index tensor is one-dimensional, found 2"));
    spec = csr_spec();
    spec["args"][0]["intent"] = "inout";
    spec["args"][0]["check"] = {{"metric", "exact"}};
    CHECK_THAT(parse_error(spec), Catch::Contains("args[0].intent: 'row_ptr' is generated as a CSR structure; its "
                                                  "intent must be 'in'"));
}

TEST_CASE("a shape whose densest row cannot fit its column window is refused with the shape's path", "[task][csr]")
{
    Json spec = csr_spec();
    spec["shapes"]["tests"].push_back({{"R", 4}, {"C", 3}, {"NNZ", 13}});
    std::string error = parse_error(spec);
    CHECK_THAT(error, Catch::Contains("shapes.tests[1]"));
    CHECK_THAT(error, Catch::Contains("13 nonzeros over 4 rows need rows of 4 entries, but a row's window holds only "
                                      "min(band, cols) = 3 columns"));
    spec = csr_spec();
    spec["args"][0]["gen"]["band"] = 2;
    CHECK_THAT(parse_error(spec), Catch::Contains("window holds only min(band, cols) = 2 columns"));
}

TEST_CASE("csr sigma, band and group are range-checked per shape", "[task][csr]")
{
    Json spec = csr_spec();
    spec["args"][0]["gen"]["sigma"] = "1 - R / 100";   // negative at R = 1000
    CHECK_THAT(parse_error(spec), Catch::Contains("shapes.bench[0]: the CSR matrix of 'row_ptr' at C=1000,NNZ=16000,R=1000: "
                                                  "sigma is -9, outside 0..8"));
    spec = csr_spec();
    spec["args"][0]["gen"]["group"] = 100000;
    CHECK_THAT(parse_error(spec), Catch::Contains("group is 100000, outside 1..65536"));
    spec = csr_spec();
    spec["args"][0]["gen"]["band"] = "C - 20";   // 0 at the test shape
    CHECK_THAT(parse_error(spec), Catch::Contains("shapes.tests[0]"));
    CHECK_THAT(parse_error(spec), Catch::Contains("cols (20) and band (0) must be at least 1"));
}

TEST_CASE("csr sizes must fit the index types", "[task][csr]")
{
    Json spec = csr_spec();
    spec["shapes"]["bench"][0] = {{"R", 2000000000}, {"C", 2000}, {"NNZ", 3000000000LL}};
    CHECK_THAT(parse_error(spec), Catch::Contains("3000000000 nonzeros do not fit the i32 row pointers"));
    spec["args"][0]["dtype"] = "i64";
    CHECK_NOTHROW(parse_spec(spec));
    spec = csr_spec();
    spec["args"][0]["gen"]["cols"] = "C * 1000000000";
    spec["args"][0]["gen"]["band"] = "C";
    CHECK_THAT(parse_error(spec), Catch::Contains("column indices up to 19999999999 do not fit i32 'col_idx'"));
}
