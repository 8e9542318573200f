// Reference for jacobi2d_f32: every step in fp64, one step per launch. The first step reads the
// fp32 input into fp64 scratch `a`; the next T - 1 steps ping-pong between `a` and `b` (the plan
// swaps the two names after each launch); the last launch rounds step T, which is in `b` when
// T - 1 is odd and in `a` otherwise, to fp32.
/* kforge:plan
{ "scratch": [{"name": "a", "bytes": "8 * NX * NY"}, {"name": "b", "bytes": "8 * NX * NY"}],
  "launches": [
    {"kernel": "jacobi_first_ref", "grid": ["ceil_div(NX * NY, 256)"], "block": [256],
     "args": ["u_in", "a", "NX", "NY"]},
    {"kernel": "jacobi_step_ref", "grid": ["ceil_div(NX * NY, 256)"], "block": [256],
     "args": ["a", "b", "NX", "NY"], "repeat": "T - 1", "swap": ["a", "b"]},
    {"kernel": "jacobi_store_ref", "grid": ["ceil_div(NX * NY, 256)"], "block": [256],
     "args": ["a", "b", "u_out", "NX", "NY", "(T - 1) % 2"]}] }
*/

template <typename In>
__device__ void step(const In* src, double* dst, int NX, int NY)
{
    const long long cell = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (cell >= (long long)NX * NY)
        return;
    const int i = (int)(cell / NX), j = (int)(cell % NX);
    if (i == 0 || j == 0 || i == NY - 1 || j == NX - 1)
        dst[cell] = (double)src[cell];
    else
        dst[cell] = 0.25 * ((double)src[cell - NX] + (double)src[cell + NX] + (double)src[cell - 1] +
                            (double)src[cell + 1]);
}

extern "C" __global__ void jacobi_first_ref(const float* u_in, double* a, int NX, int NY)
{
    step(u_in, a, NX, NY);
}

extern "C" __global__ void jacobi_step_ref(const double* src, double* dst, int NX, int NY)
{
    step(src, dst, NX, NY);
}

extern "C" __global__ void jacobi_store_ref(const double* a, const double* b, float* u_out, int NX, int NY,
                                            int result_in_b)
{
    const long long cell = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (cell < (long long)NX * NY)
        u_out[cell] = (float)(result_in_b ? b[cell] : a[cell]);
}
