// Library steps in plans (core/library_step.hpp, docs/library-steps.md): parsing, validation against a
// task, and resolution at a shape, where every operand's extent is checked against its allocation.
#include "kf_catch.hpp"

#include "core/plan.hpp"
#include "core/plan_check.hpp"
#include "core/task.hpp"
#include "test_support.hpp"

using namespace kforge;

namespace {

// C = A B, A [M, K], B [K, N], C [M, N], f32.
const Task& library_gemm_task()
{
    static Task task = load_task(test::source_dir() / "tasks" / "sgemm_f32.json");
    return task;
}

// x [batch, 3, height, width] -> out [batch, 16, height - 2, width - 2], f32, with a 3x3 weight.
const Task& library_conv_task()
{
    static Task task = parse_task(R"({
  "schema": "kforge.task/1", "name": "conv_test", "description": "test",
  "symbols": {"batch": {"min": 1}, "height": {"min": 3}, "width": {"min": 3},
              "oh": {"value": "height - 2"}, "ow": {"value": "width - 2"}},
  "args": [
    {"name": "x", "dtype": "f32", "shape": ["batch", "3", "height", "width"], "from": "input 0"},
    {"name": "conv_weight", "dtype": "f32", "shape": ["16", "3", "3", "3"], "from": "param conv.weight"},
    {"name": "out", "dtype": "f32", "shape": ["batch", "16", "oh", "ow"], "intent": "out",
     "from": "output 0", "check": {"atol": "1e-5", "rtol": "1e-5"}}],
  "reference": {"torch": "conv_relu_bias.py"},
  "shapes": {"tests": [{"batch": 2, "height": 9, "width": 7}], "bench": [{"batch": 8, "height": 32, "width": 32}]},
  "roofline": {"flops": "0", "bytes": "1"}
})",
                                  "conv test spec", test::fixtures_dir() / "torch");
    return task;
}

Plan library_plan(const std::string& json) { return parse_plan(Json::parse(json), "plan"); }

// The plan resolved at the task's first test shape, validated first as the evaluator does.
ResolvedPlan resolve_library_plan(const Task& task, const std::string& json, const std::vector<std::string>& kernels = {})
{
    Plan plan = library_plan(json);
    validate_plan(task, plan, kernels);
    return resolve_plan(task, plan, task.tests.front(), enumerate_param_points(plan, 64).front());
}

std::string library_plan_error(const Task& task, const std::string& json, const std::vector<std::string>& kernels = {})
{
    try {
        resolve_library_plan(task, json, kernels);
    } catch (const PlanError& e) {
        return e.what();
    }
    return "(accepted)";
}

} // namespace

TEST_CASE("a matmul step resolves to its numbers and operands, and reads as the product it computes", "[core][plan]")
{
    const Task& task = library_gemm_task(); // first test shape: M = N = K = 16
    ResolvedPlan plan = resolve_library_plan(task, R"({"launches": [{"library": "matmul", "a": "A", "b": "B", "d": "C",
                                                           "m": "M", "n": "N", "k": "K", "algo": 2}]})");
    REQUIRE(plan.launches.size() == 1);
    REQUIRE(plan.launches[0].library);
    const ResolvedLibraryStep& step = *plan.launches[0].library;
    CHECK(step.op == LibraryOp::matmul);
    CHECK(step.matmul.m == 16);
    CHECK(step.matmul.k == 16);
    CHECK(step.algo == 2);
    REQUIRE(step.operands.size() == 3);
    CHECK(step.operand("a")->name == "A");
    CHECK(step.operand("a")->used == 256);
    CHECK(step.operand("d")->written);
    CHECK_FALSE(step.operand("b")->written);
    CHECK(describe_library_step(step) == "matmul C[16x16] = A[16x16] @ B[16x16], algo 2");
    CHECK(launched_kernels(library_plan(R"({"launches": [{"library": "matmul", "a": "A", "b": "B", "d": "C",
                                         "m": "M", "n": "N", "k": "K"}]})"))
              .empty());
}

