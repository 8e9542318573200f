// histogram_u8 seed: 32 copies of the histogram per block in shared memory, one per lane index,
// laid out hist[bin * 32 + lane], so lane l's atomics always hit bank l: a warp's 32 increments
// are conflict-free whatever the bytes are (uniform bytes or one hot value).
//
// Why: with one shared histogram per block, a warp's 32 random bins fall on 32 banks unevenly (3-4
// lanes on the busiest bank), so uniform data runs at about a quarter of the shared-atomic rate:
// 50-54% of DRAM bandwidth for the seeds and for CUB on the COLD = 100 shapes. With lane copies
// every ATOMS instruction is one pass, which leaves the byte stream memory-bound; the hot value
// (COLD = 10) is no worse, since equal bins of different lanes are different words.
//
// Launch 1: GRID blocks stream the bytes with 16-byte evict-first loads (UNROLL of them in flight
// per thread, grid-stride), count them into the lane copies, then fold the 32 copies of each bin
// (reading copy (c + bin) % 32 at step c, so the 32 threads of a warp hit 32 banks) and write the
// block's 256 counts to scratch. The n % 16 tail bytes go to the last block. Launch 2: one block
// of 1024 threads adds the GRID partial histograms (four interleaved slices, then a shared sum).
// No zeroing launch, no global atomics, deterministic.
//
// Params: BLOCK {512, 1024} (32 KB of shared memory per block: 2 or 4 blocks per SM), GRID {264,
// 528} (one or two waves on 132 SMs), UNROLL {2, 4}.
// Expected: memory-bound on every shape (85-100% of the copy bandwidth; the stream is read-only,
// so it can pass the copy figure), i.e. about 1.8x CUB on uniform bytes and about 1.0-1.2x on the
// 90%-hot shape, where CUB is already near the bandwidth.
/* kforge:plan
{ "params": {"BLOCK": [512, 1024], "GRID": [264, 528], "UNROLL": [2, 4]},
  "scratch": [{"name": "partial", "bytes": "1024 * GRID"}],
  "launches": [{"kernel": "histogram_lanes", "grid": ["GRID"], "block": ["BLOCK"], "args": ["data", "partial", "n"]},
               {"kernel": "histogram_merge", "grid": [1], "block": [1024], "args": ["partial", "hist"]}] }
*/

__device__ __forceinline__ void count_word(unsigned int* mine, unsigned int w)
{
    atomicAdd(mine + ((w & 0xffu) << 5), 1u);
    atomicAdd(mine + (((w >> 8) & 0xffu) << 5), 1u);
    atomicAdd(mine + (((w >> 16) & 0xffu) << 5), 1u);
    atomicAdd(mine + ((w >> 24) << 5), 1u);
}

__device__ __forceinline__ void count_vec(unsigned int* mine, uint4 v)
{
    count_word(mine, v.x);
    count_word(mine, v.y);
    count_word(mine, v.z);
    count_word(mine, v.w);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
histogram_lanes(const uint8_t* __restrict__ data, unsigned int* __restrict__ partial, int64_t n)
{
    __shared__ unsigned int hist[256 * 32];   // hist[bin * 32 + lane]
    for (int e = threadIdx.x; e < 256 * 32; e += BLOCK)
        hist[e] = 0;
    __syncthreads();

    unsigned int* mine = hist + (threadIdx.x & 31);
    const uint4* data16 = reinterpret_cast<const uint4*>(data);
    const int64_t n16 = n / 16, stride = (int64_t)GRID * BLOCK;
    int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
    for (; i + (UNROLL - 1) * stride < n16; i += UNROLL * stride) {
        uint4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            v[u] = __ldcs(&data16[i + u * stride]);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            count_vec(mine, v[u]);
    }
    for (; i < n16; i += stride)
        count_vec(mine, __ldcs(&data16[i]));
    if (blockIdx.x == GRID - 1)
        for (int64_t t = n16 * 16 + threadIdx.x; t < n; t += BLOCK)
            atomicAdd(mine + ((unsigned int)data[t] << 5), 1u);
    __syncthreads();

    for (int bin = threadIdx.x; bin < 256; bin += BLOCK) {
        unsigned int sum = 0;
#pragma unroll 8
        for (int c = 0; c < 32; ++c)
            sum += hist[bin * 32 + ((c + bin) & 31)];
        partial[blockIdx.x * 256 + bin] = sum;
    }
}

extern "C" __global__ void __launch_bounds__(1024)
histogram_merge(const unsigned int* __restrict__ partial, unsigned int* __restrict__ hist)
{
    __shared__ unsigned int slice[4][256];
    const int bin = threadIdx.x & 255, part = threadIdx.x >> 8;
    unsigned int sum = 0;
    for (int g = part; g < GRID; g += 4)
        sum += partial[g * 256 + bin];
    slice[part][bin] = sum;
    __syncthreads();
    if (threadIdx.x < 256)
        hist[bin] = slice[0][bin] + slice[1][bin] + slice[2][bin] + slice[3][bin];
}
