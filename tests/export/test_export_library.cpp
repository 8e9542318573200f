// `kforge export --launcher` / `--torch` of plans with library steps (docs/library-steps.md): the
// generated plan arithmetic resolves each step to the numbers kforge resolves (or refuses what it
// refuses) on many sizes, the launcher calls cuBLASLt (and cuDNN only for conv steps) and nvcc
// compiles it, and the PyTorch loader links what the steps need. Running the exported steps needs a
// GPU: scripts/gpu/checks/export.sh.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "archive/archive.hpp"
#include "core/plan_check.hpp"
#include "core/source.hpp"
#include "export/export_harness.hpp"
#include "export/host_code.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

// A task from `args` (JSON) over symbols `symbols`, with a reference that only needs to parse.
Task library_export_task(const TempDir& dir, const std::string& name, const std::string& symbols,
                         const std::string& args, const std::string& tests, const std::string& bench)
{
    write_text(dir / "ref.cu", R"(/* kforge:plan
{ "launches": [{"kernel": "ref", "grid": [1], "block": [1], "args": []}] }
*/
extern "C" __global__ void ref() {}
)");
    std::string spec = fmt::format(R"json({{
      "schema": "kforge.task/1", "name": "{}", "description": "a library step export test",
      "symbols": {}, "args": {}, "reference": "ref.cu",
      "shapes": {{"tests": {}, "bench": {}}},
      "roofline": {{"flops": "1", "bytes": "1"}}
    }})json",
                                   name, symbols, args, tests, bench);
    write_text(dir / (name + ".json"), spec);
    return load_task(dir / (name + ".json"));
}

// y = 2 * relu(x @ w^T + bias): a cuBLASLt step with a bias and relu, then a kernel.
Task linear_task(const TempDir& dir)
{
    return library_export_task(
        dir, "linear_relu", R"({"M": {"min": 1}, "N": {"min": 1}, "K": {"min": 1}})",
        R"([{"name": "x", "dtype": "f32", "shape": ["M", "K"]},
            {"name": "w", "dtype": "f32", "shape": ["N", "K"]},
            {"name": "bias", "dtype": "f32", "shape": ["N"]},
            {"name": "y", "dtype": "f32", "shape": ["M", "N"], "intent": "out", "check": {"atol": 1e-4, "rtol": 1e-4}}])",
        R"([{"M": 3, "N": 5, "K": 7}, {"M": 64, "N": 32, "K": 16}])", R"([{"M": 4096, "N": 1024, "K": 512}])");
}

const char* const k_linear_plan = R"json({
  "params": {"ALGO": [0, 1, 2]},
  "scratch": [{"name": "ws", "bytes": "1048576"}],
  "launches": [
    {"library": "matmul", "a": "x", "b": "w", "d": "y", "bias": "bias", "workspace": "ws",
     "m": "M", "n": "N", "k": "K", "transpose_b": true, "epilogue": "relu", "algo": "ALGO"},
    {"kernel": "twice", "grid": ["ceil_div(M * N, 256)"], "block": [256],
     "args": ["y", {"value": "M * N", "dtype": "i64"}]}] })json";

const char* const k_linear_kernels = R"cu(
extern "C" __global__ void twice(float* y, int64_t n)
{
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n)
        y[i] *= 2.0f;
}
)cu";

// out[b] = 0.5 * a[b] @ w with one w for every batch index (stride_b 0), bf16 in, f32 out.
Task batched_task(const TempDir& dir)
{
    return library_export_task(
        dir, "shared_bmm", R"({"B": {"min": 1, "max": 64}, "M": {"min": 1}, "N": {"min": 8, "multiple_of": 8}, "K": {"min": 1}})",
        R"([{"name": "a", "dtype": "bf16", "shape": ["B", "M", "K"]},
            {"name": "w", "dtype": "bf16", "shape": ["K", "N"]},
            {"name": "out", "dtype": "f32", "shape": ["B", "M", "N"], "intent": "out", "check": {"atol": 1e-2, "rtol": 1e-2}}])",
        R"([{"B": 2, "M": 3, "N": 8, "K": 5}, {"B": 7, "M": 33, "N": 64, "K": 17}])",
        R"([{"B": 16, "M": 512, "N": 512, "K": 256}])");
}

