// spmv_csr_f32 seed: merge-path SpMV (Merrill & Garland, "Merge-based parallel sparse matrix-vector
// multiplication", SC'16; the design of CUB's DeviceSpmv), so that every thread does the same work
// whatever the row lengths: the skewed16 shape's 26000-nonzero rows and 21% empty rows cost no more
// than uniform rows.
//
// The CSR walk is the merge of two sorted lists: the R row ends (row_ptr[1..R]) and the NNZ nonzero
// indices. Its R + NNZ steps are cut into tiles of TILE = THREADS * ITEMS steps, each tile into
// ITEMS steps per thread; a step either consumes a nonzero (adds vals[k] * x[col_idx[k]] to the
// running sum) or a row end (the row is done).
//  1. merge_search: one warp per tile boundary finds where the path crosses the diagonal
//     (row, nonzero) with row + nonzero = tile * TILE, by a 32-way search (about 5 rounds of
//     ballots for 4M rows), into scratch `coords`.
//  2. merge_spmv: a block stages the tile's row ends and its products vals * x (coalesced,
//     streaming loads for the matrix, cached __ldg gathers for x) in shared memory, each thread
//     searches its own diagonal there and walks its ITEMS steps, writing the rows it finishes. A
//     row cut between threads is joined by a block-wide segmented scan of the threads' carries; the
//     part of a row cut between tiles goes to scratch `carries` as (row, partial sum).
//  3. merge_fixup: one thread per tile adds its carry to y[row] with an atomic (the tile that
//     finishes the row wrote y[row] in launch 2; a row spanning many tiles gets one add per tile).
//  With PERSIST = p > 0, launch 2 runs 132 p blocks (p per SM on the 132 SMs of H100/H200): the
//  tiles are cut into 132 contiguous runs, and the p blocks b = sm + 132 m (m < p) take every p-th
//  tile of run `sm`. Blocks are dealt to SMs round-robin, so the p blocks of one SM work on adjacent
//  tiles at the same time and a banded matrix's x window (about 200 KB on banded7) is shared in
//  L1. That mapping is only a performance assumption: any block-to-SM mapping is correct.
//  PERSIST = 0 launches one block per tile.
//
// Tails and empty rows fall out of the walk (a row end with nothing consumed writes 0). Rows past
// the last tile's path do not exist: the path ends at (R, NNZ) exactly. Diagonals are 64-bit
// (R + NNZ may exceed 2^31); rows and nonzero indices fit in int.
//
// Params: THREADS {128, 256}, ITEMS {7, 11} (odd, so the threads' shared-memory reads spread over
// the banks), PERSIST {0, 4, 8} (8 x 256 threads fill an SM: 32 registers, 8-12 KB of shared
// memory per block). Shared memory 4 * (TILE + 1 + THREADS) bytes.
// Expected: bound by the L2 gather rate of x on uniform16/skewed16 like cuSPARSE (about 0.5 ms on
// H100/H200, 1.0x cuSPARSE, 2x the vector seed on skewed16); on banded7 PERSIST can beat it by
// serving x from L1.
/* kforge:plan
{ "params": {"THREADS": [128, 256], "ITEMS": [7, 11], "PERSIST": [0, 4, 8]},
  "scratch": [{"name": "coords", "bytes": "8 * (ceil_div(R + NNZ, THREADS * ITEMS) + 1)"},
              {"name": "carries", "bytes": "8 * ceil_div(R + NNZ, THREADS * ITEMS)"}],
  "launches": [
    {"kernel": "merge_search", "grid": ["ceil_div(ceil_div(R + NNZ, THREADS * ITEMS) + 1, 8)"], "block": [256],
     "args": ["row_ptr", "coords", "R", "NNZ", {"value": "ceil_div(R + NNZ, THREADS * ITEMS)", "dtype": "i32"}]},
    {"kernel": "merge_spmv",
     "grid": ["max(132 * PERSIST, (1 - min(PERSIST, 1)) * ceil_div(R + NNZ, THREADS * ITEMS))"],
     "block": ["THREADS"],
     "args": ["row_ptr", "col_idx", "vals", "x", "y", "coords", "carries", "R", "NNZ",
              {"value": "ceil_div(R + NNZ, THREADS * ITEMS)", "dtype": "i32"}]},
    {"kernel": "merge_fixup", "grid": ["ceil_div(ceil_div(R + NNZ, THREADS * ITEMS), 256)"], "block": [256],
     "args": ["carries", "y", "R", {"value": "ceil_div(R + NNZ, THREADS * ITEMS)", "dtype": "i32"}]}] }
*/

