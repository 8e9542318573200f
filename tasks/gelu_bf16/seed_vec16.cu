// gelu_bf16 seed: 16-byte vector loads and stores (8 bf16 in one uint4), two loads in flight per
// thread. Each block covers 2 * BLOCK chunks of 8 elements, read with stride BLOCK so that every
// load instruction of a warp is 512 contiguous bytes; both loads are issued before either result is
// used, so each thread keeps 32 bytes in flight. GELU is computed in fp32 with erfcf and rounded to
// bf16 once, 8 values per 16-byte store. The n % 8 tail elements go to the first threads of block 0.
// Tensors start 256-byte aligned, so uint4 accesses are aligned.
//
// This is the kernel of issue 20: on an H100 at n = 2^24 it runs at about 19 us, under the 20 us
// that 64 MiB take at the theoretical 3.35 TB/s, because its 32 MiB of output stay in the 50 MB L2
// and are written back after the kernel ends.
/* kforge:plan
{ "params": {"BLOCK": [128, 256, 512]},
  "launches": [{"kernel": "gelu_vec16", "grid": ["max(ceil_div(n / 8, 2 * BLOCK), 1)"], "block": ["BLOCK"],
                "args": ["x", "y", "n"]}] }
*/

__device__ __forceinline__ float gelu(float v)
{
    return 0.5f * v * erfcf(-v * 0.70710678f);
}

__device__ __forceinline__ uint4 gelu8(uint4 in)
{
    uint4 out;
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&in);
    __nv_bfloat162* o = reinterpret_cast<__nv_bfloat162*>(&out);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 t = __bfloat1622float2(h[i]);
        o[i] = __floats2bfloat162_rn(gelu(t.x), gelu(t.y));
    }
    return out;
}

extern "C" __global__ void __launch_bounds__(BLOCK) gelu_vec16(const __nv_bfloat16* __restrict__ x,
                                                               __nv_bfloat16* __restrict__ y, int64_t n)
{
    const int64_t chunks = n / 8;
    const uint4* x8 = reinterpret_cast<const uint4*>(x);
    uint4* y8 = reinterpret_cast<uint4*>(y);
    const int64_t first = (int64_t)blockIdx.x * 2 * BLOCK + threadIdx.x;
    const int64_t second = first + BLOCK;

    uint4 a = make_uint4(0, 0, 0, 0), b = make_uint4(0, 0, 0, 0);
    if (first < chunks)
        a = x8[first];
    if (second < chunks)
        b = x8[second];
    if (first < chunks)
        y8[first] = gelu8(a);
    if (second < chunks)
        y8[second] = gelu8(b);

    if (blockIdx.x == 0 && threadIdx.x < n - chunks * 8) {
        const int64_t i = chunks * 8 + threadIdx.x;
        y[i] = __float2bfloat16_rn(gelu(__bfloat162float(x[i])));
    }
}
