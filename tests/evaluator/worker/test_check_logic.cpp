// The element check, generators and conversions that the GPU worker runs, exercised on host buffers
// (the same header is compiled for the device).
#include "kf_catch.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/dtype.hpp"
#include "evaluator/worker/kernels/compare.cuh"
#include "evaluator/worker/kernels/generate.cuh"

namespace {

kf_u64 f32_bits(float f)
{
    kf_u32 u;
    std::memcpy(&u, &f, 4);
    return u;
}

// The host twin of the device comparison: count mismatches in two buffers.
size_t count_mismatches(const std::vector<float>& got, const std::vector<float>& expected, double atol, double rtol,
                        size_t& first)
{
    size_t count = 0;
    first = SIZE_MAX;
    for (size_t i = 0; i < got.size(); ++i) {
        if (!kf_element_matches(f32_bits(got[i]), f32_bits(expected[i]), KF_F32, 0, atol, rtol)) {
            ++count;
            first = std::min(first, i);
        }
    }
    return count;
}

} // namespace

TEST_CASE("element type codes match kforge's DType order", "[evaluator][check]")
{
    CHECK(static_cast<int>(kforge::DType::f16) == KF_F16);
    CHECK(static_cast<int>(kforge::DType::bf16) == KF_BF16);
    CHECK(static_cast<int>(kforge::DType::f32) == KF_F32);
    CHECK(static_cast<int>(kforge::DType::u8) == KF_U8);
    CHECK(static_cast<int>(kforge::DType::u64) == KF_U64);
    for (int t = KF_F16; t <= KF_U64; ++t)
        CHECK(kf_dtype_size(t) == static_cast<int>(kforge::dtype_size(static_cast<kforge::DType>(t))));
}

TEST_CASE("allclose accepts values within atol + rtol*|expected| and rejects the rest", "[evaluator][check]")
{
    std::vector<float> expected{1.0f, -2.0f, 1e-7f, 100.0f};
    std::vector<float> got = expected;
    size_t first = 0;
    CHECK(count_mismatches(got, expected, 1e-8, 2e-5, first) == 0);
    got[3] = 100.0f * (1 + 1.5e-5f); // inside rtol
    CHECK(count_mismatches(got, expected, 1e-8, 2e-5, first) == 0);
    got[3] = 100.0f * (1 + 3e-5f);   // outside
    CHECK(count_mismatches(got, expected, 1e-8, 2e-5, first) == 1);
    CHECK(first == 3);
}

TEST_CASE("NaN poison, NaN and infinity where the reference is finite all fail", "[evaluator][check]")
{
    kf_u64 poison = 0x7fbadbadu;
    CHECK(kf_is_nan(kf_bits_to_value(poison, KF_F32)));
    CHECK_FALSE(kf_element_matches(poison, f32_bits(0.5f), KF_F32, 0, 1.0, 1.0));
    CHECK_FALSE(kf_element_matches(f32_bits(std::numeric_limits<float>::infinity()), f32_bits(1e30f), KF_F32, 0, 1e40, 1));
    // A reference NaN or infinity must be matched exactly.
    CHECK(kf_element_matches(f32_bits(NAN), f32_bits(NAN), KF_F32, 0, 0, 0));
    CHECK_FALSE(kf_element_matches(f32_bits(1.0f), f32_bits(NAN), KF_F32, 0, 1e9, 1e9));
    CHECK(kf_element_matches(f32_bits(-INFINITY), f32_bits(-INFINITY), KF_F32, 0, 0, 0));
    CHECK_FALSE(kf_element_matches(f32_bits(INFINITY), f32_bits(-INFINITY), KF_F32, 0, 1e9, 1e9));
}

TEST_CASE("integer outputs and exact checks compare bits", "[evaluator][check]")
{
    CHECK(kf_element_matches(7, 7, KF_U32, 0, 100, 100));
    CHECK_FALSE(kf_element_matches(7, 8, KF_U32, 0, 100, 100)); // tolerances never apply to integers
    CHECK_FALSE(kf_element_matches(f32_bits(1.0f), f32_bits(1.0000001f), KF_F32, 1, 1, 1));
    CHECK(kf_element_matches(0xffffffffffffffffULL, 0xffffffffffffffffULL, KF_U64, 0, 0, 0));
}