const char* const k_batched_plan = R"json({
  "launches": [
    {"library": "matmul", "a": "a", "b": "w", "d": "out", "m": "M", "n": "N", "k": "K", "batch": "B",
     "stride_a": "M * K", "stride_b": 0, "stride_d": "M * N", "alpha": 0.5}] })json";

// A 3x3 convolution, channels last, with 2 groups.
Task conv_task(const TempDir& dir)
{
    return library_export_task(
        dir, "conv3x3", R"({"N": {"min": 1}, "H": {"min": 3}, "W": {"min": 3}})",
        R"([{"name": "x", "dtype": "f32", "shape": ["N", "H", "W", 8]},
            {"name": "w", "dtype": "f32", "shape": [16, 4, 3, 3]},
            {"name": "y", "dtype": "f32", "shape": ["N", "H - 2", "W - 2", 16], "intent": "out", "check": {"atol": 1e-4, "rtol": 1e-4}}])",
        R"([{"N": 1, "H": 3, "W": 3}, {"N": 2, "H": 9, "W": 7}])", R"([{"N": 32, "H": 56, "W": 56}])");
}

const char* const k_conv_plan = R"json({
  "params": {"ALGO": [0, 1]},
  "launches": [
    {"library": "conv", "x": "x", "w": "w", "y": "y", "n": "N", "c": 8, "k": 16, "size": ["H", "W"],
     "kernel": [3, 3], "groups": 2, "layout": "nhwc", "algo": "ALGO"}] })json";

// ConvTranspose2d(4, 6, 3, stride 2, padding 1, output_padding 1): y is twice x's size.
Task transposed_task(const TempDir& dir)
{
    return library_export_task(
        dir, "deconv", R"({"N": {"min": 1}, "H": {"min": 1}, "W": {"min": 1}})",
        R"([{"name": "x", "dtype": "f32", "shape": ["N", 4, "H", "W"]},
            {"name": "w", "dtype": "f32", "shape": [4, 6, 3, 3]},
            {"name": "y", "dtype": "f32", "shape": ["N", 6, "2 * H", "2 * W"], "intent": "out", "check": {"atol": 1e-4, "rtol": 1e-4}}])",
        R"([{"N": 1, "H": 1, "W": 1}, {"N": 3, "H": 5, "W": 9}])", R"([{"N": 16, "H": 64, "W": 64}])");
}

const char* const k_transposed_plan = R"json({
  "scratch": [{"name": "ws", "bytes": "max(N * 1024, 4096)"}],
  "launches": [
    {"library": "conv", "x": "x", "w": "w", "y": "y", "n": "N", "c": 4, "k": 6, "size": ["H", "W"],
     "kernel": 3, "stride": 2, "padding": 1, "output_padding": 1, "transposed": true, "workspace": "ws"}] })json";

// `text` with every run of spaces and newlines made one space (the contract is wrapped).
std::string unwrapped_contract(const std::string& text)
{
    std::string out;
    for (char c : text)
        if ((c != ' ' && c != '\n') || (!out.empty() && out.back() != ' '))
            out += c == '\n' ? ' ' : c;
    return out;
}

// The plan's generated arithmetic against resolve_plan() on the test and bench shapes, hostile
// sizes and `extra` cases; then nvcc compiles the whole launcher beside `kernels`.
void check_library_export(const TempDir& dir, const Task& task, const char* plan_json, const std::string& kernels,
                          const std::vector<SizeValues>& extra)
{
    Plan plan = parse_plan(Json::parse(plan_json), "plan");
    validate_plan(task, plan, find_kernel_names(kernels));
    ParamPoint point = enumerate_param_points(plan, 1).front();
    LauncherSource source{task, plan, describe_launcher(task, plan), point};
    std::string defines;
    for (const auto& [name, value] : point)
        defines += fmt::format("#define {} {}\n", name, value);

    std::vector<SizeValues> cases = extra;
    for (const auto* list : {&task.tests, &task.bench})
        for (const auto& shape : *list)
            cases.push_back(sizes_of(source.signature, shape));
    for (auto& hostile : hostile_sizes(task, source.signature))
        cases.push_back(std::move(hostile));
    auto resolve_cu = dir / (task.name + "_resolve.cu");
    write_text(resolve_cu, defines + generate_resolve_code(source));
    auto answers = run_resolve_harness(resolve_cu, plan, source.signature, cases);
    compare_resolutions(task, plan, source.signature, point, cases, answers);
    // The harness printed every step it resolved: the comparison above covered the numbers.
    size_t steps = 0;
    for (const auto& answer : answers)
        steps += answer.find("step ") != std::string::npos;
    if (!answers.empty())
        CHECK(steps >= task.tests.size() + task.bench.size());

    auto launch_cu = dir / (task.name + "_launch.cu");
    write_text(launch_cu, defines + generate_resolve_code(source) +
                              "#include <cstdint>\n#include <cuda_bf16.h>\n" + kernels + generate_launcher_code(source));
    check_nvcc_compiles_file(launch_cu);
}

} // namespace

