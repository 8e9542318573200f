// scan_u32 seed: single-pass scan with decoupled look-back (Merrill & Garland, "Single-pass Parallel
// Prefix Scan with Decoupled Look-back", 2016): every element is read once and written once (8 bytes
// moved per element, the least possible), plus 8 bytes of status per tile.
//
// Launch 1 zeroes the tile counter and the tile descriptors (scratch is not initialised). Launch 2:
// each block takes a tile index from an atomic counter (so tiles are numbered in the order blocks
// start running, and a block only ever waits on blocks that started before it: no deadlock whatever
// order the hardware schedules blocks in) and scans its tile of BLOCK x ITEMS elements:
//  - loads: warp-striped uint4 (lane l of a warp loads vectors l, l + 32, ... of the warp's segment of
//    32 x ITEMS elements: 512 contiguous bytes per instruction), all ITEMS/4 loads in flight first;
//    the partial last tile checks bounds per vector and falls back to scalar loads;
//  - per 128-element row of the warp's segment: a 4-element serial scan in the thread, a shuffle scan
//    of the thread totals, carried from row to row; then the warp totals are scanned by warp 0;
//  - warp 0 publishes the tile aggregate as one 64-bit descriptor {value, status} (status 1 =
//    aggregate only, 2 = inclusive prefix; a single store, so no fence is needed between value and
//    flag) and looks back over the preceding tiles 32 at a time: it spins (volatile 64-bit loads,
//    __nanosleep back-off) until none of the 32 is invalid, adds the aggregates up to the nearest
//    inclusive prefix, or all 32 and moves the window back; then it publishes its own inclusive prefix;
//  - every thread adds the tile's exclusive prefix and its warp's offset and stores its uint4 vectors
//    (streaming stores), bounds-checked in the last tile.
// Sums wrap modulo 2^32 (unsigned arithmetic), as the task defines.
//
// Params (9 points): BLOCK (threads) and ITEMS (elements per thread, a multiple of 4). CUB's sm_90
// tuning for 4-byte sums is 128 threads x 24 items. Expected: ~85-90% of DRAM copy bandwidth on the
// large shapes, on par with cub::DeviceScan::InclusiveSum; at n = 2^24 (64 MiB) the fixed cost of the
// zeroing launch and the look-back chain weigh more.
/* kforge:plan
{ "params": {"BLOCK": [128, 256, 512], "ITEMS": [12, 16, 24]},
  "scratch": [{"name": "state", "bytes": "8 * (32 + ceil_div(n, BLOCK * ITEMS))"}],
  "launches": [{"kernel": "scan_init", "grid": ["ceil_div(32 + ceil_div(n, BLOCK * ITEMS), 256)"], "block": [256],
                "args": ["state", {"value": "32 + ceil_div(n, BLOCK * ITEMS)", "dtype": "i64"}]},
               {"kernel": "scan_tiles", "grid": ["ceil_div(n, BLOCK * ITEMS)"], "block": ["BLOCK"],
                "args": ["in", "out", "state", "n"]}] }
*/

#define TILE (BLOCK * ITEMS)
#define VECS (ITEMS / 4)          // uint4 per thread
#define WARPS (BLOCK / 32)
#define SEGMENT (32 * ITEMS)      // elements per warp
#define FULL 0xffffffffu
#define STATUS_INVALID 0ull
#define STATUS_AGGREGATE 1ull
#define STATUS_PREFIX 2ull

// state[0] is the tile counter; the descriptor of tile t is state[32 + t] (value << 32 | status).
extern "C" __global__ void scan_init(unsigned long long* __restrict__ state, int64_t words)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < words)
        state[i] = 0ull;
}

__device__ __forceinline__ unsigned int warp_inclusive(unsigned int v, int lane)
{
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
        const unsigned int t = __shfl_up_sync(FULL, v, offset);
        if (lane >= offset)
            v += t;
    }
    return v;
}

__device__ __forceinline__ unsigned int warp_total(unsigned int v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(FULL, v, offset);
    return v;
}

