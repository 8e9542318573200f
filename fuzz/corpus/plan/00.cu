// Reference for softmax_f32: one block per row, three passes, fp64 accumulation and fp64 exp.
// Chosen to be obviously right, not fast: max, then sum of exp(x - max), then the quotient.
/* kforge:plan
{ "launches": [{"kernel": "softmax_ref", "grid": ["M", 1, 1], "block": [256, 1, 1],
                "args": ["x", "y", "M", "N"]}] }
*/

#define THREADS 256

__device__ double block_reduce(double value, double* shared, bool take_max)
{
    shared[threadIdx.x] = value;
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) {
            double other = shared[threadIdx.x + stride];
            shared[threadIdx.x] = take_max ? fmax(shared[threadIdx.x], other) : shared[threadIdx.x] + other;
        }
        __syncthreads();
    }
    double result = shared[0];
    __syncthreads();
    return result;
}

extern "C" __global__ void softmax_ref(const float* x, float* y, int M, int N)
{
    __shared__ double shared[THREADS];
    const long long row = blockIdx.x;
    const float* in = x + row * N;
    float* out = y + row * N;

    double row_max = -INFINITY;
    for (int i = threadIdx.x; i < N; i += THREADS)
        row_max = fmax(row_max, (double)in[i]);
    row_max = block_reduce(row_max, shared, true);

    double sum = 0.0;
    for (int i = threadIdx.x; i < N; i += THREADS)
        sum += exp((double)in[i] - row_max);
    sum = block_reduce(sum, shared, false);

    for (int i = threadIdx.x; i < N; i += THREADS)
        out[i] = (float)(exp((double)in[i] - row_max) / sum);
}
