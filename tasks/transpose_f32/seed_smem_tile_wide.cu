// transpose_f32 seed: 32 x 32 tiles with several tiles per block along the output rows (TILES_X),
// so each block keeps more loads in flight; same padded shared-memory staging and edge guards.
// STREAM = 1 uses evict-first loads and stores (__ldcs / __stcs): the data is touched once.
/* kforge:plan
{ "params": {"TILES_X": [2, 4], "ROWS": [8, 16], "STREAM": [0, 1]},
  "launches": [{"kernel": "transpose_wide", "grid": ["ceil_div(N, 32 * TILES_X)", "ceil_div(M, 32)", 1],
                "block": [32, "ROWS", 1], "args": ["in", "out", "M", "N"]}] }
*/

#if STREAM
#define LOAD(p) __ldcs(p)
#define STORE(p, v) __stcs(p, v)
#else
#define LOAD(p) (*(p))
#define STORE(p, v) (*(p) = (v))
#endif

extern "C" __global__ void __launch_bounds__(32 * ROWS)
transpose_wide(const float* __restrict__ in, float* __restrict__ out, int M, int N)
{
    __shared__ float tile[TILES_X][32][33];
    const int n0 = blockIdx.x * 32 * TILES_X, m0 = blockIdx.y * 32;

#pragma unroll
    for (int t = 0; t < TILES_X; ++t) {
        int n = n0 + t * 32 + threadIdx.x;
        if (n < N) {
#pragma unroll
            for (int r = threadIdx.y; r < 32; r += ROWS) {
                int m = m0 + r;
                if (m < M)
                    tile[t][r][threadIdx.x] = LOAD(&in[m * N + n]);
            }
        }
    }
    __syncthreads();
    const int m = m0 + threadIdx.x;
    if (m >= M)
        return;
#pragma unroll
    for (int t = 0; t < TILES_X; ++t) {
#pragma unroll
        for (int r = threadIdx.y; r < 32; r += ROWS) {
            int nn = n0 + t * 32 + r;
            if (nn < N)
                STORE(&out[nn * M + m], tile[t][threadIdx.x][r]);
        }
    }
}
