// Reference for layernorm_f32: one block per row, two passes in fp64 (mean, then the sum of squared
// deviations), then the output. Chosen to be obviously right, not fast.
/* kforge:plan
{ "launches": [{"kernel": "layernorm_ref", "grid": ["M"], "block": [256],
                "args": ["x", "gamma", "beta", "y", "M", "N", "eps"]}] }
*/

#define THREADS 256

__device__ double block_sum(double value, double* shared)
{
    shared[threadIdx.x] = value;
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride)
            shared[threadIdx.x] += shared[threadIdx.x + stride];
        __syncthreads();
    }
    double result = shared[0];
    __syncthreads();
    return result;
}

extern "C" __global__ void layernorm_ref(const float* x, const float* gamma, const float* beta, float* y,
                                         int M, int N, float eps)
{
    __shared__ double shared[THREADS];
    const float* in = x + (long long)blockIdx.x * N;
    float* out = y + (long long)blockIdx.x * N;

    double sum = 0.0;
    for (int i = threadIdx.x; i < N; i += THREADS)
        sum += (double)in[i];
    const double mean = block_sum(sum, shared) / N;

    double squares = 0.0;
    for (int i = threadIdx.x; i < N; i += THREADS) {
        double d = (double)in[i] - mean;
        squares += d * d;
    }
    const double var = block_sum(squares, shared) / N;
    const double rstd = 1.0 / sqrt(var + (double)eps);

    for (int i = threadIdx.x; i < N; i += THREADS)
        out[i] = (float)(((double)in[i] - mean) * rstd * (double)gamma[i] + (double)beta[i]);
}