TEST_CASE("a library step beside kernels: the kernels are checked against the source, the step against the task",
          "[core][plan]")
{
    const Task& task = library_gemm_task();
    const std::string plan = R"plan({"scratch": [{"name": "t", "bytes": "4 * M * N"}],
        "launches": [{"library": "matmul", "a": "A", "b": "B", "d": "t", "m": "M", "n": "N", "k": "K"},
                     {"kernel": "relu_copy", "grid": ["ceil_div(M * N, 256)"], "block": [256],
                      "args": ["t", "C", {"value": "M * N"}]}]})plan";
    ResolvedPlan ok = resolve_library_plan(task, plan, {"relu_copy"});
    REQUIRE(ok.launches.size() == 2);
    CHECK(ok.launches[0].library);
    CHECK(ok.launches[0].library->operand("d")->scratch);
    CHECK(ok.launches[0].library->operand("d")->dtype == DType::f32); // a scratch operand takes A's type
    CHECK(ok.launches[1].kernel == "relu_copy");
    CHECK(launched_kernels(library_plan(plan)) == std::vector<std::string>{"relu_copy"});
    CHECK_THAT(library_plan_error(task, plan, {"other"}), Catch::Contains("no __global__ function 'relu_copy'"));
}

TEST_CASE("a library step that would read or write past an operand is a plan error naming it and both counts",
          "[core][plan]")
{
    const Task& task = library_gemm_task(); // M = N = K = 16
    auto step = [](const std::string& fields) {
        return R"({"scratch": [{"name": "bias", "bytes": "4 * N - 4"}, {"name": "big", "bytes": "4 * M * K * 2"},
                               {"name": "big_out", "bytes": "4 * M * N * 2"}],
                   "launches": [{"library": "matmul", )" +
               fields + "}]}";
    };
    CHECK_THAT(library_plan_error(task, step(R"("a": "A", "b": "B", "d": "C", "m": "M", "n": "N", "k": "K + 1")")),
               Catch::Contains("a 'A' would be read over 272 elements, but it holds 256"));
    CHECK_THAT(library_plan_error(task, step(R"("a": "A", "b": "B", "d": "C", "m": "M", "n": "N", "k": "K", "batch": 2)")),
               Catch::Contains("a 'A' would be read over 512 elements, but it holds 256"));
    // A batch of two against one shared B (stride 0), into a buffer that holds both outputs.
    CHECK(library_plan_error(task, step(R"("a": "big", "b": "B", "d": "big_out", "m": "M", "n": "N", "k": "K", "batch": 2,
                                   "stride_b": 0)")) == "(accepted)");
    CHECK_THAT(library_plan_error(task, step(R"("a": "big", "b": "B", "d": "big_out", "m": "M", "n": "N", "k": "K",
                                        "batch": 3, "stride_b": 0)")),
               Catch::Contains("a 'big' would be read over 768 elements, but it holds 512"));
    CHECK_THAT(library_plan_error(task, step(R"("a": "A", "b": "B", "d": "C", "bias": "bias", "m": "M", "n": "N", "k": "K")")),
               Catch::Contains("bias 'bias' would be read over 16 elements, but it holds 15"));
    CHECK_THAT(library_plan_error(task, step(R"("a": "A", "b": "B", "d": "C", "m": "M", "n": "N", "k": "K", "stride_a": -1)")),
               Catch::Contains("stride_a is -1"));
    CHECK_THAT(library_plan_error(task, step(R"("a": "A", "b": "B", "d": "C", "m": "M", "n": "N", "k": "0")")),
               Catch::Contains("k is 0"));
}

TEST_CASE("library steps refuse outputs that are inputs, aliases, unknown names, types and epilogues", "[core][plan]")
{
    const Task& task = library_gemm_task();
    auto step = [](const std::string& fields) {
        return R"({"scratch": [{"name": "s", "bytes": "4 * M * N"}, {"name": "ws", "bytes": 1024}],
                   "launches": [{"library": "matmul", )" +
               fields + "}]}";
    };
    const std::string mnk = R"("m": "M", "n": "N", "k": "K")";
    CHECK_THAT(library_plan_error(task, step(R"("a": "A", "b": "B", "d": "A", )" + mnk)),
               Catch::Contains("'A' is an input of the task, which is never written"));
    CHECK_THAT(library_plan_error(task, step(R"("a": "s", "b": "B", "d": "s", )" + mnk)),
               Catch::Contains("d and a are both 's'"));
    CHECK_THAT(library_plan_error(task, step(R"("a": "Aa", "b": "B", "d": "C", )" + mnk)),
               Catch::Contains("'Aa' is not a tensor argument or scratch buffer, did you mean 'A'?"));
    CHECK_THAT(library_plan_error(task, step(R"("a": "A", "b": "B", "d": "C", "workspace": "C", )" + mnk)),
               Catch::Contains("must be a scratch buffer"));
    CHECK_THAT(library_plan_error(task, step(R"("a": "s", "b": "B", "d": "C", "dtype": "bf16", )" + mnk)),
               Catch::Contains("a and b are bf16 and f32"));
    CHECK_THAT(library_plan_error(task, step(R"("a": "A", "b": "B", "d": "C", "epilogue": "gelu", )" + mnk)),
               Catch::Contains("expected none, relu or gelu_tanh"));
    CHECK_THAT(library_plan_error(task, step(R"("a": "A", "b": "B", "d": "C", "beta": 1, )" + mnk)),
               Catch::Contains("needs \"c\""));
    CHECK_THAT(library_plan_error(task, step(R"("a": "A", "b": "B", "d": "C", "m": "M", "n": "N", "k": "Q")")),
               Catch::Contains("unknown name 'Q'"));
    CHECK_THAT(library_plan_error(task, R"({"launches": [{"library": "fft", "x": "A"}]})"),
               Catch::Contains("expected matmul (cuBLASLt) or conv (cuDNN)"));
    CHECK_THAT(library_plan_error(task, step(R"("a": "A", "b": "B", "d": "C", "grid": [1], )" + mnk)),
               Catch::Contains("grid"));
    // A workspace names a scratch buffer and bounds the library's algorithms by its size.
    ResolvedPlan with_workspace = resolve_library_plan(task, step(R"("a": "A", "b": "B", "d": "C", "workspace": "ws", )" + mnk));
    CHECK(with_workspace.launches[0].library->workspace_bytes == 1024);
}

TEST_CASE("a conv step resolves its output size and checks every tensor's extent", "[core][plan]")
{
    const Task& task = library_conv_task(); // batch 2, height 9, width 7: out is 2 x 16 x 7 x 5
    const std::string conv = R"({"library": "conv", "x": "x", "w": "conv_weight", "y": "out", "n": "batch", "c": 3,
                                 "k": 16, "size": ["height", "width"], "kernel": 3)";
    ResolvedPlan plan = resolve_library_plan(task, R"({"launches": [)" + conv + "}]}");
    const ResolvedLibraryStep& step = *plan.launches[0].library;
    CHECK(step.conv.out[0] == 7);
    CHECK(step.conv.out[1] == 5);
    CHECK(step.operand("y")->used == 2 * 16 * 7 * 5);
    CHECK(step.operand("y")->used == step.operand("y")->available);
    CHECK(step.operand("w")->used == 16 * 3 * 3 * 3);
    CHECK(describe_library_step(step) ==
          "conv out[2x16x7x5] = conv2d(x[2x3x9x7], conv_weight[16x3x3x3], stride 1x1, padding 0x0, dilation 1x1), algo 0");
    // Padding 1 keeps the size: the output would overrun out's allocation.
    CHECK_THAT(library_plan_error(task, R"({"launches": [)" + conv + R"(, "padding": 1}]})"),
               Catch::Contains("y 'out' would be written over 2016 elements, but it holds 1120"));
    CHECK_THAT(library_plan_error(task, R"({"launches": [)" + conv + R"(, "groups": 2}]})"),
               Catch::Contains("groups = 2 must divide both c = 3 and k = 16"));
    CHECK_THAT(library_plan_error(task, R"({"launches": [)" + conv + R"(, "stride": [1, 1, 1]}]})"),
               Catch::Contains("expected 2 values"));
    CHECK_THAT(library_plan_error(task, R"({"launches": [)" + conv + R"(, "output_padding": 1}]})"),
               Catch::Contains("only a transposed conv has an output padding"));
}

TEST_CASE("a transposed conv's output size follows PyTorch's ConvTranspose formula", "[core][plan]")
{
    const Task& task = library_conv_task(); // x [2, 3, 9, 7]
    // Written into scratch: 3 -> 16 channels, kernel 3, stride 2, padding 1, output padding 1:
    // (9 - 1) * 2 - 2 + 2 + 1 + 1 = 18 and (7 - 1) * 2 - 2 + 2 + 1 + 1 = 14.
    ResolvedPlan plan = resolve_library_plan(task, R"({"scratch": [{"name": "up", "bytes": "4 * batch * 16 * 18 * 14"},
                                                        {"name": "wt", "bytes": "4 * 3 * 16 * 9"}],
        "launches": [{"library": "conv", "x": "x", "w": "wt", "y": "up", "n": "batch", "c": 3, "k": 16,
                      "size": ["height", "width"], "kernel": 3, "stride": 2, "padding": 1, "output_padding": 1,
                      "transposed": true}]})");
    const ResolvedLibraryStep& step = *plan.launches[0].library;
    CHECK(step.conv.out[0] == 18);
    CHECK(step.conv.out[1] == 14);
    CHECK(step.operand("w")->used == 3 * 16 * 9);
    CHECK_THAT(describe_library_step(step), Catch::StartsWith("conv up[2x16x18x14] = conv2d_transpose(x[2x3x9x7], "
                                                             "wt[3x16x3x3], stride 2x2, padding 1x1"));
}

TEST_CASE("a transposed conv whose output size overflows is a plan error naming the dimension, not a wrapped size",
          "[core][plan][hostile]")
{
    const Task& task = library_conv_task(); // x [2, 3, 9, 7]
    // Height: (9 - 1) * 2^61 is 2^64, which wraps to 0, and 0 + 5 = 5 rows would fit the scratch
    // below; width: (7 - 1) * 1 + 5 = 11.
    const std::string plan = R"({"scratch": [{"name": "up", "bytes": "4 * batch * 16 * 5 * 11"},
                                             {"name": "wt", "bytes": "4 * 3 * 16 * 25"}],
        "launches": [{"library": "conv", "x": "x", "w": "wt", "y": "up", "n": "batch", "c": 3, "k": 16,
                      "size": ["height", "width"], "kernel": 5, "stride": [2305843009213693952, 1],
                      "transposed": true}]})";
    std::string error = library_plan_error(task, plan);
    CHECK_THAT(error, Catch::Contains("launches[0]") && Catch::Contains("dimension 0: the output size") &&
                          Catch::Contains("overflows 64 bits") && Catch::Contains("stride 2305843009213693952"));
    // The same step with a stride that fits: 8 * 2 + 5 = 21 rows, which the scratch does not hold.
    std::string fitting = plan;
    fitting.replace(fitting.find("2305843009213693952"), 19, "2");
    CHECK_THAT(library_plan_error(task, fitting), Catch::Contains("y 'up' would be written over 7392 elements"));
    // A forward conv's padding near 2^62: the padded size overflows, named as such.
    const std::string forward = R"({"launches": [{"library": "conv", "x": "x", "w": "conv_weight", "y": "out",
        "n": "batch", "c": 3, "k": 16, "size": ["height", "width"], "kernel": 3,
        "padding": [4611686018427387904, 0]}]})";
    CHECK_THAT(library_plan_error(task, forward),
               Catch::Contains("dimension 0: the output size") && Catch::Contains("overflows 64 bits"));
}