TEST_CASE("bf16 and f16 conversions round to nearest even and keep NaN", "[evaluator][check]")
{
    CHECK(kf_float_to_bf16(1.0f) == 0x3f80);
    CHECK(kf_bf16_to_float(0x3f80) == 1.0f);
    // 1 + 2^-8 is halfway between two bf16 values: ties go to even (1.0).
    CHECK(kf_float_to_bf16(1.00390625f) == 0x3f80);
    CHECK(kf_float_to_bf16(1.01171875f) == 0x3f82);
    CHECK(kf_is_nan(kf_bf16_to_float(kf_float_to_bf16(NAN))));
    CHECK(kf_float_to_f16(1.0f) == 0x3c00);
    CHECK(kf_float_to_f16(65504.0f) == 0x7bff);
    CHECK(kf_float_to_f16(65520.0f) == 0x7c00); // rounds to infinity
    CHECK(kf_float_to_f16(5.9604644775390625e-8f) == 0x0001); // smallest subnormal
    for (unsigned h = 0; h < 0x7c00; h += 37)
        CHECK(kf_float_to_f16(kf_f16_to_float(static_cast<unsigned short>(h))) == h);
}

TEST_CASE("generated inputs are a pure function of seed, stream and index", "[evaluator][generate]")
{
    KfGenParams p{};
    p.seed = 42;
    p.stream = 7;
    p.dist = KF_NORMAL;
    p.dtype = KF_F32;
    p.a = 0;
    p.b = 4;
    std::vector<float> a(10000), b(10000);
    for (size_t i = 0; i < a.size(); ++i) {
        kf_u32 bits = static_cast<kf_u32>(kf_generate_bits(p, i));
        std::memcpy(&a[i], &bits, 4);
    }
    for (size_t i = a.size(); i-- > 0;) { // any order gives the same values
        kf_u32 bits = static_cast<kf_u32>(kf_generate_bits(p, i));
        std::memcpy(&b[i], &bits, 4);
    }
    CHECK(a == b);
    double mean = 0, var = 0;
    for (float v : a)
        mean += v;
    mean /= a.size();
    for (float v : a)
        var += (v - mean) * (v - mean);
    var /= a.size();
    CHECK(std::fabs(mean) < 0.15);
    CHECK(std::sqrt(var) == Approx(4.0).epsilon(0.05));
    p.seed = 43; // another seed gives other data
    kf_u32 other = static_cast<kf_u32>(kf_generate_bits(p, 0));
    float first;
    std::memcpy(&first, &other, 4);
    CHECK(first != a[0]);
}

TEST_CASE("the bytes generator honours hot_fraction", "[evaluator][generate]")
{
    KfGenParams p{};
    p.seed = 5;
    p.stream = 1;
    p.dist = KF_BYTES;
    p.dtype = KF_U8;
    p.hot_fraction = 0.9;
    std::vector<int> counts(256, 0);
    for (kf_u64 i = 0; i < 20000; ++i)
        ++counts[kf_generate_bits(p, i)];
    int hottest = *std::max_element(counts.begin(), counts.end());
    CHECK(hottest > 17500);
    CHECK(hottest < 18500);
    p.hot_fraction = 0;
    std::fill(counts.begin(), counts.end(), 0);
    for (kf_u64 i = 0; i < 25600; ++i)
        ++counts[kf_generate_bits(p, i)];
    CHECK(*std::max_element(counts.begin(), counts.end()) < 180); // ~100 each when uniform
}

TEST_CASE("uniform and randint stay inside their bounds", "[evaluator][generate]")
{
    KfGenParams p{};
    p.seed = 9;
    p.dist = KF_RANDINT;
    p.dtype = KF_I32;
    p.a = -3;
    p.b = 4;
    std::vector<int> seen(7, 0);
    for (kf_u64 i = 0; i < 7000; ++i) {
        int v = static_cast<int>(static_cast<kf_u32>(kf_generate_bits(p, i)));
        REQUIRE(v >= -3);
        REQUIRE(v < 4);
        ++seen[v + 3];
    }
    for (int count : seen)
        CHECK(count > 700);
    p.dist = KF_UNIFORM;
    p.dtype = KF_F64;
    for (kf_u64 i = 0; i < 1000; ++i) {
        double v = kf_bits_to_double(kf_generate_bits(p, i));
        REQUIRE(v >= -3);
        REQUIRE(v < 4);
    }
}
