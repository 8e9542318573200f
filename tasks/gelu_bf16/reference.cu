// Reference for gelu_bf16: one thread per element, grid-stride, computed in fp64 with erfc (no
// cancellation in the negative tail: 1 + erf(t) = erfc(-t)) and rounded to bf16 once.
/* kforge:plan
{ "launches": [{"kernel": "gelu_ref", "grid": ["min(ceil_div(n, 256), 65536)"], "block": [256],
                "args": ["x", "y", "n"]}] }
*/

extern "C" __global__ void gelu_ref(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t n)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        double v = (double)__bfloat162float(x[i]);
        double g = 0.5 * v * erfc(-v * 0.70710678118654752440);
        y[i] = __float2bfloat16_rn((float)g);
    }
}
