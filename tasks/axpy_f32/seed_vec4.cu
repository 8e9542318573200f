// axpy_f32 seed: 16-byte vector loads and stores. Each block covers BLOCK * UNROLL float4s (a
// contiguous span, read with stride BLOCK so every load instruction is coalesced); the n % 4 tail
// elements go to the first threads of block 0. Tensors start 256-byte aligned, so float4 is safe.
/* kforge:plan
{ "params": {"BLOCK": [128, 256, 512], "UNROLL": [1, 2, 4]},
  "launches": [{"kernel": "axpy_vec4", "grid": ["max(ceil_div(n / 4, BLOCK * UNROLL), 1)"], "block": ["BLOCK"],
                "args": ["x", "y", "z", "a", "n"]}] }
*/

extern "C" __global__ void __launch_bounds__(BLOCK)
axpy_vec4(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ z, float a, int64_t n)
{
    const int64_t n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const float4* y4 = reinterpret_cast<const float4*>(y);
    float4* z4 = reinterpret_cast<float4*>(z);
    const int64_t base = (int64_t)blockIdx.x * BLOCK * UNROLL + threadIdx.x;

    float4 xv[UNROLL], yv[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        int64_t i = base + (int64_t)u * BLOCK;
        if (i < n4) {
            xv[u] = x4[i];
            yv[u] = y4[i];
        }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        int64_t i = base + (int64_t)u * BLOCK;
        if (i < n4)
            z4[i] = make_float4(fmaf(a, xv[u].x, yv[u].x), fmaf(a, xv[u].y, yv[u].y),
                                fmaf(a, xv[u].z, yv[u].z), fmaf(a, xv[u].w, yv[u].w));
    }
    if (blockIdx.x == 0 && threadIdx.x < n - n4 * 4) {
        int64_t i = n4 * 4 + threadIdx.x;
        z[i] = fmaf(a, x[i], y[i]);
    }
}
