// axpy_f32 seed: scalar grid-stride loop over at most GRID blocks of BLOCK threads (stride GRID * BLOCK:
// when n needs fewer blocks, the first pass already covers it).
/* kforge:plan
{ "params": {"BLOCK": [128, 256, 512], "GRID": [528, 2112, 8448]},
  "launches": [{"kernel": "axpy", "grid": ["min(ceil_div(n, BLOCK), GRID)"], "block": ["BLOCK"],
                "args": ["x", "y", "z", "a", "n"]}] }
*/

extern "C" __global__ void __launch_bounds__(BLOCK)
axpy(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ z, float a, int64_t n)
{
    const int64_t stride = (int64_t)GRID * BLOCK;
    for (int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x; i < n; i += stride)
        z[i] = fmaf(a, x[i], y[i]);
}
