// scan_u32 seed: single-pass scan with decoupled look-back (Merrill & Garland, "Single-pass Parallel
// Prefix Scan with Decoupled Look-back", 2016): every element is read once and written once (8 bytes
// moved per element, the least possible), plus 8 bytes of status per tile.
//
// Launch 1 zeroes the tile counter and the tile descriptors. Scratch is not initialised, and no tag
// scheme can tell a stale descriptor from this run's without knowing how many runs came before (an
// epoch counter kept in scratch starts as garbage too), so the zeroing launch stays; it costs a launch
// gap of about 2 us, as CUB's init kernel does. Tiles (BLOCK x ITEMS elements) are numbered by an
// atomic counter, so they start in counter order and a tile only ever waits on tiles taken earlier by
// running blocks: no deadlock whatever order the hardware schedules blocks in. Per tile:
//  - loads: warp-striped uint4 (lane l of a warp loads vectors l, l + 32, ... of the warp's segment of
//    32 x ITEMS elements: 512 contiguous bytes per instruction), all ITEMS/4 loads in flight first,
//    evict-first; a partial last tile checks bounds per vector and falls back to scalar loads;
//  - per 128-element row of the warp's segment: a 4-element serial scan in the thread, a shuffle scan
//    of the thread totals, carried from row to row; then the warp totals are scanned by warp 0;
//  - warp 0 publishes the tile aggregate as one 64-bit descriptor {value, status} (status 1 =
//    aggregate only, 2 = inclusive prefix; a single store, so no fence is needed between value and
//    flag) and looks back over the preceding tiles 32 at a time: it spins (volatile 64-bit loads,
//    __nanosleep back-off from 32 to 512 ns) until none of the 32 is invalid, adds the aggregates up to
//    the nearest inclusive prefix, or all 32 and moves the window back; then it publishes its own
//    inclusive prefix;
//  - every thread adds the tile's exclusive prefix and its warp's offset and stores its uint4 vectors
//    (streaming stores), bounds-checked in the last tile.
// Sums wrap modulo 2^32 (unsigned arithmetic), as the task defines.
//
// PIPELINE = 0: one tile per block (scan_tiles). Measured on an H100: BLOCK 512, ITEMS 24 best, 56.4 /
// 453.3 / 911.7 us on the bench shapes, 79-80% of the copy bandwidth, against CUB's 55.4 / 435.2 /
// 867.4 (~83%). A block's life there is ticket (one L2 round trip before any load can start) -> loads
// -> scan -> look-back (L2 round trips, waiting for predecessors) -> stores -> exit and relaunch; only
// the load phase keeps DRAM busy, and with 2 blocks of 512 threads per SM (60 registers) the SM's read
// stream stalls whenever both blocks are between loads.
//
// PIPELINE = 1: persistent blocks (scan_pipelined) that keep the next tile's loads in flight while they
// finish the current one. Iteration i (tile t, its loads issued in iteration i - 1):
//     thread 0 asks for ticket t' (the atomic's latency hides behind the wait for tile t's loads)
//     scan tile t in registers (the wait for its loads happens here); barrier
//     issue the loads of tile t'      <- in flight during everything below
//     warp 0: publish t's aggregate, look back, publish t's inclusive prefix; barrier
//     add the prefix, streaming stores of tile t
// so each SM has a tile set's worth of loads in flight nearly all the time (64 KB at ITEMS 16: 1024
// threads x 16 x 4 bytes; 48 KB at ITEMS 24 with 512 threads), ticket and look-back latencies included. The two tiles
// live in two register sets whose roles alternate (the loop body appears twice, so no register copy
// waits on loads). The grid is one wave: 132 SMs (H100 SXM, H200; on another GPU any grid is still
// correct, only not exactly one wave) x the blocks that fit at 64 registers (128 at ITEMS 24). Still
// no deadlock: a block takes a ticket only while running, holds at most two tiles and finishes them in
// increasing order, so the holder of the lowest unfinished tile is always working on it and its
// look-back only waits on lower tiles, which are all finished. Expected: above PIPELINE 0 on the large
// shapes (the DRAM queue no longer drains between tiles), aiming at CUB's 83% of copy and beyond.
//
// Params (8 points): BLOCK (threads), ITEMS (elements per thread, a multiple of 4), PIPELINE. CUB's
// sm_90 tuning for 4-byte sums is 128 threads x 24 items with fixed 648 / 1245 ns look-back delays; the
// earlier sweep found BLOCK 128 and ITEMS 12 dominated here (more tiles, each paying ticket and
// look-back), so they are gone.
/* kforge:plan
{ "params": {"BLOCK": [256, 512], "ITEMS": [16, 24], "PIPELINE": [0, 1]},
  "scratch": [{"name": "state", "bytes": "8 * (32 + ceil_div(n, BLOCK * ITEMS))"}],
  "launches": [{"kernel": "scan_init", "grid": ["ceil_div(32 + ceil_div(n, BLOCK * ITEMS), 256)"], "block": [256],
                "args": ["state", {"value": "32 + ceil_div(n, BLOCK * ITEMS)", "dtype": "i64"}]},
               {"kernel": "scan_tiles", "repeat": "1 - PIPELINE", "grid": ["ceil_div(n, BLOCK * ITEMS)"],
                "block": ["BLOCK"], "args": ["in", "out", "state", "n"]},
               {"kernel": "scan_pipelined", "repeat": "PIPELINE",
                "grid": ["min(ceil_div(n, BLOCK * ITEMS), 132 * ((1024 - 512 * (ITEMS > 16)) / BLOCK))"],
                "block": ["BLOCK"], "args": ["in", "out", "state", "n"]}] }
*/

