// reduce_sum_f32 seed: one block per contiguous chunk of BLOCK * ITEMS * 4 elements (no grid-stride
// loop; every load is issued up front, ITEMS float4 per thread), one partial per block in scratch,
// then a single block sums the partials with a strided loop.
/* kforge:plan
{ "params": {"BLOCK": [256, 512], "ITEMS": [2, 4, 8]},
  "scratch": [{"name": "partials", "bytes": "4 * ceil_div(n, BLOCK * ITEMS * 4)"}],
  "launches": [{"kernel": "reduce_chunks", "grid": ["ceil_div(n, BLOCK * ITEMS * 4)"], "block": ["BLOCK"],
                "args": ["x", "partials", "n"]},
               {"kernel": "reduce_chunk_partials", "grid": [1], "block": [1024],
                "args": ["partials", "out", {"value": "ceil_div(n, BLOCK * ITEMS * 4)", "dtype": "i32"}]}] }
*/

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

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
reduce_chunks(const float* __restrict__ x, float* __restrict__ partials, int64_t n)
{
    const int64_t chunk = (int64_t)BLOCK * ITEMS * 4;
    const int64_t begin = (int64_t)blockIdx.x * chunk;
    float sum = 0.0f;
    if (begin + chunk <= n) {
        const float4* x4 = reinterpret_cast<const float4*>(x + begin);
        float4 v[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            v[k] = x4[k * BLOCK + threadIdx.x];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            sum += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    } else {
        for (int64_t i = begin + threadIdx.x; i < n; i += BLOCK)
            sum += x[i];
    }
    sum = block_sum(sum, BLOCK);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = sum;
}

extern "C" __global__ void __launch_bounds__(1024)
reduce_chunk_partials(const float* __restrict__ partials, float* __restrict__ out, int count)
{
    float v = 0.0f;
    for (int i = threadIdx.x; i < count; i += 1024)
        v += partials[i];
    v = block_sum(v, 1024);
    if (threadIdx.x == 0)
        out[0] = v;
}
