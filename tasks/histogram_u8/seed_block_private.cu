// histogram_u8 seed: GRID blocks each build a private 256-bin histogram in shared memory from a
// grid-stride share of the bytes (16 bytes per load, a scalar tail), and write it to scratch; a
// second launch adds the GRID histograms bin by bin. No global atomics, no zeroing launch.
/* kforge:plan
{ "params": {"BLOCK": [256, 512, 1024], "GRID": [264, 528, 1056]},
  "scratch": [{"name": "partial", "bytes": "1024 * GRID"}],
  "launches": [{"kernel": "histogram_blocks", "grid": ["GRID"], "block": ["BLOCK"], "args": ["data", "partial", "n"]},
               {"kernel": "histogram_merge", "grid": [1], "block": [256], "args": ["partial", "hist"]}] }
*/

__device__ __forceinline__ void count_word(unsigned int* local, unsigned int w)
{
    atomicAdd(&local[w & 0xffu], 1u);
    atomicAdd(&local[(w >> 8) & 0xffu], 1u);
    atomicAdd(&local[(w >> 16) & 0xffu], 1u);
    atomicAdd(&local[w >> 24], 1u);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
histogram_blocks(const uint8_t* __restrict__ data, unsigned int* __restrict__ partial, int64_t n)
{
    __shared__ unsigned int local[256];
    for (int b = threadIdx.x; b < 256; b += BLOCK)
        local[b] = 0;
    __syncthreads();

    const int64_t n16 = n / 16;
    const uint4* data16 = reinterpret_cast<const uint4*>(data);
    for (int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x; i < n16; i += (int64_t)GRID * BLOCK) {
        uint4 v = data16[i];
        count_word(local, v.x);
        count_word(local, v.y);
        count_word(local, v.z);
        count_word(local, v.w);
    }
    if (blockIdx.x == GRID - 1 && threadIdx.x < n - n16 * 16)
        atomicAdd(&local[data[n16 * 16 + threadIdx.x]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += BLOCK)
        partial[blockIdx.x * 256 + b] = local[b];
}

extern "C" __global__ void __launch_bounds__(256)
histogram_merge(const unsigned int* __restrict__ partial, unsigned int* __restrict__ hist)
{
    unsigned int sum = 0;
    for (int g = 0; g < GRID; ++g)
        sum += partial[g * 256 + threadIdx.x];
    hist[threadIdx.x] = sum;
}
