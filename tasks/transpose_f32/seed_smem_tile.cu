// transpose_f32 seed: TILE x TILE tiles staged through shared memory (one column of padding
// avoids bank conflicts), so both the reads of `in` and the writes of `out` are coalesced.
// A block of TILE x ROWS threads moves a tile in TILE / ROWS steps; edge tiles are guarded.
// STREAM = 1 reads and writes with evict-first hints (__ldcs / __stcs): every byte is touched once,
// so L2 need not keep it.
//
// GROUP sets the order in which the tiles run (the grid is one-dimensional and each block decodes its
// tile). A tile alone reads TILE runs of 4 TILE bytes from input rows and writes TILE runs of 4 TILE
// bytes into output rows; what DRAM sees is the union over the ~1000 blocks resident at once. GROUP = 1
// is the classic order (tiles along an input row band first): the resident blocks read long runs of a
// few input rows but write 128-256 B pieces into thousands of output rows, whose neighbours are written
// one band (M=2048 x N=131072: 16 MB of output) later, so each piece likely costs a DRAM page opening
// of its own (the hypothesis behind GROUP; the sweep decides). With GROUP = G the blocks walk G tile
// rows down first, then the next tile column (the GEMM-style grouped raster): the resident set covers
// about G x (1000 / G) tiles, so reads come in runs of (1000 / G) x 4 TILE bytes and writes in runs of
// 4 G TILE bytes (G = 16, TILE 32: 2 KB writes and 8 KB reads instead of 128 B and 128 KB). Measured
// on an H100 before GROUP (order 1): 180.5 / 729.2 / 736.0 us on the bench shapes, ~98% of the copy
// bandwidth, against torch.compile's 193.2 / 733.8 / 728.9; the grouped order is meant to remove the
// wide shape's extra 1%. ROWS 16 (the fewest loads in flight per SM) is gone to keep the sweep at 16
// points.
/* kforge:plan
{ "params": {"TILE": [32, 64], "ROWS": [4, 8], "STREAM": [0, 1], "GROUP": [1, 16]},
  "launches": [{"kernel": "transpose_tile", "grid": ["ceil_div(N, TILE) * ceil_div(M, TILE)"],
                "block": ["TILE", "ROWS", 1], "args": ["in", "out", "M", "N"]}] }
*/

#if STREAM
#define LOAD(p) __ldcs(p)
#define STORE(p, v) __stcs(p, v)
#else
#define LOAD(p) (*(p))
#define STORE(p, v) (*(p) = (v))
#endif

extern "C" __global__ void __launch_bounds__(TILE * ROWS)
transpose_tile(const float* __restrict__ in, float* __restrict__ out, int M, int N)
{
    __shared__ float tile[TILE][TILE + 1];
    // Grouped raster: GROUP tile rows (along M) per group, walked tile row first.
    const int tiles_n = (N + TILE - 1) / TILE, tiles_m = (M + TILE - 1) / TILE;
    const int per_group = GROUP * tiles_n;
    const int group = blockIdx.x / per_group;
    const int first = group * GROUP;
    const int height = tiles_m - first < GROUP ? tiles_m - first : GROUP;
    const int rank = blockIdx.x - group * per_group;
    const int n0 = (rank / height) * TILE, m0 = (first + rank % height) * TILE;

    const int n = n0 + threadIdx.x;
    if (n < N) {
#pragma unroll
        for (int r = threadIdx.y; r < TILE; r += ROWS) {
            int m = m0 + r;
            if (m < M)
                tile[r][threadIdx.x] = LOAD(&in[m * N + n]);
        }
    }
    __syncthreads();
    const int m = m0 + threadIdx.x;
    if (m < M) {
#pragma unroll
        for (int r = threadIdx.y; r < TILE; r += ROWS) {
            int nn = n0 + r;
            if (nn < N)
                STORE(&out[nn * M + m], tile[threadIdx.x][r]);
        }
    }
}