#define TILE (THREADS * ITEMS)
#define WARPS (THREADS / 32)
#define FULL 0xffffffffu

// Launch 1. Coordinate of diagonal d on the merge path: the number of row ends consumed is the
// first row r in [max(d - NNZ, 0), min(d, R)] with row_ptr[r + 1] > d - r - 1 (a row end goes
// before the nonzero with the same index), or the top of the range when there is none.
extern "C" __global__ void __launch_bounds__(256)
merge_search(const int* __restrict__ row_ptr, int2* __restrict__ coords, int R, int NNZ, int tiles)
{
    const int boundary = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (boundary > tiles)
        return;   // whole warps leave together
    const long long d = min((long long)boundary * TILE, (long long)R + NNZ);
    int lo = (int)max(d - NNZ, 0LL), hi = (int)min(d, (long long)R);
    while (lo < hi) {
        const int step = (hi - lo + 31) / 32;
        const int p = lo + lane * step;
        const bool right = p >= hi || (long long)__ldg(&row_ptr[p + 1]) > d - p - 1;
        const unsigned m = __ballot_sync(FULL, right);
        if (m == 0) {
            lo = lo + 31 * step + 1;
        } else {
            const int f = __ffs(m) - 1;
            hi = min(hi, lo + f * step);
            lo = f == 0 ? lo : lo + (f - 1) * step + 1;
        }
    }
    if (lane == 0)
        coords[boundary] = make_int2(lo, (int)(d - lo));
}

// Block-wide inclusive segmented sum over (key, value) pairs whose keys never decrease with the
// thread index; returns this thread's sum over the threads <= it that share its key.
__device__ __forceinline__ float segmented_inclusive(int key, float value, int* s_key_first, int* s_key_last,
                                                     float* s_total)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int k = __shfl_up_sync(FULL, key, o);
        const float v = __shfl_up_sync(FULL, value, o);
        if (lane >= o && k == key)
            value += v;
    }
    const int first = __shfl_sync(FULL, key, 0);
    if (lane == 31) {
        s_key_first[warp] = first;
        s_key_last[warp] = key;
        s_total[warp] = value;
    }
    __syncthreads();
    for (int w = warp - 1; w >= 0; --w) {   // earlier warps whose tail run has this key
        if (s_key_last[w] != key)
            break;
        value += s_total[w];
        if (s_key_first[w] != key)
            break;
    }
    return value;
}

