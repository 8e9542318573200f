// Reference for reduce_sum_f32: 1024 blocks each sum a grid-stride slice in fp64 and write one
// partial to scratch; one block then adds the partials in fp64 and rounds once to fp32.
// Deterministic: the same input always gives the same bits.
/* kforge:plan
{ "scratch": [{"name": "partials", "bytes": "8 * 1024"}],
  "launches": [{"kernel": "reduce_partials_ref", "grid": [1024], "block": [256], "args": ["x", "partials", "n"]},
               {"kernel": "reduce_final_ref", "grid": [1], "block": [256], "args": ["partials", "out"]}] }
*/

#define THREADS 256
#define BLOCKS 1024

__device__ double block_sum(double value)
{
    __shared__ double shared[THREADS];
    shared[threadIdx.x] = value;
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride)
            shared[threadIdx.x] += shared[threadIdx.x + stride];
        __syncthreads();
    }
    return shared[0];
}

extern "C" __global__ void reduce_partials_ref(const float* x, double* partials, int64_t n)
{
    double sum = 0.0;
    for (int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x; i < n; i += (int64_t)BLOCKS * THREADS)
        sum += (double)x[i];
    double total = block_sum(sum);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = total;
}

extern "C" __global__ void reduce_final_ref(const double* partials, float* out)
{
    double sum = 0.0;
    for (int i = threadIdx.x; i < BLOCKS; i += THREADS)
        sum += partials[i];
    double total = block_sum(sum);
    if (threadIdx.x == 0)
        out[0] = (float)total;
}
