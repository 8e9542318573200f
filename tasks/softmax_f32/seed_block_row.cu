// softmax_f32 seed: one block per row (good for long rows). Each thread keeps an online
// (max, sum) pair over a strided slice of the row; warps merge with shuffles, then warp leaders
// through shared memory. A second pass writes the output.
/* kforge:plan
{ "params": {"BLOCK": [128, 256, 512, 1024], "VEC": [1, 4]},
  "launches": [{"kernel": "softmax_block", "grid": ["M"], "block": ["BLOCK"],
                "args": ["x", "y", "M", "N"]}] }
*/

__device__ __forceinline__ void online_add(float v, float& m, float& s)
{
    if (v > m) {
        s = s * expf(m - v) + 1.0f;
        m = v;
    } else {
        s += expf(v - m);
    }
}

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2)
{
    float mn = fmaxf(m, m2);
    float a = s == 0.0f ? 0.0f : s * expf(m - mn);
    float b = s2 == 0.0f ? 0.0f : s2 * expf(m2 - mn);
    m = mn;
    s = a + b;
}

__device__ __forceinline__ void warp_merge(float& m, float& s)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, offset);
        float s2 = __shfl_xor_sync(0xffffffffu, s, offset);
        merge(m, s, m2, s2);
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_block(const float* __restrict__ x, float* __restrict__ y, int M, int N)
{
    __shared__ float shared_m[BLOCK / 32];
    __shared__ float shared_s[BLOCK / 32];
    const int row = blockIdx.x;
    const float* in = x + (int64_t)row * N;
    float* out = y + (int64_t)row * N;
    const bool vec = VEC == 4 && (N & 3) == 0;

    float m = -INFINITY, s = 0.0f;
    if (vec) {
        const float4* in4 = reinterpret_cast<const float4*>(in);
        for (int i = threadIdx.x; i < N / 4; i += BLOCK) {
            float4 v = in4[i];
            online_add(v.x, m, s);
            online_add(v.y, m, s);
            online_add(v.z, m, s);
            online_add(v.w, m, s);
        }
    } else {
        for (int i = threadIdx.x; i < N; i += BLOCK)
            online_add(in[i], m, s);
    }
    warp_merge(m, s);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) {
        shared_m[warp] = m;
        shared_s[warp] = s;
    }
    __syncthreads();
    if (warp == 0) {
        m = lane < BLOCK / 32 ? shared_m[lane] : -INFINITY;
        s = lane < BLOCK / 32 ? shared_s[lane] : 0.0f;
        warp_merge(m, s);
        if (lane == 0) {
            shared_m[0] = m;
            shared_s[0] = s;
        }
    }
    __syncthreads();
    m = shared_m[0];
    const float inv = 1.0f / shared_s[0];

    if (vec) {
        const float4* in4 = reinterpret_cast<const float4*>(in);
        float4* out4 = reinterpret_cast<float4*>(out);
        for (int i = threadIdx.x; i < N / 4; i += BLOCK) {
            float4 v = in4[i];
            out4[i] = make_float4(expf(v.x - m) * inv, expf(v.y - m) * inv, expf(v.z - m) * inv,
                                  expf(v.w - m) * inv);
        }
    } else {
        for (int i = threadIdx.x; i < N; i += BLOCK)
            out[i] = expf(in[i] - m) * inv;
    }
}