// Launch 2.
extern "C" __global__ void __launch_bounds__(THREADS)
merge_spmv(const int* __restrict__ row_ptr, const int* __restrict__ col_idx, const float* __restrict__ vals,
           const float* __restrict__ x, float* __restrict__ y, const int2* __restrict__ coords,
           int2* __restrict__ carries, int R, int NNZ, int tiles)
{
    // Row ends of the tile's rows [0, nr], then the products of its nonzeros (as float bits).
    __shared__ int s_merge[TILE + 1];
    __shared__ float s_incl[THREADS];
    __shared__ int s_key_first[WARPS], s_key_last[WARPS];
    __shared__ float s_total[WARPS];

    // PERSIST = 0: tile blockIdx.x. Else run `sm` of 132 contiguous runs, every PERSIST-th tile.
    const int run = PERSIST == 0 ? 1 : (tiles + 131) / 132;
    const int sm = PERSIST == 0 ? 0 : blockIdx.x % 132;
    const int tile_begin = PERSIST == 0 ? blockIdx.x : sm * run + blockIdx.x / 132;
    const int tile_end = PERSIST == 0 ? blockIdx.x + 1 : min((sm + 1) * run, tiles);
    for (int tile = tile_begin; tile < tile_end; tile += PERSIST == 0 ? 1 : PERSIST) {
        const int2 c0 = coords[tile], c1 = coords[tile + 1];
        const int r0 = c0.x, k0 = c0.y;
        const int nr = c1.x - r0, nk = c1.y - k0;
        const int items = nr + nk;   // TILE except in the last tile

        // Stage: row ends (the one past the last row is a sentinel that no step reaches).
        for (int i = threadIdx.x; i <= nr; i += THREADS)
            s_merge[i] = r0 + 1 + i <= R ? __ldcs(&row_ptr[r0 + 1 + i]) : 0x7fffffff;
        // Stage: products; column indices first so that ITEMS gathers are in flight at once.
        int col[ITEMS];
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const int e = threadIdx.x + j * THREADS;
            col[j] = e < nk ? __ldcs(&col_idx[k0 + e]) : 0;
        }
#pragma unroll
        for (int j = 0; j < ITEMS; ++j) {
            const int e = threadIdx.x + j * THREADS;
            if (e < nk)
                s_merge[nr + 1 + e] = __float_as_int(__ldcs(&vals[k0 + e]) * __ldg(&x[col[j]]));
        }
        __syncthreads();

        // This thread's diagonal inside the tile: binary search over the staged row ends.
        const int d = min((int)threadIdx.x * ITEMS, items);
        int lo = max(d - nk, 0), hi = min(d, nr);
        while (lo < hi) {
            const int mid = (lo + hi) / 2;
            if (s_merge[mid] <= k0 + d - mid - 1)
                lo = mid + 1;
            else
                hi = mid;
        }
        int row = lo, nz = d - lo;   // tile-relative row and nonzero

        // Walk ITEMS steps. The first finished row may continue a row of earlier threads, so its
        // value waits for the scan; later finished rows are complete and written at once.
        float running = 0.0f, first_value = 0.0f;
        int first_row = -1;
        const int steps = min(ITEMS, items - d);
        for (int s = 0; s < steps; ++s) {
            if (k0 + nz < s_merge[row]) {
                running += __int_as_float(s_merge[nr + 1 + nz]);
                ++nz;
            } else {
                if (first_row < 0) {
                    first_row = row;
                    first_value = running;
                } else {
                    y[r0 + row] = running;
                }
                running = 0.0f;
                ++row;
            }
        }

        // Carries: (row, running) per thread, rows nondecreasing with the thread index.
        const float incl = segmented_inclusive(row, running, s_key_first, s_key_last, s_total);
        s_incl[threadIdx.x] = incl;
        __syncthreads();
        if (first_row >= 0)
            y[r0 + first_row] = first_value + (threadIdx.x > 0 ? s_incl[threadIdx.x - 1] : 0.0f);
        if (threadIdx.x == THREADS - 1)
            carries[tile] = make_int2(r0 + row, __float_as_int(incl));
        __syncthreads();   // s_merge and the scan's arrays are reused by the next tile
    }
}

// Launch 3. A tile's carry belongs to a row that a later tile finishes (and wrote in launch 2);
// the last tile's carry row is R (no row).
extern "C" __global__ void __launch_bounds__(256)
merge_fixup(const int2* __restrict__ carries, float* __restrict__ y, int R, int tiles)
{
    const int tile = blockIdx.x * 256 + threadIdx.x;
    if (tile >= tiles)
        return;
    const int2 c = carries[tile];
    if (c.x < R)
        atomicAdd(&y[c.x], __int_as_float(c.y));
}
