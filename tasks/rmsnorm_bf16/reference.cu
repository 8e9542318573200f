// Reference for rmsnorm_bf16: one block per row, the mean of squares in fp64, each output computed
// in fp64 and rounded to bf16 once (round to nearest even).
/* kforge:plan
{ "launches": [{"kernel": "rmsnorm_ref", "grid": ["M"], "block": [256],
                "args": ["x", "w", "y", "M", "N", "eps"]}] }
*/

#define THREADS 256

extern "C" __global__ void rmsnorm_ref(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y,
                                       int M, int N, float eps)
{
    __shared__ double shared[THREADS];
    const __nv_bfloat16* in = x + (long long)blockIdx.x * N;
    __nv_bfloat16* out = y + (long long)blockIdx.x * N;

    double squares = 0.0;
    for (int i = threadIdx.x; i < N; i += THREADS) {
        double v = (double)__bfloat162float(in[i]);
        squares += v * v;
    }
    shared[threadIdx.x] = squares;
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride)
            shared[threadIdx.x] += shared[threadIdx.x + stride];
        __syncthreads();
    }
    const double rstd = 1.0 / sqrt(shared[0] / N + (double)eps);

    for (int i = threadIdx.x; i < N; i += THREADS) {
        double v = (double)__bfloat162float(in[i]) * rstd * (double)__bfloat162float(w[i]);
        out[i] = __float2bfloat16_rn((float)v);
    }
}
