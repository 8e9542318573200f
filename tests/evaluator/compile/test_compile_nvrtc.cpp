// compile_with_nvrtc in this process (NVRTC works without a GPU): the prelude and shims, compile
// errors as a model sees them, names and resources, and the ptxas report parser on logs captured
// from NVRTC 13.0 (tests/fixtures/nvrtc).
#include <catch2/catch.hpp>

#include <regex>
#include <unistd.h>

#include <fmt/format.h>

#include "evaluator/compile/compile.hpp"
#include "evaluator/compile/nvrtc_log.hpp"
#include "evaluator/compile/prelude.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

using namespace kforge;

namespace {

std::string fixture(const std::string& name) { return read_file(test::fixtures_dir() / "nvrtc" / name); }

CompileResult compile(const std::string& source, std::vector<std::string> kernels = {"k"}, ParamPoint params = {})
{
    CompileRequest request;
    request.source = source;
    request.kernels = std::move(kernels);
    request.params = std::move(params);
    return compile_with_nvrtc(request);
}

// An absolute host path standing at a word start, e.g. " /usr/local/cuda/include/x.h".
bool mentions_host_path(const std::string& text)
{
    static const std::regex path(R"((^|[\s"'(=])/[A-Za-z_])");
    return std::regex_search(text, path);
}

const KernelResources* find_kernel(const std::vector<KernelResources>& all, const std::string& name)
{
    for (const auto& k : all)
        if (k.kernel == name)
            return &k;
    return nullptr;
}

} // namespace

TEST_CASE("the prelude gives fixed-width ints, limits, INFINITY/NAN and fp16/bf16 without any include", "[evaluator][compile]")
{
    auto result = compile(R"(
static_assert(sizeof(int8_t) == 1 && sizeof(uint16_t) == 2 && sizeof(int32_t) == 4 && sizeof(uint64_t) == 8, "");
static_assert(sizeof(intptr_t) == 8 && sizeof(uintptr_t) == 8 && sizeof(size_t) == 8, "");
static_assert(INT32_MAX == 2147483647 && INT_MAX == INT32_MAX && UINT32_MAX == 4294967295u, "");
static_assert(INT64_MAX > 0 && CHAR_BIT == 8, "");
constexpr float inf = INFINITY;
static_assert(inf > FLT_MAX && -inf < -FLT_MAX, "");
static_assert(FLT_MIN > 0 && FLT_EPSILON > 0 && DBL_MAX > FLT_MAX, "");
constexpr float quiet_nan = NAN;
static_assert(quiet_nan != quiet_nan, "");
extern "C" __global__ void k(float* y, int64_t n)
{
    __half h = __float2half(1.5f);
    __nv_bfloat16 b = __float2bfloat16(2.5f);
    if ((int64_t)threadIdx.x < n)
        y[threadIdx.x] = __half2float(h) + __bfloat162float(b) + (float)M_PI;
}
)");
    INFO(result.message << "\n" << result.log);
    CHECK(result.ok);
    CHECK(!result.cubin.empty());
}

TEST_CASE("each standard-library shim resolves to kforge's own definitions", "[evaluator][compile]")
{
    for (const auto& shim : shim_headers()) {
        for (bool quoted : {false, true}) {
            std::string include = quoted ? "#include \"" + shim.name + "\"\n" : "#include <" + shim.name + ">\n";
            auto result = compile(include + include + "extern \"C\" __global__ void k(float* y) { y[0] = FLT_MAX; }\n");
            INFO(include << result.message);
            CHECK(result.ok);
        }
    }
    auto result = compile("#include <cstdint>\n#include <cmath>\n#include <cstddef>\n"
                          "extern \"C\" __global__ void k(float* y, double* z) {\n"
                          "  std::int64_t i = 3; std::size_t s = 2; std::uint8_t u = 1;\n"
                          "  y[0] = std::sqrt(y[1]) + std::exp(y[2]) + std::fmax(y[3], 1.0f) + std::abs(y[4]) + i + s + u;\n"
                          "  z[0] = std::sqrt(z[1]) + std::isnan(z[2]);\n}\n");
    INFO(result.message);
    CHECK(result.ok);
}

TEST_CASE("the prelude agrees with the toolkit's own headers: no warnings when both are included", "[evaluator][compile]")
{
    auto result = compile("#include <cuda/std/cstdint>\n#include <cuda/std/climits>\n#include <cuda/std/cfloat>\n"
                          "#include <cuda/std/cmath>\n#include <cstdint>\n#include <cfloat>\n#include <cmath>\n"
                          "extern \"C\" __global__ void k(float* y) { y[0] = INFINITY + FLT_MAX + INT_MAX; }\n");
    INFO(result.log);
    CHECK(result.ok);
    CHECK(result.log.find("warning") == std::string::npos);
    CHECK(result.log.find("kforge_prelude") == std::string::npos);
}

TEST_CASE("a compile error yields a trimmed message with the candidate's own line and no host path", "[evaluator][compile]")
{
    auto result = compile("// line 1\n#include <cuda_fp16.h>\n\nextern \"C\" __global__ void k(float* y)\n{\n"
                          "    float v = 1.0f;\n    y[0] = undefined_name + v;\n}\n");
    REQUIRE(!result.ok);
    CHECK(result.failure == VerdictKind::compile_error);
    INFO(result.message);
    CHECK(result.message.find("candidate.cu(7): error: identifier \"undefined_name\" is undefined") != std::string::npos);
    CHECK(result.message.find("y[0] = undefined_name + v;") != std::string::npos);
    CHECK(result.message.find("1 error detected") != std::string::npos);
    CHECK(!mentions_host_path(result.message));
    CHECK(!mentions_host_path(result.log));
    CHECK(result.message.size() <= k_max_compile_message_chars + 200);
}

TEST_CASE("errors inside toolkit headers name them without the host's toolkit path", "[evaluator][compile]")
{
    auto result = compile(fixture("errors.cu"), {"bad"});
    REQUIRE(!result.ok);
    INFO(result.message);
    CHECK(!mentions_host_path(result.message));
    CHECK(!mentions_host_path(result.log));
    CHECK(result.log.find("<cuda>/include/cccl/") != std::string::npos);
    CHECK(result.message.find("candidate.cu(5): error") != std::string::npos);
    // The INFINITY/NAN redefinition warnings concern kforge's prelude, not the candidate.
    CHECK(result.log.find("INFINITY") == std::string::npos);
}

TEST_CASE("a long error log is cut to the first errors with a count of the rest", "[evaluator][compile]")
{
    std::string body;
    for (int i = 0; i < 30; ++i)
        body += "    undefined_" + std::to_string(i) + "();\n";
    auto result = compile("extern \"C\" __global__ void k(float* y)\n{\n" + body + "}\n");
    REQUIRE(!result.ok);
    INFO(result.message);
    CHECK(result.message.find("candidate.cu(3): error") != std::string::npos);
    CHECK(result.message.find(fmt::format("({} more errors not shown)", 30 - k_max_compile_message_errors)) != std::string::npos);
    CHECK(result.message.find("30 errors detected") != std::string::npos);
    CHECK(result.message.size() <= k_max_compile_message_chars + 200);
}

TEST_CASE("the sanitizer scrubs toolkit paths and kforge's own prelude warnings from a captured log", "[evaluator][compile]")
{
    std::string raw = fixture("errors_sm90a.log");
    REQUIRE(raw.find("/usr/local/cuda") != std::string::npos); // the fixture is a real, unscrubbed log
    std::string clean = sanitize_nvrtc_log(raw);
    CHECK(!mentions_host_path(clean));
    CHECK(clean.find("incompatible redefinition") == std::string::npos);
    CHECK(clean.find("Remark: The warnings can be suppressed") == std::string::npos);
    CHECK(clean.find("at line 261 of <cuda>/include/cccl/cub/block/block_reduce.cuh") != std::string::npos);
    CHECK(sanitize_nvrtc_log("/etc/secret/file(1): error: x\n").find("file(1): error: x") == 0);
}

TEST_CASE("a source refused by the include screen never reaches NVRTC", "[evaluator][compile]")
{
    auto result = compile("#include \"/etc/hostname\"\nextern \"C\" __global__ void k(float* y) { y[0] = 1; }\n");
    REQUIRE(!result.ok);
    CHECK(result.log.empty());
    CHECK(result.message.find("line 1: `#include \"/etc/hostname\"` is not allowed") != std::string::npos);
}

TEST_CASE("a quoted include never finds a file in the working directory", "[evaluator][compile]")
{
    test::TempDir dir;
    test::write_text(dir / "cuda_fp16.h", "#error this came from the working directory\n");
    auto old = std::filesystem::current_path();
    std::filesystem::current_path(dir.path());
    auto result = compile("#include \"cuda_fp16.h\"\nextern \"C\" __global__ void k(float* y) { y[0] = __half2float(__float2half(1.0f)); }\n");
    std::filesystem::current_path(old);
    INFO(result.message);
    CHECK(result.ok);
}

TEST_CASE("params become -D definitions", "[evaluator][compile]")
{
    std::string source = "#if !defined(BLOCK) || BLOCK != 256\n#error BLOCK missing\n#endif\n"
                         "extern \"C\" __global__ void k(float* y) { y[0] = BLOCK + VEC; }\n";
    CHECK(compile(source, {"k"}, {{"BLOCK", 256}, {"VEC", 4}}).ok);
    auto wrong = compile(source, {"k"}, {{"BLOCK", 128}, {"VEC", 4}});
    CHECK(!wrong.ok);
    CHECK(wrong.message.find("BLOCK missing") != std::string::npos);
}

TEST_CASE("kernels get lowered names and ptxas resources, extern \"C\" and templates alike", "[evaluator][compile]")
{
    auto result = compile(fixture("resources.cu"), {"spilly", "tiled", "scaled<4>"});
    INFO(result.message);
    REQUIRE(result.ok);
    CHECK(result.lowered_names.at("spilly") == "spilly");
    CHECK(result.lowered_names.at("scaled<4>") == "_Z6scaledILi4EEvPf");
    CHECK(result.resources.size() == 3);
    const auto* spilly = find_kernel(result.resources, "spilly");
    const auto* tiled = find_kernel(result.resources, "tiled");
    const auto* scaled = find_kernel(result.resources, "scaled<4>");
    REQUIRE(spilly);
    REQUIRE(tiled);
    REQUIRE(scaled);
    CHECK(spilly->registers == 32);
    CHECK(spilly->stack_frame_bytes > 0);
    CHECK(tiled->static_smem_bytes == 32 * 33 * 4);
    CHECK(scaled->registers > 0);
    if (spilly->from_cubin) {
        // This NVRTC wrote no ptxas report: the CUBIN gave the figures above, but not spill counts
        // or barriers.
        WARN("no ptxas report in NVRTC's log: spill and barrier counts unchecked");
    } else {
        CHECK(spilly->spill_store_bytes > 0);
        CHECK(spilly->spill_load_bytes > 0);
        CHECK(tiled->barriers == 1);
    }
}

TEST_CASE("a kernel the source lacks is reported plainly, not as a name-map error", "[evaluator][compile]")
{
    auto result = compile("extern \"C\" __global__ void k(float* y) { y[0] = 1; }\n", {"k", "missing"});
    REQUIRE(!result.ok);
    INFO(result.message);
    CHECK(result.message.find("the plan launches kernel 'missing' that the source does not define") != std::string::npos);
    CHECK(result.message.find("__nv_name_map") == std::string::npos);
}

TEST_CASE("an arch that is not a real one, or a param that is not an identifier, is refused", "[evaluator][compile]")
{
    CompileRequest request;
    request.source = "extern \"C\" __global__ void k(float* y) { y[0] = 1; }\n";
    request.kernels = {"k"};
    request.arch = "compute_90a";
    CHECK(compile_with_nvrtc(request).message.find("not a real GPU architecture") != std::string::npos);
    request.arch = "sm_90a";
    request.params = {{"-I/etc", 1}};
    CHECK(compile_with_nvrtc(request).message.find("not a C identifier") != std::string::npos);
}

TEST_CASE("ptxas reports parse: one kernel with smem and barriers", "[evaluator][compile]")
{
    auto resources = parse_ptxas_report(fixture("softmax_ref_sm90a.log"));
    REQUIRE(resources.size() == 1);
    CHECK(resources[0].kernel == "softmax_ref");
    CHECK(resources[0].registers == 48);
    CHECK(resources[0].barriers == 1);
    CHECK(resources[0].static_smem_bytes == 2048);
    CHECK(resources[0].spill_store_bytes == 0);
    CHECK(resources[0].stack_frame_bytes == 0);
}

TEST_CASE("ptxas reports parse: spills, stack, several entries, a non-inlined callee skipped", "[evaluator][compile]")
{
    auto resources = parse_ptxas_report(fixture("resources_sm90a.log"));
    REQUIRE(resources.size() == 3);
    const auto* spilly = find_kernel(resources, "spilly");
    REQUIRE(spilly);
    CHECK(spilly->registers == 32);
    CHECK(spilly->stack_frame_bytes == 976);
    CHECK(spilly->spill_store_bytes == 720);
    CHECK(spilly->spill_load_bytes == 1304);
    const auto* tiled = find_kernel(resources, "tiled");
    REQUIRE(tiled);
    CHECK(tiled->registers == 12);
    CHECK(tiled->static_smem_bytes == 4224);
    CHECK(find_kernel(resources, "_Z6scaledILi4EEvPf"));
    CHECK(!find_kernel(resources, "_Z6calleePKfi"));
}

TEST_CASE("ptxas reports parse: the older format with cmem banks", "[evaluator][compile]")
{
    auto resources = parse_ptxas_report("ptxas info    : Compiling entry function 'k' for 'sm_80'\n"
                                        "ptxas info    : Function properties for k\n"
                                        "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
                                        "ptxas info    : Used 40 registers, 1024 bytes smem, 368 bytes cmem[0], 8 bytes cmem[2]\n");
    REQUIRE(resources.size() == 1);
    CHECK(resources[0].registers == 40);
    CHECK(resources[0].static_smem_bytes == 1024);
    CHECK(resources[0].const_bytes == 376);
    CHECK(resources[0].stack_frame_bytes == 8);
    CHECK(resources[0].spill_load_bytes == 12);
}

TEST_CASE("nvrtc_version reports the library's version", "[evaluator][compile]")
{
    std::string version = nvrtc_version();
    CHECK(std::regex_match(version, std::regex(R"(\d+\.\d+)")));
}
