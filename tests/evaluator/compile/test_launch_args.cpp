// Plans checked against the kernels as compiled: the CUBIN's parameter list (EIATTR_KPARAM_INFO)
// must match the plan's argument count and sizes, or the candidate is a plan_error before any GPU
// work. NVRTC compiles here without a GPU.
#include "kf_catch.hpp"

#include "core/source.hpp"
#include "evaluator/compile/compile.hpp"
#include "evaluator/compile/cubin_info.hpp"
#include "evaluator/compile/launch_args.hpp"
#include "test_support.hpp"

using namespace kforge;

namespace {

const Task& args_task()
{
    static const Task task = load_task(test::source_dir() / "tasks/softmax_f32.json");
    return task;
}

CompileResult compile_kernels(const std::string& source, std::vector<std::string> kernels)
{
    CompileRequest request;
    request.source = source;
    request.kernels = std::move(kernels);
    CompileResult result = compile_with_nvrtc(request);
    INFO(result.message);
    REQUIRE(result.ok);
    return result;
}

std::string plan_mismatch(const std::string& plan_json, const std::string& kernel_source)
{
    Plan plan = parse_plan(Json::parse(plan_json), "plan");
    std::vector<std::string> kernels;
    for (const auto& launch : plan.launches)
        kernels.push_back(launch.kernel);
    return check_launch_arguments(args_task(), plan, compile_kernels(kernel_source, kernels));
}

const std::string k_four_params = "extern \"C\" __global__ void args_task(const float* x, float* y, int M, int N)"
                           " { if (M + N) y[0] = x[0]; }\n";

} // namespace

TEST_CASE("the CUBIN records each kernel's parameter sizes by ordinal", "[evaluator][compile][hostile]")
{
    CompileResult result = compile_kernels("struct S3 { char c[3]; };\nstruct S16 { double a, b; };\n"
                                   "extern \"C\" __global__ void mix(char c, short s, S3 t, S16 u, double d, float* p)"
                                   " { if (c) p[0] = s + t.c[1] + u.b + d; }\n"
                                   "extern \"C\" __global__ void none() {}\n"
                                   "extern \"C\" __global__ void unused(float* p, int n) {}\n",
                                   {"mix", "none", "unused"});
    auto params = read_cubin_params(result.cubin);
    REQUIRE(params.count("mix"));
    CHECK(params["mix"] == std::vector<uint32_t>{1, 2, 3, 16, 8, 8});
    REQUIRE(params.count("none"));
    CHECK(params["none"].empty());
    REQUIRE(params.count("unused")); // unused parameters still take their place
    CHECK(params["unused"] == std::vector<uint32_t>{8, 4});
    CHECK(read_cubin_params("not an ELF file").empty());
}

TEST_CASE("a plan passing fewer or more arguments than the kernel takes is a plan error naming both",
          "[evaluator][compile][hostile]")
{
    std::string plan = R"({"launches": [{"kernel": "args_task", "grid": ["M"], "block": [256], "args": ["x", "y"]}]})";
    CHECK(plan_mismatch(plan, k_four_params) ==
          "launches[0] (args_task): the plan passes 2 arguments, but kernel 'args_task' takes 4 parameters (8 B, 8 B, 4 B, "
          "4 B); list one argument per kernel parameter, in order");
    plan = R"({"launches": [{"kernel": "args_task", "grid": ["M"], "block": [256], "args": ["x", "y", "M", "N", "N"]}]})";
    CHECK_THAT(plan_mismatch(plan, k_four_params), Catch::Contains("passes 5 arguments, but kernel 'args_task' takes 4"));
}

TEST_CASE("an argument of the wrong size is a plan error with the fix", "[evaluator][compile][hostile]")
{
    std::string kernel = "extern \"C\" __global__ void args_task(const float* x, float* y, int M, long long N)"
                         " { if (M + N) y[0] = x[0]; }\n";
    std::string plan = R"({"launches": [{"kernel": "args_task", "grid": ["M"], "block": [256], "args": ["x", "y", "M", "N"]}]})";
    CHECK(plan_mismatch(plan, kernel) ==
          "launches[0] (args_task).args[3]: the plan passes scalar 'N' as i32 (4 bytes), but parameter 3 of kernel "
          "'args_task' is 8 bytes (its parameters: 8 B, 8 B, 4 B, 8 B); pass {\"value\": \"N\", \"dtype\": \"i64\"} for a "
          "64-bit integer");
    plan = R"({"launches": [{"kernel": "args_task", "grid": ["M"], "block": [256],
               "args": ["x", "y", "M", {"value": "N", "dtype": "i64"}]}]})";
    CHECK(plan_mismatch(plan, kernel).empty());
    plan = R"({"launches": [{"kernel": "args_task", "grid": ["M"], "block": [256], "args": ["M", "y", "M", "N"]}]})";
    CHECK_THAT(plan_mismatch(plan, k_four_params), Catch::Contains("args[0]: the plan passes scalar 'M' as i32 (4 bytes), but "
                                                       "parameter 0 of kernel 'args_task' is 8 bytes"));
}

TEST_CASE("a tensor-map argument counts as the 128-byte descriptor the worker passes", "[evaluator][compile][hostile]")
{
    std::string kernel = "struct alignas(64) Map { unsigned char bytes[128]; };\n"
                         "extern \"C\" __global__ void args_task(const __grid_constant__ Map a, float* y, int M)"
                         " { if (M) y[0] = a.bytes[0]; }\n";
    std::string plan = R"({"launches": [{"kernel": "args_task", "grid": ["M"], "block": [256],
               "args": [{"tensor_map": "x", "box": [8, 8], "swizzle": 0}, "y", "M"]}]})";
    CHECK(plan_mismatch(plan, kernel).empty());
    plan = R"({"launches": [{"kernel": "args_task", "grid": ["M"], "block": [256], "args": ["x", "y", "M"]}]})";
    CHECK_THAT(plan_mismatch(plan, kernel), Catch::Contains("the plan passes tensor 'x' as a pointer (8 bytes), but "
                                                             "parameter 0 of kernel 'args_task' is 128 bytes"));
}

TEST_CASE("every bundled reference and seed passes the argument check", "[evaluator][compile][tasks][slow]")
{
    for (const auto& entry : std::filesystem::directory_iterator(test::source_dir() / "tasks")) {
        if (entry.path().extension() != ".json")
            continue;
        Task task = load_task(entry.path());
        std::vector<const KernelFile*> files{&task.reference};
        for (const auto& seed : task.seeds)
            files.push_back(&seed);
        for (const KernelFile* file : files) {
            INFO(file->path.string());
            std::vector<std::string> kernels;
            for (const auto& launch : file->plan.launches)
                if (std::find(kernels.begin(), kernels.end(), launch.kernel) == kernels.end())
                    kernels.push_back(launch.kernel);
            CompileRequest request;
            request.source = file->source;
            request.kernels = kernels;
            request.params = enumerate_param_points(file->plan, 1).front();
            CompileResult result = compile_with_nvrtc(request);
            INFO(result.message);
            REQUIRE(result.ok);
            CHECK(check_launch_arguments(task, file->plan, result).empty());
        }
    }
}
