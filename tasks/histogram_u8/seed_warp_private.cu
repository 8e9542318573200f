// histogram_u8 seed for high contention: every warp keeps its own 256-bin histogram in shared
// memory (so a hot byte value only collides within a warp), the block sums its warps' histograms
// into scratch, and a second launch adds the per-block histograms.
/* kforge:plan
{ "params": {"BLOCK": [256, 512], "GRID": [264, 528]},
  "scratch": [{"name": "partial", "bytes": "1024 * GRID"}],
  "launches": [{"kernel": "histogram_warps", "grid": ["GRID"], "block": ["BLOCK"], "args": ["data", "partial", "n"]},
               {"kernel": "histogram_merge", "grid": [1], "block": [256], "args": ["partial", "hist"]}] }
*/

#define WARPS (BLOCK / 32)

__device__ __forceinline__ void count_word(unsigned int* local, unsigned int w)
{
    atomicAdd(&local[w & 0xffu], 1u);
    atomicAdd(&local[(w >> 8) & 0xffu], 1u);
    atomicAdd(&local[(w >> 16) & 0xffu], 1u);
    atomicAdd(&local[w >> 24], 1u);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
histogram_warps(const uint8_t* __restrict__ data, unsigned int* __restrict__ partial, int64_t n)
{
    __shared__ unsigned int local[WARPS][256];
    for (int e = threadIdx.x; e < WARPS * 256; e += BLOCK)
        (&local[0][0])[e] = 0;
    __syncthreads();

    unsigned int* mine = local[threadIdx.x / 32];
    const int64_t n4 = n / 4;
    const unsigned int* data4 = reinterpret_cast<const unsigned int*>(data);
    for (int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x; i < n4; i += (int64_t)GRID * BLOCK)
        count_word(mine, data4[i]);
    if (blockIdx.x == GRID - 1 && threadIdx.x < n - n4 * 4)
        atomicAdd(&mine[data[n4 * 4 + threadIdx.x]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += BLOCK) {
        unsigned int sum = 0;
        for (int w = 0; w < WARPS; ++w)
            sum += local[w][b];
        partial[blockIdx.x * 256 + b] = sum;
    }
}

extern "C" __global__ void __launch_bounds__(256)
histogram_merge(const unsigned int* __restrict__ partial, unsigned int* __restrict__ hist)
{
    unsigned int sum = 0;
    for (int g = 0; g < GRID; ++g)
        sum += partial[g * 256 + threadIdx.x];
    hist[threadIdx.x] = sum;
}