#define TILE (BLOCK * ITEMS)
#define VECS (ITEMS / 4)          // uint4 per thread per tile
#define WARPS (BLOCK / 32)
#define SEGMENT (32 * ITEMS)      // elements per warp per tile
// Resident blocks per SM the pipelined kernel is built for: 1024 threads (<= 64 registers), 512 at
// ITEMS 24 (two sets of 24 values need more).
#define PIPE_BLOCKS ((ITEMS > 16 ? 512 : 1024) / BLOCK)
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

// Loads this thread's vectors of `tile` (vector k starts at element first + 128 k of the tile).
__device__ __forceinline__ void load_tile(const unsigned int* __restrict__ in, int64_t n, int64_t tile, int first,
                                          uint4 (&v)[VECS])
{
    const int64_t base = tile * TILE;
    const unsigned int* p = in + base;
    if (n - base >= TILE) {
#pragma unroll
        for (int k = 0; k < VECS; ++k)
            v[k] = __ldcs(reinterpret_cast<const uint4*>(p + first + 128 * k));
        return;
    }
    const int remaining = (int)(n - base);
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        const int e = first + 128 * k;
        if (e + 4 <= remaining) {
            v[k] = __ldcs(reinterpret_cast<const uint4*>(p + e));
        } else {
            v[k].x = e + 0 < remaining ? p[e + 0] : 0u;
            v[k].y = e + 1 < remaining ? p[e + 1] : 0u;
            v[k].z = e + 2 < remaining ? p[e + 2] : 0u;
            v[k].w = e + 3 < remaining ? p[e + 3] : 0u;
        }
    }
}

// Adds `add` to this thread's vectors of `tile` and stores them (streaming, bounds-checked at the end).
__device__ __forceinline__ void store_tile(unsigned int* __restrict__ out, int64_t n, int64_t tile, int first,
                                           const uint4 (&v)[VECS], unsigned int add)
{
    const int64_t base = tile * TILE;
    unsigned int* p = out + base;
    const bool full = n - base >= TILE;
    const int remaining = full ? TILE : (int)(n - base);
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        const int e = first + 128 * k;
        const uint4 o = make_uint4(v[k].x + add, v[k].y + add, v[k].z + add, v[k].w + add);
        if (full || e + 4 <= remaining) {
            __stcs(reinterpret_cast<uint4*>(p + e), o);
        } else {
            if (e + 0 < remaining) p[e + 0] = o.x;
            if (e + 1 < remaining) p[e + 1] = o.y;
            if (e + 2 < remaining) p[e + 2] = o.z;
            if (e + 3 < remaining) p[e + 3] = o.w;
        }
    }
}