TEST_CASE("a matmul step past cuBLASLt's sizes or with overlapping batch outputs is a plan error naming the field",
          "[core][plan][hostile]")
{
    const Task& task = library_gemm_task(); // M = N = K = 16
    auto step = [](const std::string& fields) {
        return R"({"scratch": [{"name": "big_out", "bytes": "4 * M * N * 2"}],
                   "launches": [{"library": "matmul", "a": "A", "b": "B", )" +
               fields + "}]}";
    };
    // 2^62 products of one shared A and B into one shared C: every extent is 256 elements.
    CHECK_THAT(library_plan_error(task, step(R"("d": "C", "m": "M", "n": "N", "k": "K", "batch": 4611686018427387904,
                                                "stride_a": 0, "stride_b": 0, "stride_c": 0, "stride_d": 0)")),
               Catch::Contains("batch is 4611686018427387904, past 2147483647"));
    CHECK_THAT(library_plan_error(task, step(R"("d": "C", "m": "M", "n": "N", "k": "2147483648", "stride_a": 0)")),
               Catch::Contains("k is 2147483648, past 2147483647"));
    // Two batch indices written over one output matrix.
    CHECK_THAT(library_plan_error(task, step(R"("d": "big_out", "m": "M", "n": "N", "k": "K", "batch": 2,
                                                "stride_a": 0, "stride_b": 0, "stride_d": 128)")),
               Catch::Contains("stride_d is 128 with batch 2") && Catch::Contains("256 elements each) would overlap"));
    CHECK(library_plan_error(task, step(R"("d": "big_out", "m": "M", "n": "N", "k": "K", "batch": 2,
                                          "stride_a": 0, "stride_b": 0)")) == "(accepted)");
}
