// `kforge export --launcher` and `--torch`: the host code agrees with kforge's own plan resolution
// on every test, bench and hostile shape of every bundled task's seeds, nvcc compiles it, and the
// PyTorch export is complete (its build needs torch headers, which only the GPU machine has).
#include <catch2/catch.hpp>

#include <cstdlib>

#include <fmt/format.h>

#include "core/plan_check.hpp"
#include "core/source.hpp"
#include "export/export_harness.hpp"
#include "export/host_code.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

std::vector<std::filesystem::path> bundled_tasks()
{
    std::vector<std::filesystem::path> specs;
    for (const auto& entry : std::filesystem::directory_iterator(source_dir() / "tasks"))
        if (entry.path().extension() == ".json")
            specs.push_back(entry.path());
    std::sort(specs.begin(), specs.end());
    return specs;
}

// `text` with every run of whitespace made one space (the contract is wrapped to 96 columns).
std::string squash(const std::string& text)
{
    std::string out;
    for (char c : text) {
        bool space = c == ' ' || c == '\n';
        if (!space)
            out += c;
        else if (!out.empty() && out.back() != ' ')
            out += ' ';
    }
    return out;
}

// Every test and bench shape, then the hostile ones.
std::vector<SizeValues> all_cases(const Task& task, const LauncherSignature& sig)
{
    std::vector<SizeValues> cases;
    for (const auto* list : {&task.tests, &task.bench})
        for (const auto& shape : *list)
            cases.push_back(sizes_of(sig, shape));
    for (auto& hostile : hostile_sizes(task, sig))
        cases.push_back(std::move(hostile));
    return cases;
}

} // namespace

TEST_CASE("the exported launcher of every bundled seed agrees with kforge's resolved plan, "
          "refuses what kforge refuses, and nvcc compiles it",
          "[e2e][export][launcher][slow]")
{
    int overflow_refusals = 0;
    for (const auto& spec : bundled_tasks()) {
        Task task = load_task(spec);
        INFO(task.name);
        REQUIRE_FALSE(task.seeds.empty());
        TempDir dir;
        auto archive = dir / "run.kforge";
        std::vector<int64_t> ids = build_seed_archive(archive, task);
        bool compiled_one = false; // nvcc checks the first exportable seed of each task
        for (size_t i = 0; i < task.seeds.size(); ++i) {
            INFO(task.seeds[i].path.filename().string());
            auto cu = dir / fmt::format("{}_{}.cu", task.name, i);
            std::vector<std::string> args = {"export", archive.string()};
            if (i == 0)
                args.push_back("--best");
            else
                args.insert(args.end(), {"--candidate", std::to_string(ids[i])});
            args.insert(args.end(), {"--launcher", "-o", cu.string()});
            CommandResult result = run_kforge(args);
            INFO(result.err);
            Plan plan = seed_plan(task, task.seeds[i]);
            bool tensor_maps = std::any_of(plan.launches.begin(), plan.launches.end(), [](const PlanLaunch& l) {
                return std::any_of(l.args.begin(), l.args.end(), [](const PlanArg& a) { return a.tensor_map.has_value(); });
            });
            if (tensor_maps) {
                // Generated host code cannot build TMA descriptors yet: refused, saying so.
                CHECK(result.exit_code != 0);
                CHECK_THAT(result.err, Catch::Contains("does not build tensor maps yet"));
                continue;
            }
            REQUIRE(result.exit_code == 0);
            auto header = dir / fmt::format("{}_{}.h", task.name, i);
            CHECK_THAT(result.err, Catch::Contains("wrote " + cu.string() + " and " +
                                                   header.string()));
            std::string text = slurp_file(cu);

            ParamPoint point = enumerate_param_points(plan, 1).front();
            LauncherSource source{task, plan, describe_launcher(task, plan), point};
            // The header declares exactly what the .cu defines (nvcc below sees both).
            CHECK_THAT(text, Catch::Contains(generate_launcher_declarations(source)));
            CHECK_THAT(slurp_file(header),
                       Catch::Contains(generate_launcher_declarations(source)));
            CHECK_THAT(text, Catch::Contains("cudaError_t kforge_" + task.name + "("));

            auto cases = all_cases(task, source.signature);
            auto answers = run_resolve_harness(cu, plan, source.signature, cases);
            overflow_refusals +=
                compare_resolutions(task, plan, source.signature, point, cases, answers);
            if (!compiled_one)
                check_nvcc_compiles_file(cu);
            compiled_one = true;
        }
    }
    // softmax's M and N have no maximum, so some hostile sizes overflow int64 on both sides.
    CHECK(overflow_refusals > 0);
}

