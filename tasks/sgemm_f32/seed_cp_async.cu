// sgemm_f32 seed: register-blocked SIMT GEMM fed by a multi-stage cp.async pipeline (the structure
// of cuBLAS's sm80+ FFMA kernels, "128x128x8, stage 3"), written with the toolkit's
// <cuda_pipeline.h> primitives (cp.async without inline PTX).
//
// Compute core as in seed_warptile.cu: a BM x BN block tile, 8 x 8 outputs per thread as four
// 4 x 4 quadrants, lanes in a 4 x 8 grid (warp tile 32 x 64), four conflict-free 16-byte shared
// loads per 64 FFMAs.
//
// Copies: global -> shared directly, no register staging. B rows go as 16-byte cp.async.cg
// (bypassing L1); A is stored transposed (As[k][m], row pitch BM + 4) with 4-byte cp.async, one
// element each, lanes walking K fastest so a warp's reads are whole 32-byte sectors and its shared
// stores hit distinct banks. Rows of A past M and columns of B past N are copied from the last valid
// row/column (clamped addresses, no branch): they only reach accumulators that are never stored.
// STAGES buffers rotate: tiles t+1 ..
// t+STAGES-1 are in flight while tile t is multiplied, and one barrier per tile both publishes
// tile t and frees the buffer of tile t-1 for the next copy. Shared memory is dynamic
// (STAGES * BK * (BM + 4 + BN) * 4 bytes: 33 KB for 128 x 128 at 4 x 8, 99 KB for 128 x 256 at
// 4 x 16), above the 48 KB static limit for the deeper configurations.
//
// Rasterization: grouped by 8 tile-rows (L2 reuse of A and B panels). Tails: M, N, K are multiples
// of 16, BK divides K; nothing past M or N is stored; int indices suffice (matrices < 2^31 elements).
//
// Params: BM 128 x BN {128, 256} (256 or 512 threads), BK {8, 16}, STAGES {2, 3, 4}; registers
// capped at 128 (2 blocks of 256 threads or 1 of 512 per SM). NVRTC for sm_90a: 125-128 registers,
// no spills except 8 bytes at 128x128x16 with 3 stages (ptxas would like about 145 unconstrained,
// but that would leave one block per SM). BM 64 was dropped: it spills under its 128-register cap.
// Expected: 128 x 128, BK 8, STAGES 3-4 should be the best point, about 0.8-0.9x cuBLAS fp32 on
// H100/H200 (40-45 TFLOP/s); the deeper pipeline matters most at K = 16384.
/* kforge:plan
{ "params": {"BM": [128], "BN": [128, 256], "BK": [8, 16], "STAGES": [2, 3, 4]},
  "launches": [{"kernel": "sgemm_cp_async", "grid": ["ceil_div(M, BM) * ceil_div(N, BN)"],
                "block": ["(BM / 8) * (BN / 8)"], "smem": "STAGES * BK * (BM + 4 + BN) * 4",
                "args": ["A", "B", "C", "M", "N", "K"]}] }
*/
#include <cuda_pipeline.h>

