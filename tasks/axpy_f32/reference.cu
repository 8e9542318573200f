// Reference for axpy_f32: one element per grid-stride step, a*x + y in fp64, rounded once to fp32.
/* kforge:plan
{ "launches": [{"kernel": "axpy_ref", "grid": ["min(ceil_div(n, 256), 65536)"], "block": [256],
                "args": ["x", "y", "z", "a", "n"]}] }
*/

extern "C" __global__ void axpy_ref(const float* x, const float* y, float* z, float a, int64_t n)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        z[i] = (float)((double)a * (double)x[i] + (double)y[i]);
}
