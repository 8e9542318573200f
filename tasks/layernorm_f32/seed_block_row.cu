// layernorm_f32 seed: one block per row, two-pass statistics in fp32 (mean; then the sum of
// squared deviations), block sums by warp shuffles plus one shared-memory step. The row is read
// three times; for the bench sizes the re-reads mostly hit L2.
/* kforge:plan
{ "params": {"BLOCK": [128, 256, 512, 1024]},
  "launches": [{"kernel": "layernorm_block", "grid": ["M"], "block": ["BLOCK"],
                "args": ["x", "gamma", "beta", "y", "M", "N", "eps"]}] }
*/

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// Sum over the block; every thread gets the result.
__device__ __forceinline__ float block_sum(float v, float* shared)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    v = warp_sum(v);
    if (lane == 0)
        shared[warp] = v;
    __syncthreads();
    v = lane < BLOCK / 32 ? shared[lane] : 0.0f;
    v = warp_sum(v);
    __syncthreads();   // shared is reused by the next call
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
layernorm_block(const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
                float* __restrict__ y, int M, int N, float eps)
{
    __shared__ float shared[32];
    const float* in = x + (int64_t)blockIdx.x * N;
    float* out = y + (int64_t)blockIdx.x * N;

    float sum = 0.0f;
    for (int i = threadIdx.x; i < N; i += BLOCK)
        sum += in[i];
    const float mean = block_sum(sum, shared) / N;

    float squares = 0.0f;
    for (int i = threadIdx.x; i < N; i += BLOCK) {
        float d = in[i] - mean;
        squares = fmaf(d, d, squares);
    }
    const float rstd = rsqrtf(block_sum(squares, shared) / N + eps);

    for (int i = threadIdx.x; i < N; i += BLOCK)
        out[i] = fmaf((in[i] - mean) * rstd, gamma[i], beta[i]);
}
