// softmax_f32 seed: one warp per row. Pass 1 keeps an online (max, sum) pair per lane and merges
// the pairs with shuffles; pass 2 writes exp(x - max) / sum. With VEC = 4 and N % 4 == 0 the row is
// read as float4 (rows are then 16-byte aligned); otherwise element by element.
/* kforge:plan
{ "params": {"WARPS": [2, 4, 8], "VEC": [1, 4]},
  "launches": [{"kernel": "softmax_warp", "grid": ["ceil_div(M, WARPS)"], "block": ["32 * WARPS"],
                "args": ["x", "y", "M", "N"]}] }
*/

__device__ __forceinline__ void online_add(float v, float& m, float& s)
{
    if (v > m) {
        s = s * expf(m - v) + 1.0f;   // m = -inf at the start: exp(-inf) = 0
        m = v;
    } else {
        s += expf(v - m);
    }
}

// Merges (m, s) with (m2, s2); a lane that saw nothing has (-inf, 0).
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2)
{
    float mn = fmaxf(m, m2);
    float a = s == 0.0f ? 0.0f : s * expf(m - mn);
    float b = s2 == 0.0f ? 0.0f : s2 * expf(m2 - mn);
    m = mn;
    s = a + b;
}

extern "C" __global__ void __launch_bounds__(32 * WARPS)
softmax_warp(const float* __restrict__ x, float* __restrict__ y, int M, int N)
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
    if (row >= M)
        return;
    const float* in = x + (int64_t)row * N;
    float* out = y + (int64_t)row * N;
    const bool vec = VEC == 4 && (N & 3) == 0;

    float m = -INFINITY, s = 0.0f;
    if (vec) {
        const float4* in4 = reinterpret_cast<const float4*>(in);
        for (int i = lane; i < N / 4; i += 32) {
            float4 v = in4[i];
            online_add(v.x, m, s);
            online_add(v.y, m, s);
            online_add(v.z, m, s);
            online_add(v.w, m, s);
        }
    } else {
        for (int i = lane; i < N; i += 32)
            online_add(in[i], m, s);
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, offset);
        float s2 = __shfl_xor_sync(0xffffffffu, s, offset);
        merge(m, s, m2, s2);
    }
    const float inv = 1.0f / s;

    if (vec) {
        const float4* in4 = reinterpret_cast<const float4*>(in);
        float4* out4 = reinterpret_cast<float4*>(out);
        for (int i = lane; i < N / 4; i += 32) {
            float4 v = in4[i];
            out4[i] = make_float4(expf(v.x - m) * inv, expf(v.y - m) * inv, expf(v.z - m) * inv,
                                  expf(v.w - m) * inv);
        }
    } else {
        for (int i = lane; i < N; i += 32)
            out[i] = expf(in[i] - m) * inv;
    }
}