#define THREADS ((BM / 8) * (BN / 8))
#define LM 4
#define LN 8
#define WTM (LM * 8)
#define WTN (LN * 8)
#define WARPS_N (BN / WTN)
#define AS_LD (BM + 4)
#define A_STAGE (BK * AS_LD)                         // floats per A stage
#define B_STAGE (BK * BN)                            // floats per B stage
#define A_COPIES (BM * BK / THREADS)                 // 4-byte copies per thread per tile
#define B_COPIES ((BK * BN / 4 + THREADS - 1) / THREADS)   // 16-byte copies per thread per tile
#define GROUP_M 8
#define MIN_BLOCKS (65536 / 128 / THREADS)

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
sgemm_cp_async(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    extern __shared__ __align__(16) float smem[];
    float* As = smem;                        // [STAGES][BK][AS_LD]
    float* Bs = smem + STAGES * A_STAGE;     // [STAGES][BK][BN]

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int per_group = GROUP_M * tiles_n;
    const int group = blockIdx.x / per_group;
    const int first_m = group * GROUP_M;
    const int group_rows = min(tiles_m - first_m, GROUP_M);
    const int in_group = blockIdx.x - group * per_group;
    const int m0 = (first_m + in_group % group_rows) * BM;
    const int n0 = (in_group / group_rows) * BN;

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int lm = lane / LN, ln = lane % LN;
    const int row0 = (warp / WARPS_N) * WTM + lm * 4;
    const int col0 = (warp % WARPS_N) * WTN + ln * 4;

    // A copies: element e = tid + s * THREADS of the tile is (row e / BK, k e % BK). THREADS is a
    // multiple of BK, so every slot keeps this thread's k and moves THREADS / BK rows down. Rows past
    // M are read from row M - 1 instead: they only feed accumulator rows that are never stored.
    static_assert((BM * BK) % THREADS == 0 && THREADS % BK == 0, "A copies: whole rows per slot");
    const int a_k = tid % BK, a_row = tid / BK;
    // B copies: float4 f = tid + s * THREADS is (k f / (BN / 4), column 4 * (f % (BN / 4))); columns
    // past N read the last float4 of the row instead (N % 4 == 0), feeding only unstored columns.
    const int b_k = tid / (BN / 4), b_n = (tid % (BN / 4)) * 4;
    const float* b_src = B + b_k * N + min(n0 + b_n, N - 4);

    auto issue_tile = [&](int t) {
        const int stage = t % STAGES;
        const int k0 = t * BK;
        float* as = As + stage * A_STAGE;
        float* bs = Bs + stage * B_STAGE;
#pragma unroll
        for (int s = 0; s < A_COPIES; ++s) {
            const int row = a_row + s * (THREADS / BK);
            __pipeline_memcpy_async(as + a_k * AS_LD + row, A + min(m0 + row, M - 1) * K + k0 + a_k, 4);
        }
#pragma unroll
        for (int s = 0; s < B_COPIES; ++s) {
            if ((BK * BN / 4) % THREADS == 0 || tid + s * THREADS < BK * BN / 4) {
                const int k = b_k + s * (THREADS / (BN / 4));
                __pipeline_memcpy_async(bs + k * BN + b_n, b_src + (k0 + s * (THREADS / (BN / 4))) * N, 16);
            }
        }
    };

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
            acc[i][j] = 0.0f;

    const int tiles_k = K / BK;
#pragma unroll
    for (int t = 0; t < STAGES - 1; ++t) {
        if (t < tiles_k)
            issue_tile(t);
        __pipeline_commit();   // an empty group past the end keeps the wait count uniform
    }

    for (int t = 0; t < tiles_k; ++t) {
        __pipeline_wait_prior(STAGES - 2);   // this thread's copies of tile t have landed
        __syncthreads();                     // everyone's have; everyone is done with tile t - 1
        if (t + STAGES - 1 < tiles_k)
            issue_tile(t + STAGES - 1);      // into the buffer tile t - 1 used
        __pipeline_commit();

        const float* as = As + (t % STAGES) * A_STAGE;
        const float* bs = Bs + (t % STAGES) * B_STAGE;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[8], b[8];
            float4 v;
            v = *reinterpret_cast<const float4*>(as + k * AS_LD + row0);
            a[0] = v.x, a[1] = v.y, a[2] = v.z, a[3] = v.w;
            v = *reinterpret_cast<const float4*>(as + k * AS_LD + row0 + WTM / 2);
            a[4] = v.x, a[5] = v.y, a[6] = v.z, a[7] = v.w;
            v = *reinterpret_cast<const float4*>(bs + k * BN + col0);
            b[0] = v.x, b[1] = v.y, b[2] = v.z, b[3] = v.w;
            v = *reinterpret_cast<const float4*>(bs + k * BN + col0 + WTN / 2);
            b[4] = v.x, b[5] = v.y, b[6] = v.z, b[7] = v.w;
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
    }
    __pipeline_wait_prior(0);

#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int m = m0 + row0 + (i < 4 ? i : WTM / 2 + i - 4);
        if (m >= M)
            continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int n = n0 + col0 + h * (WTN / 2);
            if (n < N)
                *reinterpret_cast<float4*>(&C[m * N + n]) =
                    make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
        }
    }
}
