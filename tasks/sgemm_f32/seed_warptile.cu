// sgemm_f32 seed: the classic register-blocked SIMT GEMM (the CUTLASS SIMT sgemm structure).
//
// Block tile BM x BN, K consumed BK at a time; every thread owns an 8 x 8 patch of C made of four
// 4 x 4 quadrants (rows r..r+3 and r+WTM/2..; columns c..c+3 and c+WTN/2..), so each k step is
// four 16-byte shared loads (two of A, two of B) feeding 64 FFMAs: the FFMA pipe, not shared
// memory, is the limit. Lanes form an LM x (32/LM) grid inside a warp (warp tile 32x64 or 64x32):
// the lanes of a warp read only LM (resp. 32/LM) distinct, contiguous float4s of A (resp. B) per
// step, so the loads are broadcasts without bank conflicts.
//
// Global -> shared: A is read with float4 loads along K and stored transposed (As[k][m], row pitch
// BM + 4 so the four scalar stores of a float4 spread over the banks); B is copied as float4 rows.
// Double buffering with register staging: the next tile's global loads are issued before the
// current tile's FFMAs and written to the other shared buffer after them, so one barrier per tile
// suffices and DRAM/L2 latency hides behind 8 * BK FFMAs per thread.
//
// Rasterization: the 1-D grid walks tiles in groups of 8 tile-rows (all N tiles of 8 A panels), so
// blocks running together share A panels and B panels in L2.
// Tails: M, N, K are multiples of 16. Rows of A past M and columns of B past N are loaded from the
// last valid row/column (clamped addresses): they feed only accumulators that are never stored
// (N % 4 == 0, so a float4 column group is all in or all out); BK is 8 or 16, which divides K. All indices fit in int (each matrix has fewer than 2^31 elements).
//
// Params: BM 128 x BN {128, 256} (256 or 512 threads, 8 x 8 outputs each), BK 8, LM {4, 8} (the
// lane grid). Registers are capped at 128 (__launch_bounds__ asks for 64 K / 128 / THREADS blocks
// per SM: 2 blocks of 256 threads, 16 warps per SM). NVRTC for sm_90a: 128 registers, no spills.
// BK 16 and BM 64 fit the code but spill 40-90 bytes under that cap (the staging registers of the
// register double buffer), so they are left out of the sweep; seed_cp_async.cu covers BK 16.
// Expected: 128x128x8 (LM 4 or 8) is the CUTLASS default and should reach about 75-85% of cuBLAS
// fp32 on H100/H200 (36-42 TFLOP/s); 128x256 trades occupancy for fewer L2 reads.
/* kforge:plan
{ "params": {"BM": [128], "BN": [128, 256], "BK": [8], "LM": [4, 8]},
  "launches": [{"kernel": "sgemm_warptile", "grid": ["ceil_div(M, BM) * ceil_div(N, BN)"],
                "block": ["(BM / 8) * (BN / 8)"], "args": ["A", "B", "C", "M", "N", "K"]}] }
*/

#define THREADS ((BM / 8) * (BN / 8))
#define LN (32 / LM)              // lanes along N in a warp
#define WTM (LM * 8)              // warp tile rows
#define WTN (LN * 8)              // warp tile columns
#define WARPS_N (BN / WTN)
// As row pitch (floats): a multiple of 4 with 4 banks of skew for the transposed stores, unless the
// skew would push 128x256x16 past the 48 KB of static shared memory (then 2-way store conflicts).
#define AS_LD (2 * BK * (BM + 4 + BN) * 4 <= 49152 ? BM + 4 : BM)
#define A_VECS (BM * BK / 4)      // float4s per A tile
#define B_VECS (BK * BN / 4)      // float4s per B tile
#define A_PER_THREAD ((A_VECS + THREADS - 1) / THREADS)
#define B_PER_THREAD ((B_VECS + THREADS - 1) / THREADS)
#define GROUP_M 8
#define MIN_BLOCKS (65536 / 128 / THREADS)

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
sgemm_warptile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    __shared__ __align__(16) float As[2][BK][AS_LD];
    __shared__ __align__(16) float Bs[2][BK][BN];

    // Grouped rasterization of the 1-D grid.
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
    const int row0 = (warp / WARPS_N) * WTM + lm * 4;   // quadrant rows: row0.., row0 + WTM / 2..
    const int col0 = (warp % WARPS_N) * WTN + ln * 4;   // quadrant cols: col0.., col0 + WTN / 2..

    // This thread's global loads, one float4 per slot: A (row, k) along K, B (k, column) along N.
    // Rows of A past M read row M - 1 and columns of B past N read the row's last float4 instead
    // (N % 4 == 0): they only feed accumulators that are never stored, so no load needs a branch.
    // Slot s of a thread is float4 v = tid + s * THREADS of the tile (a surplus thread, when a tile
    // has fewer float4s than the block has threads, repeats the last one and stores the same value).
    // Per slot only a 32-bit row offset is kept; B slots differ by a fixed number of rows.
    int a_off[A_PER_THREAD];
