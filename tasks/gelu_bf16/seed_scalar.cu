// gelu_bf16 seed: the plain version, one bf16 at a time, in fp32 with erfcf (accurate in both
// tails). Each block covers BLOCK * ITEMS consecutive elements, read with stride BLOCK so that
// every load instruction of a warp is 64 contiguous bytes; ITEMS > 1 keeps several 2-byte loads in
// flight per thread. Narrow loads use a small part of each memory transaction per instruction, so
// this needs many warps in flight to approach the bandwidth that seed_vec16 reaches with 16-byte
// accesses.
/* kforge:plan
{ "params": {"BLOCK": [256, 512], "ITEMS": [1, 4]},
  "launches": [{"kernel": "gelu_scalar", "grid": ["max(1, ceil_div(n, BLOCK * ITEMS))"],
                "block": ["BLOCK"], "args": ["x", "y", "n"]}] }
*/

__device__ __forceinline__ float gelu(float v)
{
    return 0.5f * v * erfcf(-v * 0.70710678f);
}

extern "C" __global__ void __launch_bounds__(BLOCK) gelu_scalar(const __nv_bfloat16* __restrict__ x,
                                                                __nv_bfloat16* __restrict__ y, int64_t n)
{
    const int64_t base = (int64_t)blockIdx.x * BLOCK * ITEMS + threadIdx.x;
    float v[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int64_t i = base + (int64_t)k * BLOCK;
        v[k] = i < n ? __bfloat162float(x[i]) : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const int64_t i = base + (int64_t)k * BLOCK;
        if (i < n)
            y[i] = __float2bfloat16_rn(gelu(v[k]));
    }
}
