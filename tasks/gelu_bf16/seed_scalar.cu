// gelu_bf16 seed: the plain version, one bf16 per thread per step of a grid-stride loop, in fp32
// with erfcf (accurate in both tails). 2-byte loads and stores leave most of each memory
// transaction's width unused per instruction, so it needs many threads in flight to approach the
// bandwidth; the grid is capped at BLOCKS blocks (each thread then takes several elements).
/* kforge:plan
{ "params": {"BLOCK": [256, 512], "BLOCKS": [4096, 65536]},
  "launches": [{"kernel": "gelu_scalar", "grid": ["max(1, min(ceil_div(n, BLOCK), BLOCKS))"],
                "block": ["BLOCK"], "args": ["x", "y", "n"]}] }
*/

__device__ __forceinline__ float gelu(float v)
{
    return 0.5f * v * erfcf(-v * 0.70710678f);
}

extern "C" __global__ void __launch_bounds__(BLOCK) gelu_scalar(const __nv_bfloat16* __restrict__ x,
                                                                __nv_bfloat16* __restrict__ y, int64_t n)
{
    const int64_t stride = (int64_t)gridDim.x * BLOCK;
    for (int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x; i < n; i += stride)
        y[i] = __float2bfloat16_rn(gelu(__bfloat162float(x[i])));
}