// Warp-local inclusive scan of the warp's segment, row by row (a row = one vector per lane = 128
// elements); returns the segment total (in every lane).
__device__ __forceinline__ unsigned int scan_segment(uint4 (&v)[VECS], int lane)
{
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
    return carry;
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
        unsigned int delay = 32;
        for (;;) {
            d = i >= 0 ? desc[i] : STATUS_PREFIX;   // before tile 0: an inclusive prefix of 0
            if (__all_sync(FULL, (d & 3ull) != STATUS_INVALID))
                break;
            __nanosleep(delay);
            delay = delay < 512 ? 2 * delay : delay;
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

// Warp 0, after the barrier that follows the segment scans: the tile aggregate from the warp totals in
// warp_offset, the look-back, then warp_offset[w] = warp w's offset in the tile and *tile_prefix = the
// tile's exclusive prefix.
__device__ __forceinline__ void resolve_tile(unsigned long long* __restrict__ state, int64_t tile, int lane,
                                             unsigned int* warp_offset, unsigned int* tile_prefix)
{
    const unsigned int mine = lane < WARPS ? warp_offset[lane] : 0u;
    const unsigned int inclusive = warp_inclusive(mine, lane);
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
        warp_offset[lane] = inclusive - mine;
    if (lane == 0)
        *tile_prefix = exclusive;
}

// PIPELINE = 0: one tile per block.
extern "C" __global__ void __launch_bounds__(BLOCK)
scan_tiles(const unsigned int* __restrict__ in, unsigned int* __restrict__ out, unsigned long long* __restrict__ state,
           int64_t n)
{
#if !PIPELINE   // launched only when PIPELINE = 0: no code (and no registers) otherwise
    __shared__ long long tile_shared;
    __shared__ unsigned int warp_offset[WARPS];
    __shared__ unsigned int tile_prefix;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

    if (threadIdx.x == 0)
        tile_shared = (long long)atomicAdd(state, 1ull);
    __syncthreads();
    const int64_t tile = tile_shared;
    const int first = warp * SEGMENT + lane * 4;
    uint4 v[VECS];
    load_tile(in, n, tile, first, v);
    const unsigned int total = scan_segment(v, lane);
    if (lane == 31)
        warp_offset[warp] = total;
    __syncthreads();
    if (warp == 0)
        resolve_tile(state, tile, lane, warp_offset, &tile_prefix);
    __syncthreads();
    store_tile(out, n, tile, first, v, tile_prefix + warp_offset[warp]);
#endif
}

// One iteration of scan_pipelined: scans `tile` (its values in `cur`, loads already issued), issues the
// loads of the next tile into `nxt` and returns that tile's index (>= tiles: none). Called by every
// thread of the block. The ticket is taken one iteration ahead, not two: a block then holds at most two
// tiles, and tiles are scanned about one iteration after they are taken, in nearly the order they were
// taken, so a look-back rarely waits on a tile that another block holds but has not scanned yet.
__device__ __forceinline__ int64_t pipelined_step(const unsigned int* __restrict__ in, unsigned int* __restrict__ out,
                                                  unsigned long long* __restrict__ state, int64_t n, int64_t tiles,
                                                  int64_t tile, uint4 (&cur)[VECS], uint4 (&nxt)[VECS],
                                                  long long* ticket_slot, unsigned int* warp_offset,
                                                  unsigned int* tile_prefix)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int first = warp * SEGMENT + lane * 4;
    unsigned long long ticket = 0;
    if (threadIdx.x == 0)
        ticket = atomicAdd(state, 1ull);   // its latency hides behind the wait for cur's loads
    const unsigned int total = scan_segment(cur, lane);
    if (lane == 31)
        warp_offset[warp] = total;
    if (threadIdx.x == 0)
        *ticket_slot = (long long)ticket;
    __syncthreads();
    const int64_t next = *ticket_slot;
    if (next < tiles)
        load_tile(in, n, next, first, nxt);
    if (warp == 0)
        resolve_tile(state, tile, lane, warp_offset, tile_prefix);
    __syncthreads();
    // warp_offset[warp] and *tile_prefix are rewritten only after the next iteration's first barrier.
    store_tile(out, n, tile, first, cur, *tile_prefix + warp_offset[warp]);
    return next;
}

// PIPELINE = 1: persistent blocks, the next tile's loads in flight while the current one finishes.
extern "C" __global__ void __launch_bounds__(BLOCK, PIPE_BLOCKS)
scan_pipelined(const unsigned int* __restrict__ in, unsigned int* __restrict__ out,
               unsigned long long* __restrict__ state, int64_t n)
{
#if PIPELINE   // launched only when PIPELINE = 1
    __shared__ long long ticket[2];   // alternate slots: one may still be read while the other is written
    __shared__ unsigned int warp_offset[WARPS];
    __shared__ unsigned int tile_prefix;
    const int64_t tiles = (n + TILE - 1) / TILE;

    if (threadIdx.x == 0)
        ticket[0] = (long long)atomicAdd(state, 1ull);
    __syncthreads();
    int64_t tile = ticket[0];
    if (tile >= tiles)
        return;
    const int first = (threadIdx.x >> 5) * SEGMENT + (threadIdx.x & 31) * 4;
    uint4 a[VECS], b[VECS];
    load_tile(in, n, tile, first, a);
    // The loop body twice with the register sets' roles swapped (no copies). ticket[0] is read above
    // before the first step's barrier and written again only in the second step.
    for (;;) {
        tile = pipelined_step(in, out, state, n, tiles, tile, a, b, &ticket[1], warp_offset, &tile_prefix);
        if (tile >= tiles)
            break;
        tile = pipelined_step(in, out, state, n, tiles, tile, b, a, &ticket[0], warp_offset, &tile_prefix);
        if (tile >= tiles)
            break;
    }
#endif
}
