// sgemm_f32 seed: register-blocked SIMT GEMM with a software pipeline at both levels of the memory
// hierarchy (global -> shared double buffering and shared -> register double buffering), the
// structure of CUTLASS's SIMT sgemm mainloop. FFMA only: no tensor cores, no TF32, no inline PTX.
//
// Why each piece is there:
// - Register blocking: each thread owns an 8 x 8 patch of C as four 4 x 4 quadrants (rows r..r+3
//   and r + WTM/2.., columns c..c+3 and c + WTN/2..). One k step reads four 16-byte shared
//   vectors (two of A, two of B) and issues 64 FFMAs, so the FFMA pipe, not shared memory, limits.
// - Conflict-free shared loads: the lanes of a warp form an LM x (32 / LM) grid; a warp reads only
//   LM distinct float4s of A and 32 / LM of B per k step (broadcasts, no bank conflicts).
// - Fragment double buffering: the A and B fragments of step k + 1 are loaded into a second set of
//   registers before the 64 FFMAs of step k, so the shared-memory latency (~30 cycles) hides behind
//   independent FFMAs instead of stalling the warp at the top of every step.
// - Global -> shared double buffering with register staging: the next K tile's global loads
//   (16-byte, coalesced along K for A and along N for B) are issued before the current tile's
//   FFMAs and written to the other shared buffer at the last k step, just before the tile's only
//   barrier; the first fragments of the next tile are read right after that barrier, while the
//   last step's FFMAs still run. One barrier per K tile.
// - Transposed A in shared memory (As[k][m], row pitch BM + 4): a float4 of A (4 consecutive k of
//   one row) becomes four scalar stores; neighbouring threads hold neighbouring rows, and the pitch
//   skews the two k halves of a warp onto different banks, so the stores are conflict-free and the
//   compute loop reads A as float4 along m.
// - Grouped tile order: the 1-D grid walks GROUP_M tile rows column by column, so the blocks
//   resident at one time share A and B panels in L2.
// - Occupancy: one 256-thread block (8 warps) per SM. The second fragment set costs 16 registers:
//   the kernel wants 147 (BK 8) or 159 (BK 16), and capped at 128 for two blocks per SM it spills
//   (16 bytes at BK 8 under NVRTC). Latency is hidden by the two pipelines and the 64 independent
//   FFMAs per step instead of by more warps, as in CUTLASS's large-tile SIMT kernels. BK 16 halves
//   the barriers per FFMA; which BK wins on H100 is what the sweep answers. If both trail
//   seed_warptile (two blocks per SM, no fragment double buffering), occupancy mattered more.
//
// Tails: M, N and K are multiples of 16; BK (8 or 16) divides K. Rows of A past M and columns of B
// past N are loaded from clamped addresses (the last row / the last float4 of the row): they only
// feed accumulators that are never stored, so no load needs a branch; stores are guarded per row
// and per float4 column group (N % 4 == 0). int indices suffice (each matrix < 2^31 elements).
//
// Tuning notes: `kforge eval --profile` of the best point; FFMA-bound means SM throughput near
// 90%+ at an achieved occupancy near 12.5% (8 warps of 64); DRAM throughput well under 50% at these
// shapes (a higher figure means GROUP_M is too small for L2 reuse).
/* kforge:plan
{ "params": {"BN": [128], "BK": [8, 16], "LM": [4, 8], "GROUP_M": [8, 16]},
  "launches": [{"kernel": "sgemm_frag_pipeline", "grid": ["ceil_div(M, 128) * ceil_div(N, BN)"],
                "block": ["16 * (BN / 8)"], "smem": "2 * BK * (128 + 4 + BN) * 4",
                "args": ["A", "B", "C", "M", "N", "K"]}] }
*/

#define BM 128
#define THREADS ((BM / 8) * (BN / 8))
#define LN (32 / LM)              // lanes along N in a warp
#define WTM (LM * 8)              // warp tile rows
#define WTN (LN * 8)              // warp tile columns
#define WARPS_N (BN / WTN)
#define AS_LD (BM + 4)            // As row pitch in floats
#define A_VECS (BM * BK / 4)      // float4s per A tile
#define B_VECS (BK * BN / 4)      // float4s per B tile
#define A_PER_THREAD (A_VECS / THREADS)
#define B_PER_THREAD (B_VECS / THREADS)
// BN 256 (512 threads) would leave A with half a float4 per thread at BK 8; the other seeds cover it.
#define BLOCKS_PER_SM 1

extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM)
sgemm_frag_pipeline(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N,
                    int K)
{
    static_assert(A_VECS % THREADS == 0 && B_VECS % THREADS == 0, "tiles must split evenly over the threads");
    extern __shared__ float4 smem_vec[];
    float* const smem = reinterpret_cast<float*>(smem_vec);
    float* const As = smem;                      // [2][BK][AS_LD]
    float* const Bs = smem + 2 * BK * AS_LD;     // [2][BK][BN]

    // Grouped rasterization of the 1-D grid.
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int per_group = GROUP_M * tiles_n;
    const int first_m = (int)blockIdx.x / per_group * GROUP_M;
    const int group_rows = min(tiles_m - first_m, GROUP_M);
    const int in_group = (int)blockIdx.x % per_group;
    const int m0 = (first_m + in_group % group_rows) * BM;
    const int n0 = in_group / group_rows * BN;

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int row0 = (warp / WARPS_N) * WTM + (lane / LN) * 4; // quadrant rows: row0.., row0 + WTM / 2..
    const int col0 = (warp % WARPS_N) * WTN + (lane % LN) * 4; // quadrant cols: col0.., col0 + WTN / 2..

    // Global loads of one K tile: slot s of a thread is float4 v = tid + s * THREADS. A: tile row
    // v / (BK / 4), k offset (v % (BK / 4)) * 4. B: tile row (k) v / (BN / 4), column (v % (BN / 4)) * 4.
    // 32-bit element offsets (every matrix has fewer than 2^31 elements) keep the staging cheap in
    // registers: with 64-bit pointers BK 8 spills 16 bytes under its 128-register cap.
    int a_off[A_PER_THREAD];
#pragma unroll
    for (int s = 0; s < A_PER_THREAD; ++s) {
        const int v = tid + s * THREADS;
        a_off[s] = min(m0 + v / (BK / 4), M - 1) * K + (v % (BK / 4)) * 4;
    }
    const int b_col = min(n0 + (tid % (BN / 4)) * 4, N - 4);
    const int b_off = tid / (BN / 4) * N + b_col; // B slots are THREADS / (BN / 4) rows apart

    float4 a_stage[A_PER_THREAD], b_stage[B_PER_THREAD];
    auto load_tile = [&](int k0) {
#pragma unroll
        for (int s = 0; s < A_PER_THREAD; ++s)
            a_stage[s] = *reinterpret_cast<const float4*>(A + a_off[s] + k0);
#pragma unroll
        for (int s = 0; s < B_PER_THREAD; ++s)
            b_stage[s] = *reinterpret_cast<const float4*>(B + b_off + (k0 + s * (THREADS / (BN / 4))) * N);
    };
    auto store_tile = [&](int buf) {
        float* as = As + buf * BK * AS_LD;
        float* bs = Bs + buf * BK * BN;
#pragma unroll
        for (int s = 0; s < A_PER_THREAD; ++s) {
            const int v = tid + s * THREADS, row = v / (BK / 4), k = (v % (BK / 4)) * 4;
            as[(k + 0) * AS_LD + row] = a_stage[s].x;
            as[(k + 1) * AS_LD + row] = a_stage[s].y;
            as[(k + 2) * AS_LD + row] = a_stage[s].z;
            as[(k + 3) * AS_LD + row] = a_stage[s].w;
        }
#pragma unroll
        for (int s = 0; s < B_PER_THREAD; ++s) {
            const int v = tid + s * THREADS;
            *reinterpret_cast<float4*>(bs + (v / (BN / 4)) * BN + (v % (BN / 4)) * 4) = b_stage[s];
        }
    };

    float frag_a[2][8], frag_b[2][8];
    auto load_fragments = [&](int set, int buf, int k) {
        const float* as = As + (buf * BK + k) * AS_LD;
        const float* bs = Bs + (buf * BK + k) * BN;
        const float4 a_lo = *reinterpret_cast<const float4*>(as + row0);
        const float4 a_hi = *reinterpret_cast<const float4*>(as + row0 + WTM / 2);
        const float4 b_lo = *reinterpret_cast<const float4*>(bs + col0);
        const float4 b_hi = *reinterpret_cast<const float4*>(bs + col0 + WTN / 2);
        frag_a[set][0] = a_lo.x, frag_a[set][1] = a_lo.y, frag_a[set][2] = a_lo.z, frag_a[set][3] = a_lo.w;
        frag_a[set][4] = a_hi.x, frag_a[set][5] = a_hi.y, frag_a[set][6] = a_hi.z, frag_a[set][7] = a_hi.w;
        frag_b[set][0] = b_lo.x, frag_b[set][1] = b_lo.y, frag_b[set][2] = b_lo.z, frag_b[set][3] = b_lo.w;
        frag_b[set][4] = b_hi.x, frag_b[set][5] = b_hi.y, frag_b[set][6] = b_hi.z, frag_b[set][7] = b_hi.w;
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
    load_fragments(0, 0, 0);

    const int tiles_k = K / BK;
    for (int t = 0; t < tiles_k; ++t) {
        const int buf = t & 1;
        const bool more = t + 1 < tiles_k;
        if (more)
            load_tile((t + 1) * BK); // in flight during this tile's FFMAs
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            if (k + 1 < BK) {
                load_fragments((k + 1) & 1, buf, k + 1);
            } else if (more) {
                // Last step: publish the next tile (its buffer was last read before the previous
                // barrier), then read its first fragments while this step's FFMAs run.
                store_tile(buf ^ 1);
                __syncthreads();
                load_fragments(0, buf ^ 1, 0);
            }
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j)
                    acc[i][j] = fmaf(frag_a[k & 1][i], frag_b[k & 1][j], acc[i][j]);
        }
    }

    // Epilogue: two float4 stores per output row, guarded per row and per column group.
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int m = m0 + row0 + (i < 4 ? i : WTM / 2 + i - 4);
        if (m >= M)
            continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int n = n0 + col0 + h * (WTN / 2);
            if (n < N)
                *reinterpret_cast<float4*>(C + m * N + n) =
                    make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
        }
    }
}
