// Specs whose reference is a PyTorch program (docs/torch-tasks.md): what they declare loads, and
// each way of getting the program's arguments wrong is an error naming the field.
#include "kf_catch.hpp"

#include <functional>

#include "core/task.hpp"
#include "test_support.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

using namespace kforge;

namespace {

const std::filesystem::path k_program_folder = test::fixtures_dir() / "torch" / "scale_rows";

Json program_spec() { return Json::parse(read_file(k_program_folder / "spec.json")); }

std::string program_error_after(const std::function<void(Json&)>& mutate)
{
    Json spec = program_spec();
    mutate(spec);
    try {
        parse_task(spec.dump(2), "scale_rows.json", k_program_folder);
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::bad_input);
        return e.what();
    }
    return "";
}

} // namespace

TEST_CASE("a spec whose reference is a PyTorch program loads with the program and its slots", "[core][task]")
{
    Task task = load_task(k_program_folder / "spec.json");
    CHECK(task.is_torch());
    CHECK(task.reference.path.filename() == "problem.py");
    CHECK_THAT(task.reference.source, Catch::Contains("class Model(nn.Module)"));
    CHECK(task.reference.plan.launches.empty());
    CHECK(task.find_arg("x")->from.text() == "input 0");
    CHECK(task.find_arg("scale")->from.text() == "param scale");
    CHECK(task.find_arg("out")->from.text() == "output 0");
    REQUIRE(task.bench.size() == 1);
    REQUIRE(task.bench[0].flops);
    CHECK(*task.bench[0].flops == 8000);
    CHECK_FALSE(task.tests[0].flops);
    CHECK(spec_reference_kind(task.spec_text) == ReferenceKind::torch);
    CHECK(spec_reference_kind(read_file(test::source_dir() / "tasks" / "softmax_f32.json")) == ReferenceKind::cuda);
    CHECK(baseline_label(ReferenceKind::torch, "reference") == "torch eager");
    CHECK(baseline_label(ReferenceKind::cuda, "reference") == "reference");
    CHECK(baseline_label(ReferenceKind::cuda, "torch_compile") == "torch.compile");
    // The program is part of the task's identity and of its snapshot.
    Json files = snapshot_task_files(task);
    CHECK(files.contains("problem.py"));
    CHECK(program_error_after([](Json&) {}) == "");
}

TEST_CASE("the program's arguments are checked: each mistake names the field", "[core][task]")
{
    CHECK_THAT(program_error_after([](Json& s) { s["args"][0].erase("from"); }),
               Catch::Contains("args[0]") && Catch::Contains("needs 'from'"));
    CHECK_THAT(program_error_after([](Json& s) { s["args"][0]["from"] = "inputs 0"; }),
               Catch::Contains("args[0].from") && Catch::Contains("\"input N\""));
    CHECK_THAT(program_error_after([](Json& s) { s["args"][0]["gen"] = Json{{"dist", "normal"}}; }),
               Catch::Contains("args[0].gen") && Catch::Contains("the PyTorch program makes this tensor"));
    CHECK_THAT(program_error_after([](Json& s) { s["args"][2]["from"] = "input 1"; }),
               Catch::Contains("made by the program before the forward"));
    CHECK_THAT(program_error_after([](Json& s) { s["args"][1]["from"] = "input 0"; }),
               Catch::Contains("'input 0' is named twice"));
    CHECK_THAT(program_error_after([](Json& s) { s["args"][0]["from"] = "input 1"; }),
               Catch::Contains("no argument is the program's input 0"));
    CHECK_THAT(program_error_after([](Json& s) { s["args"].push_back({{"name", "k"}, {"dtype", "i32"}, {"value", 3}, {"from", "param w"}}); }),
               Catch::Contains("a scalar can only be one of forward()'s inputs"));
    CHECK_THAT(program_error_after([](Json& s) { s["reference"] = Json{{"torch", "absent.py"}}; }),
               Catch::Contains("reference.torch") && Catch::Contains("no such file"));
    CHECK_THAT(program_error_after([](Json& s) { s["reference"] = Json{{"python", "problem.py"}}; }),
               Catch::Contains("unknown field 'python'"));
    CHECK_THAT(program_error_after([](Json& s) { s["shapes"]["bench"][0]["flops"] = -1; }),
               Catch::Contains("shapes.bench[0].flops") && Catch::Contains("FLOP count"));
}

TEST_CASE("'from' belongs to PyTorch-program tasks only", "[core][task]")
{
    Json spec = Json::parse(read_file(test::source_dir() / "tasks" / "softmax_f32.json"));
    spec["args"][0]["from"] = "input 0";
    try {
        parse_task(spec.dump(), "softmax.json", test::source_dir() / "tasks");
        FAIL("a CUDA task took 'from'");
    } catch (const Error& e) {
        CHECK_THAT(std::string(e.what()), Catch::Contains("args[0].from") && Catch::Contains("a CUDA kernel"));
    }
}

TEST_CASE("a program's 0-dim tensor is held as shape [1] and marked zero_dim; elsewhere the mark is refused",
          "[core][task]")
{
    Json spec = program_spec();
    spec["args"][2]["shape"] = Json::array({1});
    spec["args"][2]["zero_dim"] = true;
    Task task = parse_task(spec.dump(), "scale_rows.json", k_program_folder);
    CHECK(task.find_arg("out")->zero_dim);
    CHECK_FALSE(task.find_arg("x")->zero_dim);

    CHECK_THAT(program_error_after([](Json& s) { s["args"][2]["zero_dim"] = true; }),
               Catch::Contains("args[2].zero_dim") && Catch::Contains("its shape must be [1]"));
    CHECK_THAT(program_error_after([](Json& s) { s["args"][2]["zero_dim"] = "yes"; }),
               Catch::Contains("args[2].zero_dim"));
    Json cuda = Json::parse(read_file(test::source_dir() / "tasks" / "softmax_f32.json"));
    cuda["args"][0]["zero_dim"] = true;
    try {
        parse_task(cuda.dump(), "softmax.json", test::source_dir() / "tasks");
        FAIL("a CUDA task took 'zero_dim'");
    } catch (const Error& e) {
        CHECK_THAT(std::string(e.what()), Catch::Contains("args[0].zero_dim") && Catch::Contains("a CUDA kernel"));
    }
}
