// reduce_sum_f32 seed: GRID blocks stream the vector with float4 loads (grid-stride), each thread
// keeping an fp32 partial; blocks reduce by shuffles and write one partial each to scratch; a
// single block then adds the GRID partials. Two launches, deterministic (no atomics).
/* kforge:plan
{ "params": {"BLOCK": [256, 512], "GRID": [264, 528, 1056]},
  "scratch": [{"name": "partials", "bytes": "4 * GRID"}],
  "launches": [{"kernel": "reduce_partials", "grid": ["GRID"], "block": ["BLOCK"], "args": ["x", "partials", "n"]},
               {"kernel": "reduce_final", "grid": [1], "block": [1024], "args": ["partials", "out"]}] }
*/

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// Sum over a block of `threads` threads (a multiple of 32); valid in thread 0.
__device__ __forceinline__ float block_sum(float v, int threads)
{
    __shared__ float shared[32];
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0)
        shared[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < threads / 32 ? shared[threadIdx.x] : 0.0f;
        v = warp_sum(v);
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_partials(const float* __restrict__ x, float* __restrict__ partials, int64_t n)
{
    const int64_t n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const int64_t stride = (int64_t)GRID * BLOCK;
    float a = 0.0f, b = 0.0f;
    for (int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x; i < n4; i += stride) {
        float4 v = x4[i];
        a += v.x + v.y;
        b += v.z + v.w;
    }
    // The n % 4 tail: the first threads of the last block.
    if (blockIdx.x == GRID - 1 && threadIdx.x < n - n4 * 4)
        a += x[n4 * 4 + threadIdx.x];
    float total = block_sum(a + b, BLOCK);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(1024)
reduce_final(const float* __restrict__ partials, float* __restrict__ out)
{
    float v = 0.0f;
    for (int i = threadIdx.x; i < GRID; i += 1024)
        v += partials[i];
    v = block_sum(v, 1024);
    if (threadIdx.x == 0)
        out[0] = v;
}
