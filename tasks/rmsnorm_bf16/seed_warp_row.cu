// rmsnorm_bf16 seed: one warp per row, 16-byte vectors, shuffle reduction; rows are read twice
// (the second read mostly hits L1/L2).
/* kforge:plan
{ "params": {"WARPS": [4, 8, 16]},
  "launches": [{"kernel": "rmsnorm_warp", "grid": ["ceil_div(M, WARPS)"], "block": ["32 * WARPS"],
                "args": ["x", "w", "y", "M", "N", "eps"]}] }
*/

__device__ __forceinline__ void unpack8(uint4 v, float f[8])
{
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        float2 t = __bfloat1622float2(h[i]);
        f[2 * i] = t.x;
        f[2 * i + 1] = t.y;
    }
}

__device__ __forceinline__ uint4 pack8(const float f[8])
{
    uint4 v;
    __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i)
        h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
    return v;
}

extern "C" __global__ void __launch_bounds__(32 * WARPS)
rmsnorm_warp(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
             __nv_bfloat16* __restrict__ y, int M, int N, float eps)
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
    if (row >= M)
        return;
    const uint4* in = reinterpret_cast<const uint4*>(x + (int64_t)row * N);
    const uint4* w8 = reinterpret_cast<const uint4*>(w);
    uint4* out = reinterpret_cast<uint4*>(y + (int64_t)row * N);
    const int vectors = N / 8;

    float squares = 0.0f;
    for (int i = lane; i < vectors; i += 32) {
        float f[8];
        unpack8(in[i], f);
#pragma unroll
        for (int k = 0; k < 8; ++k)
            squares = fmaf(f[k], f[k], squares);
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        squares += __shfl_xor_sync(0xffffffffu, squares, offset);
    const float rstd = rsqrtf(squares / N + eps);

    for (int i = lane; i < vectors; i += 32) {
        float f[8], g[8];
        unpack8(in[i], f);
        unpack8(w8[i], g);
#pragma unroll
        for (int k = 0; k < 8; ++k)
            f[k] = f[k] * rstd * g[k];
        out[i] = pack8(f);
    }
}