TEST_CASE("a launcher export names where its sizes come from and what it leaves unchecked",
          "[export][launcher]")
{
    Task histogram = load_task(source_dir() / "tasks" / "histogram_u8.json");
    Plan plan = seed_plan(histogram, histogram.seeds.front());
    LauncherSignature sig = describe_launcher(histogram, plan);
    REQUIRE(sig.sizes.size() == 1);
    CHECK(sig.sizes[0].name == "n");
    CHECK(sig.sizes[0].dtype == DType::i64);
    CHECK(sig.unused_symbols == std::vector<std::string>{"COLD"});
    CHECK(sig.extra_sizes.empty());

    Task spmv = load_task(source_dir() / "tasks" / "spmv_csr_f32.json");
    Plan spmv_plan = seed_plan(spmv, spmv.seeds.front());
    LauncherSignature spmv_sig = describe_launcher(spmv, spmv_plan);
    CHECK(spmv_sig.unused_symbols == std::vector<std::string>{"BAND", "SKEW"});
    CHECK(spmv_sig.unchecked_constraints == std::vector<std::string>{"BAND <= C"});
    std::string contract = squash(launcher_contract({spmv, spmv_plan, spmv_sig}));
    CHECK_THAT(contract, Catch::Contains("Sizes: R carries R; C carries C; NNZ carries NNZ."));
    CHECK_THAT(contract, Catch::Contains("R >= 1, <= 2147483646;"));
    CHECK_THAT(contract, Catch::Contains("Not taken: BAND, SKEW (only kforge's test inputs use "
                                         "them), nor checked: the constraints 'BAND <= C'"));

    Task layernorm = load_task(source_dir() / "tasks" / "layernorm_f32.json");
    Plan ln_plan = seed_plan(layernorm, layernorm.seeds.front());
    LauncherSource ln{layernorm, ln_plan, describe_launcher(layernorm, ln_plan)};
    CHECK_THAT(generate_launcher_declarations(ln),
               Catch::Contains("cudaError_t kforge_layernorm_f32(const float* x, const float* "
                               "gamma, const float* beta, float* y, int32_t M, int32_t N, float "
                               "eps, void* workspace, size_t workspace_bytes, cudaStream_t "
                               "stream);\nsize_t kforge_layernorm_f32_workspace_bytes(int32_t M, "
                               "int32_t N);"));
    CHECK_THAT(squash(launcher_contract(ln)), Catch::Contains("kforge measured with eps = 1e-05"));
}

TEST_CASE("the PyTorch operator's schema derives sizes from shapes and takes the rest as "
          "arguments",
          "[export][torch]")
{
    auto schema_of = [](const std::string& name) {
        Task task = load_task(source_dir() / "tasks" / (name + ".json"));
        Plan plan = seed_plan(task, task.seeds.front());
        return torch_schema({task, plan, describe_launcher(task, plan)});
    };
    CHECK(schema_of("softmax_f32") == "softmax_f32(Tensor x) -> Tensor");
    CHECK(schema_of("layernorm_f32") ==
          "layernorm_f32(Tensor x, Tensor gamma, Tensor beta, float eps=1e-05) -> Tensor");
    CHECK(schema_of("hgemm_bf16") == "hgemm_bf16(Tensor A, Tensor B) -> Tensor");
    CHECK(schema_of("axpy_f32") == "axpy_f32(Tensor x, Tensor y, float a=1.7) -> Tensor");
    // T is a size no tensor shows: an argument.
    CHECK(schema_of("jacobi2d_f32") == "jacobi2d_f32(Tensor u_in, int T) -> Tensor");
    CHECK(schema_of("spmv_csr_f32") ==
          "spmv_csr_f32(Tensor row_ptr, Tensor col_idx, Tensor vals, Tensor x) -> Tensor");
}