TEST_CASE("an exported matmul step with a bias and relu, then a kernel, resolves as kforge does and compiles",
          "[export][launcher][library][slow]")
{
    TempDir dir;
    Task task = linear_task(dir);
    check_library_export(dir, task, k_linear_plan, k_linear_kernels,
                         {{1, 1, 1}, {3, 1 << 20, 1 << 20}, {int64_t{1} << 31, 1, 1}, {1, 1, int64_t{1} << 40}});

    Plan plan = parse_plan(Json::parse(k_linear_plan), "plan");
    LauncherSource source{task, plan, describe_launcher(task, plan), {{"ALGO", 0}}};
    std::string code = generate_launcher_code(source);
    CHECK_THAT(code, Catch::Contains("#include <cublasLt.h>"));
    CHECK_THAT(code, !Catch::Contains("cudnn"));
    CHECK_THAT(code, Catch::Contains("{false, true, CUDA_R_32F, CUDA_R_32F, false, true, 1.0f, 0.0f, "
                                     "CUBLASLT_EPILOGUE_RELU_BIAS}"));
    CHECK_THAT(code, Catch::Contains("status = run_matmul(site, 0, launch, buffers, stream, \"launches[0] (matmul)\");"));
    CHECK_THAT(code, Catch::Contains("status = launch_kernel((const void*)::twice"));
    CHECK(library_link_flags(plan) == std::vector<std::string>{"-lcublasLt"});
    std::string resolve = generate_resolve_code(source);
    CHECK_THAT(resolve, Catch::Contains("int32_t site;      // the plan's launch it comes from: 0 = matmul "
                                        "(library step), 1 = twice"));
    CHECK_THAT(unwrapped_contract(launcher_contract(source)),
               Catch::Contains("Library steps: launches[0] cuBLASLt matmul.") &&
                   Catch::Contains("Link with -lcublasLt."));
}

TEST_CASE("an exported batched matmul with a shared weight resolves as kforge does and compiles",
          "[export][launcher][library][slow]")
{
    TempDir dir;
    Task task = batched_task(dir);
    check_library_export(dir, task, k_batched_plan, "", {{1, 1, 8, 1}, {64, 1 << 16, 1 << 16, 1 << 16}});
    Plan plan = parse_plan(Json::parse(k_batched_plan), "plan");
    std::string code = generate_launcher_code({task, plan, describe_launcher(task, plan)});
    CHECK_THAT(code, Catch::Contains("{false, false, CUDA_R_16BF, CUDA_R_32F, false, false, 0.5f, 0.0f, "
                                     "CUBLASLT_EPILOGUE_DEFAULT}"));
    // No kernel launches: the kernel launch helper is left out (nvcc would warn it is unused).
    CHECK_THAT(code, !Catch::Contains("launch_kernel("));
}

