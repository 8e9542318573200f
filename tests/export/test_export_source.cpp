// What -default-device made implicit becomes explicit for nvcc, and nothing else changes.
#include <catch2/catch.hpp>

#include "export/source.hpp"

namespace kforge::test {
namespace {

void check_annotation(const std::string& in, const std::string& expected,
                      const std::vector<std::string>& names)
{
    DeviceAnnotation out = annotate_default_device(in);
    INFO("input:\n" << in);
    CHECK(out.source == expected);
    CHECK(out.annotated == names);
}

} // namespace

TEST_CASE("a helper function without an execution space becomes __device__, the kernel stays",
          "[cli][export]")
{
    check_annotation("float twice(float x) { return 2 * x; }\n"
                     "extern \"C\" __global__ void k(float* y) { y[0] = twice(1); }\n",
                     "__device__ float twice(float x) { return 2 * x; }\n"
                     "extern \"C\" __global__ void k(float* y) { y[0] = twice(1); }\n",
                     {"twice"});
}

TEST_CASE("declarations that already name a space are left alone", "[cli][export]")
{
    std::string source = "__device__ float f(float x) { return x; }\n"
                         "static __device__ __forceinline__ float g(float x) { return x; }\n"
                         "__host__ __device__ float h(float x) { return x; }\n"
                         "__constant__ float weights[4];\n"
                         "__device__ int counter;\n"
                         "__global__ void __launch_bounds__(256) k() {}\n";
    check_annotation(source, source, {});
}

TEST_CASE("templates, prototypes, namespaces and extern C blocks get __device__ in the right place",
          "[cli][export]")
{
    check_annotation(
        "template <int N, typename T = float>\nT pow_n(T x) { T r = 1; for (int i = 0; i < N; ++i) "
        "r *= x; return r; }\n"
        "float later(float);\n"
        "namespace detail {\ninline float h(float x) { return x; }\n}\n"
        "extern \"C\" {\nfloat c_helper(float x) { return x; }\n__global__ void k() {}\n}\n"
        "extern \"C\" float c_single(float x) { return x; }\n"
        "[[nodiscard]] float attributed(float x) { return x; }\n",
        "template <int N, typename T = float>\n__device__ T pow_n(T x) { T r = 1; for (int i = 0; "
        "i < N; ++i) r *= x; return r; }\n"
        "__device__ float later(float);\n"
        "namespace detail {\n__device__ inline float h(float x) { return x; }\n}\n"
        "extern \"C\" {\n__device__ float c_helper(float x) { return x; }\n__global__ void k() "
        "{}\n}\n"
        "extern \"C\" __device__ float c_single(float x) { return x; }\n"
        "[[nodiscard]] __device__ float attributed(float x) { return x; }\n",
        {"pow_n", "later", "h", "c_helper", "c_single", "attributed"});
}

TEST_CASE(
    "member functions get __device__; data members, defaulted members and nested types do not",
    "[cli][export]")
{
    check_annotation(
        "struct alignas(16) V4 {\n  float a, b, c, d;\n  V4() = default;\n"
        "  float sum() const { return a + b + c + d; }\n  float (*fp)(int);\n"
        "  struct Inner { int k; int get() const { return k; } };\n};\n"
        "class C {\npublic:\n  float f() { return 1; }\nprivate:\n  float x{2};\n};\n",
        "struct alignas(16) V4 {\n  float a, b, c, d;\n  V4() = default;\n"
        "  __device__ float sum() const { return a + b + c + d; }\n  float (*fp)(int);\n"
        "  struct Inner { int k; __device__ int get() const { return k; } };\n};\n"
        "class C {\npublic:\n  __device__ float f() { return 1; }\nprivate:\n  float x{2};\n};\n",
        {"V4::sum", "Inner::get", "C::f"});
}

TEST_CASE("namespace-scope variables become device variables unless nvcc can already read them",
          "[cli][export]")
{
    check_annotation(
        "float table[4] = {1, 2, 3, 4};\nint scratch_counter;\nconst float k_scale = 2.0f;\n"
        "constexpr int k_warps = 4;\nconstexpr float k_coeffs[2] = {0.5f, 0.25f};\n"
        "typedef float real;\nusing real2 = float2;\nenum class Mode { a, b };\nstruct S;\n",
        "__device__ float table[4] = {1, 2, 3, 4};\n__device__ int scratch_counter;\nconst float "
        "k_scale = 2.0f;\n"
        "constexpr int k_warps = 4;\n__device__ constexpr float k_coeffs[2] = {0.5f, 0.25f};\n"
        "typedef float real;\nusing real2 = float2;\nenum class Mode { a, b };\nstruct S;\n",
        {"table", "scratch_counter", "k_coeffs"});
}

TEST_CASE("comments, strings, preprocessor lines and function bodies are never touched",
          "[cli][export]")
{
    std::string source = "// float fake(float x) { return x; }\n"
                         "/* float also_fake(float x) { return x; } */\n"
                         "#define MAX(a, b) ((a) > (b) ? (a) : (b))\n"
                         "#define BODY(x) { \\\n  float t(x); \\\n}\n"
                         "__global__ void k(float* y) {\n  float local(3.0f);\n  auto f = [](float "
                         "v) { return v; };\n"
                         "  const char* s = \"float in_string() {}\";\n  y[0] = f(local);\n}\n";
    check_annotation(source, source, {});
}

TEST_CASE("a function returning a struct is a function, not a class body", "[cli][export]")
{
    check_annotation(
        "struct V { float x; };\nstruct V make(float x) { V v; v.x = x; return v; }\n",
        "struct V { float x; };\n__device__ struct V make(float x) { V v; v.x = x; return v; }\n",
        {"make"});
}

} // namespace kforge::test