// The exclusive prefix of tile `tile` > 0, whose aggregate is `aggregate`; called by all of warp 0.
// Publishes the aggregate first and the inclusive prefix last.
__device__ __forceinline__ unsigned int look_back(volatile unsigned long long* desc, int64_t tile,
                                                  unsigned int aggregate, int lane)
{
    if (lane == 0)
        desc[tile] = ((unsigned long long)aggregate << 32) | STATUS_AGGREGATE;
    unsigned int exclusive = 0;
    int64_t window_end = tile;   // this round examines tiles window_end - 1 - lane
    for (;;) {
        const int64_t i = window_end - 1 - lane;
        unsigned long long d;
        for (;;) {
            // Before tile 0 there is nothing: an inclusive prefix of 0.
            d = i >= 0 ? desc[i] : STATUS_PREFIX;
            if (__all_sync(FULL, (d & 3ull) != STATUS_INVALID))
                break;
            __nanosleep(100);
        }
        const unsigned int prefixes = __ballot_sync(FULL, (d & 3ull) == STATUS_PREFIX);
        const unsigned int value = (unsigned int)(d >> 32);
        if (prefixes != 0u) {
            const int nearest = __ffs(prefixes) - 1;   // lane 0 looks at the closest tile
            exclusive += warp_total(lane <= nearest ? value : 0u);
            break;
        }
        exclusive += warp_total(value);
        window_end -= 32;
    }
    if (lane == 0)
        desc[tile] = ((unsigned long long)(exclusive + aggregate) << 32) | STATUS_PREFIX;
    return exclusive;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
scan_tiles(const unsigned int* __restrict__ in, unsigned int* __restrict__ out, unsigned long long* __restrict__ state,
           int64_t n)
{
    __shared__ long long tile_shared;
    __shared__ unsigned int warp_offset[WARPS];
    __shared__ unsigned int tile_prefix;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

    if (threadIdx.x == 0)
        tile_shared = (long long)atomicAdd(state, 1ull);
    __syncthreads();
    const int64_t tile = tile_shared;
    const int64_t base = tile * TILE;
    const int remaining = n - base < TILE ? (int)(n - base) : TILE;   // elements of this tile
    const unsigned int* tile_in = in + base;
    unsigned int* tile_out = out + base;

    // Element offsets in the tile: vector k of this lane starts at first + 128 k.
    const int first = warp * SEGMENT + lane * 4;
    uint4 v[VECS];
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        const int e = first + 128 * k;
        if (e + 4 <= remaining) {
            v[k] = __ldcs(reinterpret_cast<const uint4*>(tile_in + e));
        } else {
            v[k].x = e + 0 < remaining ? tile_in[e + 0] : 0u;
            v[k].y = e + 1 < remaining ? tile_in[e + 1] : 0u;
            v[k].z = e + 2 < remaining ? tile_in[e + 2] : 0u;
            v[k].w = e + 3 < remaining ? tile_in[e + 3] : 0u;
        }
    }

    // Warp-local inclusive scan, row by row (a row = one vector per lane = 128 elements).
    unsigned int carry = 0;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        v[k].y += v[k].x;
        v[k].z += v[k].y;
        v[k].w += v[k].z;
        const unsigned int inclusive = warp_inclusive(v[k].w, lane);
        const unsigned int add = carry + inclusive - v[k].w;
        v[k].x += add;
        v[k].y += add;
        v[k].z += add;
        v[k].w += add;
        carry += __shfl_sync(FULL, inclusive, 31);
    }

    // Warp totals -> warp offsets and the tile aggregate (warp 0), then the look-back.
    if (lane == 31)
        warp_offset[warp] = carry;
    __syncthreads();
    if (warp == 0) {
        const unsigned int total = lane < WARPS ? warp_offset[lane] : 0u;
        const unsigned int inclusive = warp_inclusive(total, lane);
        const unsigned int aggregate = __shfl_sync(FULL, inclusive, 31);
        volatile unsigned long long* desc = state + 32;
        unsigned int exclusive = 0;
        if (tile == 0) {
            if (lane == 0)
                desc[0] = ((unsigned long long)aggregate << 32) | STATUS_PREFIX;
        } else {
            exclusive = look_back(desc, tile, aggregate, lane);
        }
        if (lane < WARPS)
            warp_offset[lane] = inclusive - total;
        if (lane == 0)
            tile_prefix = exclusive;
    }
    __syncthreads();

    const unsigned int add = tile_prefix + warp_offset[warp];
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        const int e = first + 128 * k;
        const uint4 o = make_uint4(v[k].x + add, v[k].y + add, v[k].z + add, v[k].w + add);
        if (e + 4 <= remaining) {
            __stcs(reinterpret_cast<uint4*>(tile_out + e), o);
        } else {
            if (e + 0 < remaining) tile_out[e + 0] = o.x;
            if (e + 1 < remaining) tile_out[e + 1] = o.y;
            if (e + 2 < remaining) tile_out[e + 2] = o.z;
            if (e + 3 < remaining) tile_out[e + 3] = o.w;
        }
    }
}
