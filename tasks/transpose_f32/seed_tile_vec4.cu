// transpose_f32 seed: 64 x 64 tiles per block of 256 threads with 16-byte global loads and stores on
// both sides, staged through four 32 x 33 shared sub-tiles, in a grouped tile order.
//
// Loads: thread t takes row t / 8 and float4 column t % 8 of each 32 x 32 sub-tile (a warp reads four
// rows x 128 contiguous bytes per instruction, 4 float4 loads per thread all in flight: 16 KB per
// block, 128 KB per SM at 8 blocks). Stores: thread t writes output row t / 8 of each sub-tile, four
// consecutive elements built from four shared rows (a warp writes four output rows x 128 bytes per
// instruction). With the row pitch of 33 words both phases are free of bank conflicts: element (r, c)
// of a sub-tile sits in bank (r + c) % 32, the load phase's lanes touch r + 4q + i for r < 4, q < 8 and
// the store phase's 4q + i + c for q < 8, c < 4: 32 distinct banks each time. The 16-byte accesses need
// 16-byte aligned rows (N % 4 == 0 for loads, M % 4 == 0 for stores) and whole tiles; edge tiles and
// other pitches (the held-out 10000 x 30001 and 131071 x 2047) take a scalar path with guards (lanes
// along the contiguous dimension, still coalesced and conflict-free), chosen per block and per side.
//
// Against seed_smem_tile: a quarter of the global memory instructions, and a tile is 64 x 64 (256-byte
// runs on both sides). The tile order is seed_smem_tile's grouped raster (GROUP tile rows walked first,
// so the blocks resident at once write runs of 256 GROUP bytes into each output row instead of 256-byte
// pieces, and read runs of about (1000 / GROUP) x 256 bytes); see there. STREAM = 1: evict-first
// __ldcs / __stcs. Params (4 points): GROUP {1, 16}, STREAM {0, 1}. Expected: at or above
// seed_smem_tile's best (~98% of the copy bandwidth on the bench shapes), the gain from GROUP on the
// 2048 x 131072 shape.
/* kforge:plan
{ "params": {"GROUP": [1, 16], "STREAM": [0, 1]},
  "launches": [{"kernel": "transpose_vec4", "grid": ["ceil_div(N, 64) * ceil_div(M, 64)"], "block": [256],
                "args": ["in", "out", "M", "N"]}] }
*/

#if STREAM
#define LOAD(p) __ldcs(p)
#define STORE(p, v) __stcs(p, v)
#else
#define LOAD(p) (*(p))
#define STORE(p, v) (*(p) = (v))
#endif

extern "C" __global__ void __launch_bounds__(256)
transpose_vec4(const float* __restrict__ in, float* __restrict__ out, int M, int N)
{
    __shared__ float sub[2][2][32][33];   // [m half][n half][m % 32][n % 32]
    const int tiles_n = (N + 63) / 64, tiles_m = (M + 63) / 64;
    const int per_group = GROUP * tiles_n;
    const int group = blockIdx.x / per_group;
    const int first = group * GROUP;
    const int height = tiles_m - first < GROUP ? tiles_m - first : GROUP;
    const int rank = blockIdx.x - group * per_group;
    const int n0 = (rank / height) * 64, m0 = (first + rank % height) * 64;
    const bool whole = m0 + 64 <= M && n0 + 64 <= N;
    const int t = threadIdx.x;

    if (whole && (N & 3) == 0) {
        const int r = t >> 3, q = t & 7;
        float4 v[4];
#pragma unroll
        for (int s = 0; s < 4; ++s)
            v[s] = LOAD(reinterpret_cast<const float4*>(in + (m0 + 32 * (s >> 1) + r) * N + n0 + 32 * (s & 1) + 4 * q));
#pragma unroll
        for (int s = 0; s < 4; ++s) {
            float* row = sub[s >> 1][s & 1][r];
            row[4 * q + 0] = v[s].x;
            row[4 * q + 1] = v[s].y;
            row[4 * q + 2] = v[s].z;
            row[4 * q + 3] = v[s].w;
        }
    } else {
        const int c = t & 63, n = n0 + c;
        if (n < N) {
#pragma unroll 4
            for (int r = t >> 6; r < 64; r += 4)
                if (m0 + r < M)
                    sub[r >> 5][c >> 5][r & 31][c & 31] = LOAD(in + (m0 + r) * N + n);
        }
    }
    __syncthreads();
    if (whole && (M & 3) == 0) {
        const int c = t >> 3, q = t & 7;
#pragma unroll
        for (int s = 0; s < 4; ++s) {
            float (*tile)[33] = sub[s >> 1][s & 1];
            const float4 o = make_float4(tile[4 * q][c], tile[4 * q + 1][c], tile[4 * q + 2][c], tile[4 * q + 3][c]);
            STORE(reinterpret_cast<float4*>(out + (n0 + 32 * (s & 1) + c) * M + m0 + 32 * (s >> 1) + 4 * q), o);
        }
    } else {
        const int r = t & 63, m = m0 + r;
        if (m < M) {
#pragma unroll 4
            for (int c = t >> 6; c < 64; c += 4)
                if (n0 + c < N)
                    STORE(out + (n0 + c) * M + m, sub[r >> 5][c >> 5][r & 31][c & 31]);
        }
    }
}
