// `kforge export`, end to end: the real binary writes a .cu that says how the candidate was made
// and that nvcc compiles as is.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "archive/archive.hpp"
#include "archive/sample_run.hpp"
#include "core/source.hpp"
#include "export/export_harness.hpp"
#include "export/source.hpp"
#include "test_support.hpp"

namespace kforge::test {

TEST_CASE("export --best writes a file that says how it was measured, and nvcc compiles it",
          "[e2e][export][slow]")
{
    TempDir dir;
    SampleIds ids = build_sample_archive(dir / "run.kforge");
    auto out = dir / "best.cu";
    auto result =
        run_kforge({"export", (dir / "run.kforge").string(), "--best", "-o", out.string()});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(result.out.empty()); // the result is the file; the note about it goes to stderr
    CHECK_THAT(result.err, Catch::Contains("wrote " + out.string()));

    std::string text = slurp_file(out);
    RunInfo run = softmax_run_info();
    CHECK_THAT(text, Catch::Contains("// kforge export of candidate #" + std::to_string(ids.best) +
                                     " from run softmax_f32-20261121-220815"));
    CHECK_THAT(text, Catch::Contains("task         softmax_f32, spec hash " + run.task_hash));
    CHECK_THAT(text, Catch::Contains("verdict      correct, fitness 2.500x"));
    CHECK_THAT(text, Catch::Contains("measured on  NVIDIA H100 80GB HBM3, driver 580.65.06, CUDA "
                                     "toolkit 13.0, by kforge 0.1.0"));
    CHECK_THAT(text, Catch::Contains(
                         "params       BLOCK=128 (the point the times below were measured with"));
    CHECK_THAT(text,
               Catch::Contains("bench        M=65536,N=1024; M=8192,N=16384; M=512,N=262144"));
    CHECK_THAT(text, Catch::Contains("held out     M=24000,N=5000"));
    // Medians beside the reference's, per bench shape.
    CHECK_THAT(text, Catch::Contains("bench  M=65536,N=1024   16.40 us   41.00 us    2.50x"));
    CHECK_THAT(text, Catch::Contains("bench  M=512,N=262144  122.00 us  305.00 us    2.50x"));
    // The launch plan resolved with BLOCK=128: smem is BLOCK / 32 * 8 bytes.
    CHECK_THAT(text,
               Catch::Contains("softmax_rows  grid (65536, 1, 1)  block (128, 1, 1)  smem 32 B"));
    CHECK_THAT(text,
               Catch::Contains("softmax_rows  grid (512, 1, 1)  block (128, 1, 1)  smem 32 B"));
    CHECK_THAT(
        text,
        Catch::Contains(
            "args: x (float tensor), y (float tensor), M = 512 (int32_t), N = 262144 (int32_t)"));
    CHECK_THAT(text, Catch::Contains("#ifndef BLOCK\n#define BLOCK 128\n#endif\n"));
    CHECK_THAT(text, Catch::Contains(nvcc_prelude()));
    CHECK_THAT(text, Catch::Contains("__device__ MaxSum combine(MaxSum a, MaxSum b)"));
    CHECK_THAT(text, Catch::Contains("marked __device__: MaxSum::rescaled, combine, warp_reduce"));
    CHECK_THAT(text, Catch::Contains("extern \"C\" __global__ void softmax_rows("));
    check_nvcc_compiles_file(out);
}

TEST_CASE("export --candidate writes a failed candidate with the failure stated in the header",
          "[e2e][export]")
{
    TempDir dir;
    SampleIds ids = build_sample_archive(dir / "run.kforge");
    auto out = dir / "failed.cu";
    auto result = run_kforge({"export", (dir / "run.kforge").string(), "--candidate",
                              std::to_string(ids.compile_error_a), "-o", out.string()});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    CHECK_THAT(result.err, Catch::Contains("candidate #" + std::to_string(ids.compile_error_a) +
                                           " is not correct"));
    std::string text = slurp_file(out);
    CHECK_THAT(text, Catch::Contains("verdict      compile_error\n"));
    CHECK_THAT(text, Catch::Contains("WARNING      this candidate is NOT correct: kernel.cu(61): "
                                     "error: identifier \"foo\" is undefined"));
    CHECK_THAT(text,
               Catch::Contains(
                   "params       BLOCK=128 (none were measured; this is the plan's first point)"));
    CHECK_THAT(text, Catch::Contains("none: this candidate was never timed"));
}

TEST_CASE("export -o - prints the file on stdout", "[e2e][export]")
{
    TempDir dir;
    SampleIds ids = build_sample_archive(dir / "run.kforge");
    auto result = run_kforge({"export", (dir / "run.kforge").string(), "--candidate",
                              std::to_string(ids.seed), "-o", "-"});
    REQUIRE(result.exit_code == 0);
    CHECK_THAT(result.out,
               Catch::StartsWith("// kforge export of candidate #" + std::to_string(ids.seed)));
    CHECK_THAT(result.out, Catch::Contains("#define BLOCK 256\n"));
}

TEST_CASE("export -o into a folder that does not exist yet makes the folder, as task import does", "[e2e][export]")
{
    TempDir dir;
    build_sample_archive(dir / "run.kforge");
    auto out = dir / "exports" / "softmax" / "best.cu";
    auto result = run_kforge({"export", (dir / "run.kforge").string(), "--best", "-o", out.string()});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    CHECK(std::filesystem::exists(out));
}

TEST_CASE("export refuses unknown candidates, runs without a correct one, and ambiguous requests",
          "[e2e][export]")
{
    TempDir dir;
    auto archive = (dir / "run.kforge").string();
    build_sample_archive(archive);
    auto missing =
        run_kforge({"export", archive, "--candidate", "99", "-o", (dir / "x.cu").string()});
    CHECK(missing.exit_code == 3);
    CHECK_THAT(missing.err, Catch::Contains(archive + ": no candidate 99 (the archive holds 7)"));
    CHECK_FALSE(std::filesystem::exists(dir / "x.cu"));

    auto neither = run_kforge({"export", archive, "-o", (dir / "x.cu").string()});
    CHECK(neither.exit_code == 2);
    CHECK_THAT(neither.err, Catch::Contains("give one of --best or --candidate ID"));
    auto both = run_kforge(
        {"export", archive, "--best", "--candidate", "1", "-o", (dir / "x.cu").string()});
    CHECK(both.exit_code == 2);

    auto failing = (dir / "failing.kforge").string();
    {
        Archive only_failures = Archive::create(failing, softmax_run_info());
        Candidate c;
        c.source = "extern \"C\" __global__ void softmax(float* y) {}";
        c.source_hash = normalized_source_hash(c.source);
        c.evaluation.verdict = {VerdictKind::incorrect, "output y: all zeros"};
        only_failures.insert_candidate(c);
    }
    auto none = run_kforge({"export", failing, "--best", "-o", (dir / "x.cu").string()});
    CHECK(none.exit_code == 3);
    CHECK_THAT(none.err,
               Catch::Contains(failing + ": no correct candidate yet (1 candidates stored)"));

    write_text(dir / "garbage.kforge", "this is not a database");
    auto garbage = run_kforge(
        {"export", (dir / "garbage.kforge").string(), "--best", "-o", (dir / "x.cu").string()});
    CHECK(garbage.exit_code == 3);
    CHECK_THAT(garbage.err, Catch::Contains("garbage.kforge: not a kforge archive"));
}

TEST_CASE("every form the annotation handles compiles under nvcc once annotated", "[export][slow]")
{
    // Written the NVRTC way: nothing but the kernel carries an execution space.
    const std::string source = R"cu(
template <int N, typename T = float>
T pow_n(T x) { T r = 1; for (int i = 0; i < N; ++i) r *= x; return r; }
float later(float);
namespace detail {
inline float h(float x) { return x; }
}
extern "C" {
float c_helper(float x) { return x; }
}
extern "C" float c_single(float x) { return x; }
[[nodiscard]] float attributed(float x) { return x; }
struct alignas(16) V4 {
    float a, b, c, d;
    V4() = default;
    float sum() const { return a + b + c + d; }
    struct Inner { int k; int get() const { return k; } };
};
class C {
public:
    float f() { return 1; }
private:
    float x{2};
};
float table[4] = {1, 2, 3, 4};
int calls;
const float k_scale = 2.0f;
constexpr int k_warps = 4;
constexpr float k_coeffs[2] = {0.5f, 0.25f};
struct V { float x; };
struct V make(float x) { V v; v.x = x; return v; }
float later(float x) { return x * k_scale; }
extern "C" __global__ void k(float* y, int64_t n)
{
    V4 v{1, 2, 3, 4};
    C c;
    V4::Inner inner{3};
    float buf[k_warps];
    buf[0] = pow_n<3>(y[0]) + later(1) + detail::h(2) + c_helper(3) + c_single(4) + attributed(5) + v.sum() +
             c.f() + table[1] + k_coeffs[1] + make(2).x + inner.get() + INFINITY * 0 + FLT_MAX * 0 + (float)n;
    atomicAdd(&calls, 1);
    y[threadIdx.x] = buf[0];
}
)cu";
    DeviceAnnotation annotated = annotate_default_device(source);
    CHECK(annotated.annotated == std::vector<std::string>{"pow_n", "later", "h", "c_helper",
                                                          "c_single", "attributed", "V4::sum",
                                                          "Inner::get", "C::f", "table", "calls",
                                                          "k_coeffs", "make", "later"});
    TempDir dir;
    write_text(dir / "stress.cu", nvcc_prelude() + annotated.source);
    check_nvcc_compiles_file(dir / "stress.cu");
}

} // namespace kforge::test