#pragma unroll
    for (int s = 0; s < A_PER_THREAD; ++s) {
        int v = min(tid + s * THREADS, A_VECS - 1);
        a_off[s] = min(m0 + v / (BK / 4), M - 1) * K + (v % (BK / 4)) * 4;
    }
    const int b_v0 = min(tid, B_VECS - 1);
    const float* b_src = B + (b_v0 / (BN / 4)) * N + min(n0 + (b_v0 % (BN / 4)) * 4, N - 4);
#define B_SLOT_ROWS (THREADS / (BN / 4))   // rows between a thread's B slots
    static_assert(B_VECS % THREADS == 0 || B_VECS < THREADS, "B tile float4s: a multiple of the threads, or fewer");
    static_assert(THREADS % (BN / 4) == 0 || B_VECS <= THREADS, "B slots must be whole rows apart");

    float4 a_stage[A_PER_THREAD], b_stage[B_PER_THREAD];
    auto load_tile = [&](int k0) {
#pragma unroll
        for (int s = 0; s < A_PER_THREAD; ++s)
            a_stage[s] = *reinterpret_cast<const float4*>(A + a_off[s] + k0);
#pragma unroll
        for (int s = 0; s < B_PER_THREAD; ++s)
            b_stage[s] = *reinterpret_cast<const float4*>(b_src + (k0 + s * B_SLOT_ROWS) * N);
    };
    auto store_tile = [&](int buf) {
#pragma unroll
        for (int s = 0; s < A_PER_THREAD; ++s) {
            int v = min(tid + s * THREADS, A_VECS - 1), row = v / (BK / 4), k = (v % (BK / 4)) * 4;
            As[buf][k + 0][row] = a_stage[s].x;
            As[buf][k + 1][row] = a_stage[s].y;
            As[buf][k + 2][row] = a_stage[s].z;
            As[buf][k + 3][row] = a_stage[s].w;
        }
#pragma unroll
        for (int s = 0; s < B_PER_THREAD; ++s) {
            int v = min(tid + s * THREADS, B_VECS - 1);
            *reinterpret_cast<float4*>(&Bs[buf][v / (BN / 4)][(v % (BN / 4)) * 4]) = b_stage[s];
        }
    };

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
            acc[i][j] = 0.0f;

    load_tile(0);
    store_tile(0);
    __syncthreads();

    const int tiles_k = K / BK;
    for (int t = 0; t < tiles_k; ++t) {
        const int buf = t & 1;
        if (t + 1 < tiles_k)
            load_tile((t + 1) * BK);   // in flight during the FFMAs below
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[8], b[8];
            float4 v;
            v = *reinterpret_cast<const float4*>(&As[buf][k][row0]);
            a[0] = v.x, a[1] = v.y, a[2] = v.z, a[3] = v.w;
            v = *reinterpret_cast<const float4*>(&As[buf][k][row0 + WTM / 2]);
            a[4] = v.x, a[5] = v.y, a[6] = v.z, a[7] = v.w;
            v = *reinterpret_cast<const float4*>(&Bs[buf][k][col0]);
            b[0] = v.x, b[1] = v.y, b[2] = v.z, b[3] = v.w;
            v = *reinterpret_cast<const float4*>(&Bs[buf][k][col0 + WTN / 2]);
            b[4] = v.x, b[5] = v.y, b[6] = v.z, b[7] = v.w;
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (t + 1 < tiles_k)
            store_tile(buf ^ 1);   // buf ^ 1 was last read before the previous barrier
        __syncthreads();
    }

    // Epilogue: four float4 stores per quadrant row, guarded per row and per column group.
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
