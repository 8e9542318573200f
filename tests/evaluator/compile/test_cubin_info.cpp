// Reading CUBINs on the CPU (NVRTC compiles here without a GPU): the resources ptxas wrote into the
// ELF agree with its log, and the behaviour hash sees through debug-only differences.
#include "kf_catch.hpp"

#include <algorithm>

#include "evaluator/compile/compile.hpp"
#include "evaluator/compile/compile_record.hpp"
#include "evaluator/compile/cubin_info.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

using namespace kforge;

namespace {

CompileResult compile_for_info(const std::string& source, std::vector<std::string> kernels)
{
    CompileRequest request;
    request.source = source;
    request.kernels = std::move(kernels);
    return compile_with_nvrtc(request);
}

const CubinKernel* find_symbol(const CubinReport& report, const std::string& symbol)
{
    for (const auto& k : report.kernels)
        if (k.symbol == symbol)
            return &k;
    return nullptr;
}

const std::string k_info_kernel = "extern \"C\" __global__ void k(float* y, int n)\n"
                             "{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = 2 * y[i];\n}\n";

} // namespace

TEST_CASE("the CUBIN's own record gives ptxas's registers, stack frame and static shared memory", "[evaluator][compile]")
{
    auto result = compile_for_info(read_file(test::fixtures_dir() / "nvrtc" / "resources.cu"), {"spilly", "tiled", "scaled<4>"});
    INFO(result.message);
    REQUIRE(result.ok);
    CubinReport report = read_cubin_resources(result.cubin);
    INFO(report.problem);
    REQUIRE(report.problem.empty());
    for (const auto& [name, symbol] : result.lowered_names) {
        INFO(name);
        const CubinKernel* k = find_symbol(report, symbol);
        REQUIRE(k);
        auto ptxas = std::find_if(result.resources.begin(), result.resources.end(),
                                  [&](const KernelResources& r) { return r.kernel == name; });
        REQUIRE(ptxas != result.resources.end());
        if (ptxas->from_cubin) {
            WARN("this NVRTC wrote no ptxas report: the CUBIN's figures are checked against the source alone");
        } else {
            CHECK(k->registers == ptxas->registers);
            CHECK(k->frame_bytes == ptxas->stack_frame_bytes);
            CHECK(k->static_smem_bytes == ptxas->static_smem_bytes);
        }
    }
    CHECK(find_symbol(report, "spilly")->frame_bytes > 0);              // a local array that spills
    CHECK(find_symbol(report, "tiled")->static_smem_bytes == 32 * 33 * 4); // __shared__ float t[32][33]
}

TEST_CASE("resources missing from the log are filled from the CUBIN and say so", "[evaluator][compile]")
{
    auto result = compile_for_info(read_file(test::fixtures_dir() / "nvrtc" / "resources.cu"), {"spilly", "tiled", "scaled<4>"});
    REQUIRE(result.ok);
    std::vector<KernelResources> from_log = result.resources;
    result.resources.clear(); // as on a machine whose NVRTC prints no ptxas report
    CHECK(add_cubin_resources(result, {"spilly", "tiled", "scaled<4>"}) == 3);
    REQUIRE(result.resources.size() == 3);
    for (const auto& r : result.resources) {
        INFO(r.kernel);
        CHECK(r.from_cubin);
        CHECK(r.registers > 0);
        for (const auto& logged : from_log)
            if (logged.kernel == r.kernel && !logged.from_cubin)
                CHECK(r.registers == logged.registers);
    }
    CHECK(add_cubin_resources(result, {"spilly"}) == 0); // nothing missing, nothing added
}

TEST_CASE("the behaviour hash ignores debug sections and sees every code change", "[evaluator][compile]")
{
    auto plain = compile_for_info(k_info_kernel, {"k"});
    auto commented = compile_for_info("// a comment that moves every line of the kernel down\n\n" + k_info_kernel, {"k"});
    auto changed = compile_for_info(replace_all(k_info_kernel, "2 * y[i]", "3 * y[i]"), {"k"});
    REQUIRE(plain.ok);
    REQUIRE(commented.ok);
    REQUIRE(changed.ok);
    CHECK(plain.cubin != commented.cubin); // -lineinfo: the line table moved
    CHECK(cubin_behaviour_hash(plain.cubin) == cubin_behaviour_hash(commented.cubin));
    CHECK(cubin_behaviour_hash(plain.cubin) != cubin_behaviour_hash(changed.cubin));
}

TEST_CASE("a file that is not a CUBIN yields no resources and a whole-file hash", "[evaluator][compile]")
{
    for (std::string bytes : {std::string(), std::string("not an ELF file at all"), std::string("\x7f" "ELF\x02\x01", 6)}) {
        CubinReport report = read_cubin_resources(bytes);
        CHECK(report.kernels.empty());
        CHECK(!report.problem.empty());
        CHECK(cubin_behaviour_hash(bytes).size() == 32);
    }
    CHECK(cubin_behaviour_hash("abc") != cubin_behaviour_hash("abd"));
    auto plain = compile_for_info(k_info_kernel, {"k"});
    REQUIRE(plain.ok);
    std::string truncated = plain.cubin.substr(0, plain.cubin.size() / 2); // section table cut off
    CHECK(!read_cubin_resources(truncated).problem.empty());
}

TEST_CASE("the ptxas metric keeps every kernel: from ptxas, from the CUBIN, or from the driver", "[evaluator][compile]")
{
    KernelResources logged{"a", 40, 8, 8, 16, 1024, 0, 1, false};
    KernelResources read{"b", 32, 0, 0, 64, 0, 0, 0, true};
    Json worker{{"a", {{"registers", 40}}},
                {"c", {{"registers", 24}, {"local_bytes_per_thread", 32}, {"static_smem_bytes", 512}}},
                {"theoretical_occupancy", Json::array({0.5})}};
    Json metrics = kernel_resources_metrics({logged, read}, worker);
    REQUIRE(metrics.size() == 3);
    CHECK(metrics[0]["kernel"] == "a");
    CHECK(metrics[0]["spill_store_bytes"] == 8);
    CHECK(!metrics[0].contains("source"));
    CHECK(metrics[1]["kernel"] == "b");
    CHECK(metrics[1]["source"] == "cubin");
    CHECK(!metrics[1].contains("spill_store_bytes")); // unknown, not zero
    CHECK(metrics[2]["kernel"] == "c");
    CHECK(metrics[2]["source"] == "driver");
    CHECK(metrics[2]["registers"] == 24);
    CHECK(metrics[2]["stack_frame_bytes"] == 32);
}
