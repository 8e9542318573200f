// kforge on a machine without an NVIDIA driver: everything that needs no GPU works, and what needs
// one says "no NVIDIA driver/GPU found" instead of failing to load. On a machine with a GPU the same
// commands must instead find it.
#include "kf_catch.hpp"

#include "test_support.hpp"

using namespace kforge;

TEST_CASE("kforge starts and works without the NVIDIA driver, naming what is missing", "[e2e][cli]")
{
    bool have_gpu = test::gpu_unavailable_reason().empty();
    auto help = test::run_kforge({"--help"});
    CHECK(help.exit_code == 0);
    CHECK_THAT(help.out, Catch::Contains("Exit codes"));

    auto check = test::run_kforge({"task", "check", (test::source_dir() / "tasks" / "softmax_f32.json").string()});
    CHECK(check.exit_code == 0);

    auto doctor = test::run_kforge({"doctor"});
    auto eval = test::run_kforge({"eval", (test::source_dir() / "tasks" / "softmax_f32.json").string(),
                                  (test::fixtures_dir() / "kernels" / "softmax_f32" / "good_block_row.cu").string(),
                                  "--quick"});
    if (have_gpu) {
        CHECK_THAT(doctor.out, Catch::Contains("ok    gpu"));
        CHECK(eval.exit_code == 0);
    } else {
        // Never a dynamic-loader error: the binary does not link libcuda.
        CHECK(doctor.err.find("error while loading shared libraries") == std::string::npos);
        CHECK(doctor.exit_code == 1);
        CHECK_THAT(doctor.out, Catch::Contains("no NVIDIA driver/GPU found"));
        CHECK_THAT(doctor.out, Catch::Contains("ok    nvrtc"));
        CHECK(eval.exit_code == 4);
        CHECK_THAT(eval.err, Catch::Contains("no NVIDIA driver/GPU found"));
        auto compile_only = test::run_kforge({"eval", (test::source_dir() / "tasks" / "softmax_f32.json").string(),
                                              (test::fixtures_dir() / "kernels" / "softmax_f32" / "good_block_row.cu").string(),
                                              "--compile-only", "--arch", "sm_90a"});
        CHECK(compile_only.exit_code == 0);
        CHECK_THAT(compile_only.out, Catch::Contains("compiles for sm_90a"));
    }
}
