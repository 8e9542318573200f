// scan_u32 seed, reduce-then-scan in three launches with tiles of BLOCK * ITEMS elements:
// (1) per-tile sums (coalesced strided loads, warp-shuffle sums); (2) one block turns the sums into
// exclusive tile offsets; (3) each block stages its tile in shared memory, every thread scans ITEMS
// consecutive elements serially, a warp-shuffle block scan of the thread totals gives each thread
// its offset, and the tile is written back coalesced.
/* kforge:plan
{ "params": {"BLOCK": [256, 512], "ITEMS": [4, 8, 16]},
  "scratch": [{"name": "sums", "bytes": "4 * ceil_div(n, BLOCK * ITEMS)"}],
  "launches": [{"kernel": "scan_reduce", "grid": ["ceil_div(n, BLOCK * ITEMS)"], "block": ["BLOCK"],
                "args": ["in", "sums", "n"]},
               {"kernel": "scan_spine", "grid": [1], "block": [1024], "args": ["sums", "ceil_div(n, BLOCK * ITEMS)"]},
               {"kernel": "scan_down", "grid": ["ceil_div(n, BLOCK * ITEMS)"], "block": ["BLOCK"],
                "args": ["in", "out", "sums", "n"]}] }
*/

#define TILE (BLOCK * ITEMS)
#define PAD(i) ((i) + (i) / 32)
#define FULL 0xffffffffu

__device__ __forceinline__ unsigned int warp_inclusive(unsigned int v)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
        unsigned int t = __shfl_up_sync(FULL, v, offset);
        if (lane >= offset)
            v += t;
    }
    return v;
}

// Exclusive scan of one value per thread over `threads` threads (a multiple of 32, at most 1024);
// `total` receives the block's sum. Every thread of the block must call it.
__device__ __forceinline__ unsigned int block_exclusive(unsigned int v, int threads, unsigned int& total)
{
    __shared__ unsigned int warp_offsets[32];
    __shared__ unsigned int block_total;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned int inclusive = warp_inclusive(v);
    if (lane == 31)
        warp_offsets[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        unsigned int w = lane < threads / 32 ? warp_offsets[lane] : 0u;
        unsigned int wi = warp_inclusive(w);
        if (lane < threads / 32)
            warp_offsets[lane] = wi - w;
        if (lane == 31)
            block_total = wi;
    }
    __syncthreads();
    const unsigned int result = warp_offsets[warp] + inclusive - v;
    total = block_total;
    __syncthreads();   // the shared arrays may be reused by the next call
    return result;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
scan_reduce(const unsigned int* __restrict__ in, unsigned int* __restrict__ sums, int64_t n)
{
    const int64_t base = (int64_t)blockIdx.x * TILE;
    unsigned int sum = 0;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        int64_t i = base + k * BLOCK + threadIdx.x;
        if (i < n)
            sum += in[i];
    }
    unsigned int total;
    block_exclusive(sum, BLOCK, total);
    if (threadIdx.x == 0)
        sums[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(1024)
scan_spine(unsigned int* __restrict__ sums, int count)
{
    unsigned int carry = 0;
    for (int base = 0; base < count; base += 1024) {
        int i = base + threadIdx.x;
        unsigned int v = i < count ? sums[i] : 0u;
        unsigned int total;
        unsigned int exclusive = block_exclusive(v, 1024, total);
        if (i < count)
            sums[i] = carry + exclusive;
        carry += total;
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
scan_down(const unsigned int* __restrict__ in, unsigned int* __restrict__ out, const unsigned int* __restrict__ sums,
          int64_t n)
{
    __shared__ unsigned int tile[PAD(TILE)];
    const int64_t base = (int64_t)blockIdx.x * TILE;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        int e = k * BLOCK + threadIdx.x;
        tile[PAD(e)] = base + e < n ? in[base + e] : 0u;
    }
    __syncthreads();

    unsigned int values[ITEMS];
    unsigned int running = 0;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        running += tile[PAD(threadIdx.x * ITEMS + k)];
        values[k] = running;
    }
    unsigned int total;
    const unsigned int offset = sums[blockIdx.x] + block_exclusive(running, BLOCK, total);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k)
        tile[PAD(threadIdx.x * ITEMS + k)] = offset + values[k];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        int e = k * BLOCK + threadIdx.x;
        if (base + e < n)
            out[base + e] = tile[PAD(e)];
    }
}
