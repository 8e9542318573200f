// Input values as a pure function of (seed, stream, element index), shared by host and device.
//
// Counter-based: element i of a tensor never depends on any other element, so the GPU fills
// gigabytes in parallel and the host can recompute any single element to debug a mismatch. `seed`
// already mixes the shape's public seed, the trial and the run's secret; `stream` separates the
// tensors of one task.
#pragma once

#include "element.cuh"

enum KfDist { KF_UNIFORM = 0, KF_NORMAL = 1, KF_RANDINT = 2, KF_BYTES = 3, KF_CONST = 4, KF_ARANGE = 5 };

struct KfGenParams {
    kf_u64 seed;
    kf_u64 stream;
    int dist;
    int dtype;
    double a;            // uniform/randint: low; normal: mean; const: value
    double b;            // uniform/randint: high; normal: std
    double hot_fraction; // bytes: share of elements set to the hot value
};

KF_HD kf_u64 kf_mix64(kf_u64 x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

KF_HD kf_u64 kf_random_bits(kf_u64 seed, kf_u64 stream, kf_u64 counter)
{
    return kf_mix64(seed ^ kf_mix64(stream * 0xd1342543de82ef95ULL + kf_mix64(counter)));
}

// Uniform in (0, 1): never exactly 0, so log() below is finite.
KF_HD double kf_uniform01(kf_u64 seed, kf_u64 stream, kf_u64 counter)
{
    return ((double)(kf_random_bits(seed, stream, counter) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// Standard normal by the Box-Muller transform of two uniforms. Host and device libm may differ in
// the last bit of log/cos; only debugging compares the two, so that is acceptable.
KF_HD double kf_standard_normal(kf_u64 seed, kf_u64 stream, kf_u64 index)
{
    double u1 = kf_uniform01(seed, stream, 2 * index);
    double u2 = kf_uniform01(seed, stream, 2 * index + 1);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

// The value of element `index`, as bits of p.dtype.
KF_HD kf_u64 kf_generate_bits(const KfGenParams& p, kf_u64 index)
{
    switch (p.dist) {
    case KF_UNIFORM:
        return kf_value_to_bits(p.a + (p.b - p.a) * kf_uniform01(p.seed, p.stream, index), p.dtype);
    case KF_NORMAL:
        return kf_value_to_bits(p.a + p.b * kf_standard_normal(p.seed, p.stream, index), p.dtype);
    case KF_RANDINT: {
        double span = p.b - p.a;
        double v = p.a + (double)(kf_i64)(span * kf_uniform01(p.seed, p.stream, index));
        return kf_value_to_bits(v, p.dtype);
    }
    case KF_BYTES: {
        kf_u64 hot = kf_mix64(p.seed ^ p.stream) & 0xff;
        if (p.hot_fraction > 0 && kf_uniform01(p.seed, p.stream ^ 0x5a5a5a5aULL, index) < p.hot_fraction)
            return hot;
        return kf_random_bits(p.seed, p.stream, index) & 0xff;
    }
    case KF_CONST:
        return kf_value_to_bits(p.a, p.dtype);
    default: // KF_ARANGE
        return kf_value_to_bits((double)index, p.dtype);
    }
}
