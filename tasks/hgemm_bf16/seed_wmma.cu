// hgemm_bf16 seed: tensor cores through the WMMA API (16 x 16 x 16 bf16 fragments, fp32
// accumulators). A block computes a BM x BN tile of C with WM x WN warps; K is consumed 32 at a
// time through shared memory (16-byte loads; rows padded by 8 elements against bank conflicts).
// B is N x K row-major, which is exactly B^T in column-major, so B tiles load as col_major
// matrix_b fragments. Since M and N are multiples of 16, each 16 x 16 output fragment is wholly
// inside or outside C: fragments outside are skipped; the others go through a per-warp fp32
// staging tile and are rounded to bf16 once.
/* kforge:plan
{ "params": {"BM": [64, 128], "BN": [64, 128], "WM": [2, 4], "WN": [2, 4]},
  "launches": [{"kernel": "hgemm_wmma", "grid": ["ceil_div(N, BN)", "ceil_div(M, BM)", 1],
                "block": ["32 * WM * WN"], "args": ["A", "B", "C", "M", "N", "K"]}] }
*/
#include <mma.h>

using namespace nvcuda;

#define BK 32
#define LDS (BK + 8)
#define WARPS (WM * WN)
#define THREADS (32 * WARPS)
#define FM (BM / WM / 16)
#define FN (BN / WN / 16)

// Copies a rows x BK tile (rows starting at `row0` of a matrix with `rows_total` rows and K columns)
// into shared memory, 8 bf16 (16 bytes) per step; out-of-range rows and columns become zeros.
__device__ __forceinline__ void load_tile(__nv_bfloat16 (*tile)[LDS], const __nv_bfloat16* src, int rows,
                                          int row0, int rows_total, int k0, int K)
{
    for (int i = threadIdx.x; i < rows * (BK / 8); i += THREADS) {
        int r = i / (BK / 8), c = (i % (BK / 8)) * 8;
        int row = row0 + r, k = k0 + c;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (row < rows_total && k < K)
            v = *reinterpret_cast<const uint4*>(src + (int64_t)row * K + k);
        *reinterpret_cast<uint4*>(&tile[r][c]) = v;
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
hgemm_wmma(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B, __nv_bfloat16* __restrict__ C,
           int M, int N, int K)
{
    __shared__ __align__(128) __nv_bfloat16 As[BM][LDS];
    __shared__ __align__(128) __nv_bfloat16 Bs[BN][LDS];
    __shared__ __align__(128) float staging[WARPS][16 * 16];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = warp / WN, wn = warp % WN;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j)
            wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tile(As, A, BM, m0, M, k0, K);
        load_tile(Bs, B, BN, n0, N, k0, K);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b[FN];
#pragma unroll
            for (int i = 0; i < FM; ++i)
                wmma::load_matrix_sync(a[i], &As[(wm * FM + i) * 16][kk], LDS);
#pragma unroll
            for (int j = 0; j < FN; ++j)
                wmma::load_matrix_sync(b[j], &Bs[(wn * FN + j) * 16][kk], LDS);
#pragma unroll
            for (int i = 0; i < FM; ++i)
#pragma unroll
                for (int j = 0; j < FN; ++j)
                    wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < FM; ++i) {
#pragma unroll
        for (int j = 0; j < FN; ++j) {
            const int m = m0 + (wm * FM + i) * 16, n = n0 + (wn * FN + j) * 16;
            if (m >= M || n >= N)
                continue;   // the same for the whole warp
            wmma::store_matrix_sync(staging[warp], acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            for (int e = lane; e < 256; e += 32)
                C[(int64_t)(m + e / 16) * N + n + e % 16] = __float2bfloat16_rn(staging[warp][e]);
            __syncwarp();
        }
    }
}