TEST_CASE("an exported conv step (channels last, groups) resolves as kforge does, and only it needs cuDNN",
          "[export][launcher][library][slow]")
{
    TempDir dir;
    Task task = conv_task(dir);
    check_library_export(dir, task, k_conv_plan, "", {{1, 3, 3}, {5, 4, 200}, {int64_t{1} << 40, 3, 3}});
    Plan plan = parse_plan(Json::parse(k_conv_plan), "plan");
    std::string code = generate_launcher_code({task, plan, describe_launcher(task, plan)});
    CHECK_THAT(code, Catch::Contains("#include <cudnn_graph.h>"));
    CHECK_THAT(code, !Catch::Contains("cublasLt"));
    CHECK_THAT(code, Catch::Contains("static const ConvSite site = {2, false, true, CUDNN_DATA_FLOAT};"));
    CHECK(library_link_flags(plan) == std::vector<std::string>{"-lcudnn"});
}

TEST_CASE("an exported transposed conv resolves as kforge does and compiles", "[export][launcher][library][slow]")
{
    TempDir dir;
    Task task = transposed_task(dir);
    check_library_export(dir, task, k_transposed_plan, "", {{2, 1, 100}, {1, int64_t{1} << 31, 1}});
    Plan plan = parse_plan(Json::parse(k_transposed_plan), "plan");
    std::string code = generate_launcher_code({task, plan, describe_launcher(task, plan)});
    CHECK_THAT(code, Catch::Contains("static const ConvSite site = {2, true, false, CUDNN_DATA_FLOAT};"));
}

TEST_CASE("kforge export of a library-step candidate writes the library calls and says what to link",
          "[e2e][export][library]")
{
    TempDir dir;
    Task task = linear_task(dir);
    auto archive_path = dir / "run.kforge";
    {
        Archive archive = Archive::create(archive_path, run_info_for(task));
        Candidate c;
        c.source = fmt::format("/* kforge:plan\n{}\n*/\n{}", k_linear_plan, k_linear_kernels);
        c.source_hash = normalized_source_hash(c.source);
        c.origin = Origin::seed;
        c.evaluation.verdict = {VerdictKind::correct, ""};
        c.evaluation.fitness = 1.5;
        c.evaluation.best_params = {{"ALGO", 1}};
        archive.insert_candidate(c);
    }
    auto cu = dir / "linear.cu";
    CommandResult launcher = run_kforge({"export", archive_path.string(), "--best", "--launcher", "-o", cu.string()});
    INFO(launcher.err);
    REQUIRE(launcher.exit_code == 0);
    CHECK_THAT(launcher.err, Catch::Contains("link with -lcublasLt"));
    std::string text = slurp_file(cu);
    CHECK_THAT(text, Catch::Contains("link with:    -lcublasLt"));
    CHECK_THAT(text, Catch::Contains("#define ALGO 1"));
    // The comment's resolved plan reads the step as the product it computes.
    CHECK_THAT(text, Catch::Contains("matmul y[4096x1024] = relu(x[4096x512] @ w[1024x512]^T + bias[1024]), algo 1, workspace ws"));
    CHECK_THAT(text, Catch::Contains("run_matmul(site, 0, launch, buffers, stream"));
    CHECK_THAT(slurp_file(dir / "linear.h"), Catch::Contains("Link with -lcublasLt."));

    auto torch_cu = dir / "linear_torch.cu";
    CommandResult torch = run_kforge({"export", archive_path.string(), "--best", "--torch", "-o", torch_cu.string()});
    INFO(torch.err);
    REQUIRE(torch.exit_code == 0);
    std::string op = slurp_file(torch_cu);
    CHECK_THAT(op, Catch::Contains("const at::Tensor kf_aligned_x = reinterpret_cast<uintptr_t>(x.data_ptr()) % 256 "
                                   "== 0 ? x : x.clone();"));
    CHECK_THAT(op, Catch::Contains("static_cast<const float*>(kf_aligned_w.data_ptr())"));
    std::string loader = slurp_file(dir / "linear_torch_load.py");
    CHECK_THAT(loader, Catch::Contains("LIBRARIES = [\"cublasLt\"]"));
    CHECK_THAT(loader, Catch::Contains("extra_ldflags=ldflags"));
    const std::filesystem::path python = "/usr/bin/python3";
    if (std::filesystem::exists(python)) {
        CommandResult syntax = run_program(python, {"-m", "py_compile", (dir / "linear_torch_load.py").string()});
        INFO(syntax.err);
        CHECK(syntax.exit_code == 0);
    }
}

} // namespace kforge::test
