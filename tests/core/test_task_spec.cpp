// Task-spec validation: every class of mistake gets an error naming the file, the JSON path and
// what was expected. Most cases mutate the bundled softmax spec; a few use fixture files.
#include "kf_catch.hpp"

#include <functional>

#include "core/task.hpp"
#include "test_support.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

using namespace kforge;

namespace {

const std::filesystem::path k_tasks = test::source_dir() / "tasks";

Json softmax_spec() { return Json::parse(read_file(k_tasks / "softmax_f32.json")); }

// Applies `mutate` to the softmax spec and returns the load error ("" when it loads).
std::string error_after(const std::function<void(Json&)>& mutate)
{
    Json spec = softmax_spec();
    mutate(spec);
    try {
        parse_task(spec.dump(2), "tasks/softmax.json", k_tasks);
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::bad_input);
        return e.what();
    }
    return "";
}

std::string load_error(const std::filesystem::path& path)
{
    try {
        load_task(path);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST_CASE("the bundled softmax spec loads with its shapes and reference", "[core][task]")
{
    Task task = load_task(k_tasks / "softmax_f32.json");
    CHECK(task.name == "softmax_f32");
    CHECK(task.tests.size() >= 4);
    CHECK(task.bench.size() == 3);
    CHECK(task.held_out.size() == 1);
    CHECK(task.reference.plan.launches.at(0).kernel == "softmax_ref");
    CHECK(task.spec_hash.size() == 32);
    CHECK(task.tests.at(1).label == "M=3,N=1000");
    CHECK(error_after([](Json&) {}) == "");
}

TEST_CASE("truncated JSON is reported with its position", "[core][task]")
{
    CHECK_THAT(load_error(test::fixtures_dir() / "specs" / "truncated.json"),
               Catch::Contains("truncated.json: invalid JSON") && Catch::Contains("line"));
}

TEST_CASE("wrong types name the field and what was found", "[core][task]")
{
    CHECK_THAT(error_after([](Json& s) { s["args"][1]["shape"] = "M,N"; }),
               Catch::Equals("tasks/softmax.json: args[1].shape: expected an array, found a string (\"M,N\")"));
    CHECK_THAT(error_after([](Json& s) { s["shapes"]["tests"][0]["M"] = "one"; }),
               Catch::Contains("shapes.tests[0].M: expected an integer"));
    CHECK_THAT(error_after([](Json& s) { s["args"][0]["dtype"] = "float32"; }),
               Catch::Contains("args[0].dtype: unknown dtype 'float32'") && Catch::Contains("f32"));
    CHECK_THAT(error_after([](Json& s) { s["schema"] = "kforge.task/2"; }),
               Catch::Contains("schema: expected \"kforge.task/1\""));
}

TEST_CASE("unknown fields are refused with a suggestion", "[core][task]")
{
    CHECK_THAT(error_after([](Json& s) { s["args"][0]["shpae"] = Json::array({"M"}); }),
               Catch::Contains("args[0]: unknown field 'shpae' (did you mean 'shape'?)"));
    CHECK_THAT(error_after([](Json& s) { s["roofline"]["flop"] = "1"; }),
               Catch::Contains("roofline: unknown field 'flop'"));
    CHECK_THAT(error_after([](Json& s) { s["tolerance"] = 1; }), Catch::Contains("(top level): unknown field 'tolerance'"));
}

TEST_CASE("unknown symbols are named with the known ones", "[core][task]")
{
    CHECK_THAT(error_after([](Json& s) { s["args"][1]["shape"][1] = "K"; }),
               Catch::Equals("tasks/softmax.json: args[1].shape[1]: unknown symbol 'K' (known: M, N)"));
    CHECK_THAT(error_after([](Json& s) { s["shapes"]["bench"][0]["K"] = 3; }),
               Catch::Contains("shapes.bench[0].K: unknown symbol 'K'"));
    CHECK_THAT(error_after([](Json& s) { s["roofline"]["bytes"] = "8 * M * NN"; }),
               Catch::Contains("roofline.bytes: unknown symbol 'NN'") && Catch::Contains("did you mean 'N'"));
}

TEST_CASE("cyclic derived symbols are refused naming the cycle", "[core][task]")
{
    CHECK_THAT(load_error(test::fixtures_dir() / "specs" / "cyclic_symbols.json"),
               Catch::Contains("cycle") && Catch::Contains("A -> B -> A"));
}

TEST_CASE("negative and zero sizes are refused", "[core][task]")
{
    CHECK_THAT(error_after([](Json& s) { s["shapes"]["tests"][0]["M"] = 0; }),
               Catch::Contains("shapes.tests[0]: M=0 is below its minimum 1"));
    CHECK_THAT(error_after([](Json& s) { s["shapes"]["bench"][1]["N"] = -4; }),
               Catch::Contains("shapes.bench[1]: N=-4 is below its minimum 1"));
    CHECK_THAT(error_after([](Json& s) { s["symbols"]["N"]["min"] = 0; }),
               Catch::Contains("symbols.N.min: sizes must be at least 1"));
    CHECK_THAT(error_after([](Json& s) { s["args"][1]["shape"][1] = "N - 1"; }),
               Catch::Contains("shapes.tests[0]: dimension 1 of 'y' (N - 1) is 0"));
    CHECK_THAT(error_after([](Json& s) { s["symbols"]["N"]["multiple_of"] = 4; }),
               Catch::Contains("N=1 is not a multiple of 4"));
}

TEST_CASE("bad expressions quote their text", "[core][task]")
{
    CHECK_THAT(error_after([](Json& s) { s["roofline"]["flops"] = "5 * (M * N"; }),
               Catch::Contains("roofline.flops: expected ')' in '5 * (M * N'"));
    CHECK_THAT(error_after([](Json& s) { s["args"][1]["check"]["atol"] = "1e-8 + foo(M)"; }),
               Catch::Contains("args[1].check.atol: unknown function 'foo'"));
    CHECK_THAT(error_after([](Json& s) { s["constraints"] = Json::array({"N % 0 == 1"}); }),
               Catch::Contains("division by zero"));
    CHECK_THAT(error_after([](Json& s) { s["args"][1]["shape"][0] = "M * 1.5"; }),
               Catch::Contains("args[1].shape[0]: 'M * 1.5' must be an integer expression"));
}

TEST_CASE("constraints are checked on every shape", "[core][task]")
{
    CHECK_THAT(error_after([](Json& s) { s["constraints"] = Json::array({"N % 2 == 0"}); }),
               Catch::Contains("shapes.tests[0]: constraint 'N % 2 == 0' does not hold for M=1,N=1"));
}

TEST_CASE("structural mistakes in args are explained", "[core][task]")
{
    CHECK_THAT(error_after([](Json& s) { s["args"][1].erase("check"); }),
               Catch::Contains("args[1]: output 'y' needs a 'check'"));
    CHECK_THAT(error_after([](Json& s) { s["args"][0]["check"] = Json{{"metric", "exact"}}; }),
               Catch::Contains("args[0].check: an input tensor is not checked"));
    CHECK_THAT(error_after([](Json& s) { s["args"][3]["name"] = "M"; }),
               Catch::Contains("args[3].name: argument 'M' is declared twice"));
    CHECK_THAT(error_after([](Json& s) { s["args"][0]["gen"]["dist"] = "gaussian"; }),
               Catch::Contains("args[0].gen.dist: unknown distribution 'gaussian'"));
    CHECK_THAT(error_after([](Json& s) { s["args"][1]["intent"] = "output"; }),
               Catch::Contains("args[1].intent: expected in, out or inout"));
}

TEST_CASE("a reference whose plan is wrong is refused with the plan's problem", "[core][task]")
{
    test::TempDir dir;
    Json spec = softmax_spec();
    spec["seeds"] = Json::array(); // only the reference is copied into the temporary folder
    std::string ref = read_file(k_tasks / "softmax_f32" / "reference.cu");
    auto with_reference = [&](const std::string& source) {
        test::write_text(dir / "softmax_f32" / "reference.cu", source);
        try {
            parse_task(spec.dump(), "t.json", dir.path());
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK(with_reference(ref).empty());
    CHECK_THAT(with_reference(replace_all(ref, "\"softmax_ref\", \"grid\"", "\"softmax_reff\", \"grid\"")),
               Catch::Contains("reference: ") && Catch::Contains("no __global__ function 'softmax_reff'") &&
                   Catch::Contains("did you mean 'softmax_ref'"));
    CHECK_THAT(with_reference(replace_all(ref, "\"block\": [256, 1, 1]", "\"block\": [2048, 1, 1]")),
               Catch::Contains("block[0] = '2048' = 2048, outside 1..1024"));
    CHECK_THAT(with_reference(replace_all(ref, "\"args\": [\"x\", \"y\", \"M\", \"N\"]", "\"args\": [\"x\", \"z\", \"M\", \"N\"]")),
               Catch::Contains("args[1]: 'z' is not an argument"));
    CHECK_THAT(with_reference(replace_all(ref, "*/", "")), Catch::Contains("never closed"));
    CHECK_THAT(with_reference(replace_all(ref, "\"launches\"", "\"launchez\"")),
               Catch::Contains("unknown field 'launchez'"));
    CHECK_THAT(with_reference("extern \"C\" __global__ void softmax_ref() {}"),
               Catch::Contains("has no kforge:plan block") || Catch::Contains("no __global__"));
}