TEST_CASE("export --torch writes the operator and its loader, which build where torch is",
          "[e2e][export][torch][slow]")
{
    Task task = load_task(source_dir() / "tasks" / "layernorm_f32.json");
    TempDir dir;
    build_seed_archive(dir / "run.kforge", task);
    auto cu = dir / "ln.cu";
    CommandResult result =
        run_kforge({"export", (dir / "run.kforge").string(), "--best", "--torch", "-o", cu.string()});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    CHECK_THAT(result.err, Catch::Contains("wrote " + cu.string() + " and " +
                                           (dir / "ln_load.py").string()));
    std::string text = slurp_file(cu);
    CHECK_THAT(text, Catch::Contains("#undef __CUDA_NO_HALF_OPERATORS__"));
    CHECK_THAT(text, Catch::Contains("TORCH_LIBRARY_FRAGMENT(kforge, m)\n{\n    m.def(\"layernorm_f32("
                                     "Tensor x, Tensor gamma, Tensor beta, float eps=1e-05) -> "
                                     "Tensor\");"));
    CHECK_THAT(text, Catch::Contains("TORCH_LIBRARY_IMPL(kforge, CUDA, m)"));
    CHECK_THAT(text, Catch::Contains("TORCH_CHECK(gamma.scalar_type() == at::kFloat, "
                                     "\"kforge::layernorm_f32: gamma must be torch.float32 (the "
                                     "task's f32), got \", gamma.scalar_type());"));
    CHECK_THAT(text, Catch::Contains("TORCH_CHECK(x.is_contiguous()"));
    CHECK_THAT(text, Catch::Contains("at::cuda::getCurrentCUDAStream()"));
    CHECK_THAT(text, Catch::Contains("const int64_t sym_N = x.size(1);"));
    CHECK_THAT(text, Catch::Contains("at::Tensor y = at::empty({y_dim0, y_dim1}, "
                                     "kf_options.dtype(at::kFloat));"));
    std::string loader = slurp_file(dir / "ln_load.py");
    CHECK_THAT(loader, Catch::Contains("SOURCE = os.path.join(HERE, \"ln.cu\")"));
    CHECK_THAT(loader, Catch::Contains("y = op(x, gamma, beta)"));

    const std::filesystem::path python = "/usr/bin/python3";
    if (!std::filesystem::exists(python)) {
        WARN("loader syntax check skipped: " << python << " is not installed");
        return;
    }
    CommandResult syntax = run_program(python, {"-m", "py_compile", (dir / "ln_load.py").string()});
    INFO(syntax.err);
    CHECK(syntax.exit_code == 0);
    CommandResult includes = run_program(
        python, {"-c", "import torch, torch.utils.cpp_extension as c\n"
                       "if torch.version.cuda is None: raise SystemExit(3)\n"
                       "print(' '.join('-I' + p for p in c.include_paths()))"});
    if (includes.exit_code != 0) {
        // Debian's python3-torch (what the CPU tests install) is a CPU build: its headers lack
        // c10/cuda's generated parts, so no CUDA extension can be built against it.
        WARN("the --torch build check is skipped: "
             << (includes.exit_code == 3 ? "this PyTorch was built without CUDA"
                                         : "PyTorch is not installed here")
             << " (the GPU machine's scripts/gpu/checks/export.sh builds and runs it)");
        return;
    }
    check_nvcc_compiles_file(cu, "-std=c++17 " + trim(includes.out));
}

TEST_CASE("export refuses host code without a .cu file, and both kinds at once", "[e2e][export]")
{
    Task task = load_task(source_dir() / "tasks" / "softmax_f32.json");
    TempDir dir;
    auto archive = (dir / "run.kforge").string();
    build_seed_archive(archive, task);
    auto wrong = run_kforge({"export", archive, "--best", "--launcher", "-o",
                             (dir / "kernel.txt").string()});
    CHECK(wrong.exit_code == 2);
    CHECK_THAT(wrong.err, Catch::Contains("with --launcher, -o names the .cu file to write"));
    auto stdout_too = run_kforge({"export", archive, "--best", "--torch", "-o", "-"});
    CHECK(stdout_too.exit_code == 2);
    CHECK_THAT(stdout_too.err, Catch::Contains("FILE_load.py goes beside it"));
    auto both = run_kforge({"export", archive, "--best", "--launcher", "--torch", "-o",
                            (dir / "k.cu").string()});
    CHECK(both.exit_code == 2);
    CHECK_FALSE(std::filesystem::exists(dir / "k.cu"));
}

} // namespace kforge::test

namespace kforge::test {

TEST_CASE("a program's 0-dim tensors stay 0-dim through the PyTorch operator", "[export][torch]")
{
    // x is a matrix, s and the result are 0-dim tensors (a loss scaled by a learned scalar, say):
    // the spec holds both as shape [1] with zero_dim set.
    Json spec = Json::parse(slurp_file(fixtures_dir() / "torch" / "scale_rows" / "spec.json"));
    spec["args"][1] = {{"name", "s"}, {"dtype", "f32"}, {"shape", {1}}, {"from", "input 1"}, {"zero_dim", true}};
    spec["args"][2]["shape"] = Json::array({1});
    spec["args"][2]["zero_dim"] = true;
    spec["name"] = "sum_scaled";
    spec["roofline"]["bytes"] = "32 * rows + 8";
    Task task = parse_task(spec.dump(), "sum_scaled.json", fixtures_dir() / "torch" / "scale_rows");
    Plan plan = parse_plan(Json::parse(R"({"launches": [{"kernel": "sum_scaled", "grid": [1], "block": [256],
        "args": ["x", "s", "out", {"value": "rows * 8", "dtype": "i64"}]}]})"), "plan");
    LauncherSource source{task, plan, describe_launcher(task, plan)};
    std::string op = generate_torch_op(source);
    CHECK_THAT(op, Catch::Contains("TORCH_CHECK(s.dim() == 0, \"kforge::sum_scaled: s must be a 0-dim tensor"));
    CHECK_THAT(op, Catch::Contains("at::Tensor out = at::empty({}, kf_options.dtype(at::kFloat));"));
    CHECK_THAT(op, !Catch::Contains("s.size(0)"));
    // x still gives the size symbol and keeps its own checks.
    CHECK_THAT(op, Catch::Contains("const int64_t sym_rows = x.size(0);"));
    CHECK_THAT(op, Catch::Contains("TORCH_CHECK(x.dim() == 2"));
}

} // namespace kforge::test
