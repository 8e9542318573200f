// hgemm_bf16 seed: a warp-specialised, persistent Hopper GEMM (wgmma, sm_90a) fed by TMA, in the
// structure of the fastest Hopper GEMMs (CUTLASS's sm90 TMA warp-specialised cooperative kernel).
//
// Why each piece is there:
// - TMA (cp.async.bulk.tensor). One thread issues one bulk copy per operand per stage: the copy
//   engine walks the tile, writes it swizzled into shared memory, zero-fills rows and columns
//   outside the matrix, and signals the stage's mbarrier with the bytes it wrote. No thread spends
//   instructions on addresses or on 16-byte copies, so the producer costs the SM almost nothing.
//   kforge builds the two tensor maps on the host (plan arguments {"tensor_map": ...}: the whole
//   matrix, a box of BM (or BN) rows x 64 elements, 128-byte swizzle) and passes them by value as
//   __grid_constant__ parameters; the kernel uses their parameter-space addresses.
// - Warp specialisation. Warpgroup 0 is the producer (one elected thread issues the copies; its
//   other warps leave at once); warpgroups 1 and 2 only multiply: they issue wgmma and run the
//   epilogue, and never meet the producer at a block-wide barrier.
// - An mbarrier pipeline of STAGES shared-memory slots. "Full" barrier of a slot: the producer
//   arrives once with expect_tx(stage bytes) and the copy engine completes the transaction; "empty"
//   barrier: one lane of each consumer warp arrives once the wgmma that read the slot completed.
//   Waiting on a barrier's phase parity replaces block-wide barriers.
// - 128-byte swizzle. Every stage holds a BM x 64 tile of A and a BN x 64 tile of B, K-major: one
//   64-element row is one 128-byte line whose 16-byte chunk j lands at chunk j ^ (row % 8), the
//   layout TMA's 128B swizzle writes and wgmma's descriptor mode 1 reads without bank conflicts.
// - Two consumer warpgroups on one BM x BN tile ("cooperative"): each owns BM / 2 rows as
//   BM / 128 blocks of m64nBNk16, so one B tile in shared memory feeds twice the math.
// - Registers: 384 threads x 168 registers fill one SM's 64 K; 128 accumulators per consumer
//   thread fit without spills. (setmaxnreg, which CUTLASS uses to move registers from producer to
//   consumers, made this toolkit's ptxas spill; it is not needed below 168.)
// - Persistent tile scheduler: the grid is at most SMS blocks (one per SM); each walks tiles
//   blockIdx.x, blockIdx.x + gridDim.x, ... . The producer runs ahead into the next tile while the
//   consumers run the previous tile's epilogue, and no block launch or prologue is paid per tile.
// - Grouped tile order: consecutive tile indices walk GROUP_M tile rows column by column, so the
//   tiles in flight at one time share A and B panels in L2.
// - Epilogue through shared memory: each consumer warpgroup rounds its accumulators to bf16 into
//   its own staging area, 64 x 64 at a time (rows padded by 16 bytes against bank conflicts), then
//   writes 128-byte row segments with coalesced 16-byte stores (direct fragment stores cost 10% on
//   an H100). The staging area is separate from the slots, which the producer is already filling
//   with the next tile, and small (18 KB) so that 4 stages of 48 KB still fit.
//
// Not here (yet): clusters with TMA multicast (one L2 read of a B tile feeding two SMs) need a
// cluster launch and cluster-scope empty barriers; a ping-pong schedule (the two consumer
// warpgroups on different tiles, one's epilogue under the other's math) suits small K.
//
// Tails: M, N and K are multiples of 16 but not of the tile sizes. TMA zero-fills the parts of a
// box outside the matrix (and still counts them in the transaction bytes), so the MMA adds zeros;
// the epilogue stores only rows < M and 16-byte chunks of columns < N (N % 16 == 0).
//
// Params: TILE 0 = 128x128, 1 = 128x256, 2 = 256x128 (BM x BN); STAGES (clamped to what fits in
// shared memory beside the epilogue's staging area: the plan's smem uses the same formula);
// GROUP_M (tile rows per group of the tile order); SMS the persistent grid's size (132 on H100
// SXM and H200). What to look at when tuning: `kforge eval --profile` tensor-pipe utilisation
// (cuBLAS reaches about 75% of the bf16 roofline at these shapes), DRAM throughput (GROUP_M too
// small if DRAM bytes exceed ~1.5x the compulsory traffic), and the 8192 x 8192 x 2048 shape, where
// the epilogue is a larger share (ping-pong would hide it).
/* kforge:plan
{ "params": {"TILE": [0, 1, 2], "STAGES": [4, 6], "GROUP_M": [8, 16], "SMS": [132]},
  "launches": [{"kernel": "hgemm_ws_tma",
                "grid": ["min(ceil_div(M, 128 + 128 * (TILE == 2)) * ceil_div(N, 128 + 128 * (TILE == 1)), SMS)", 1, 1],
                "block": [384, 1, 1],
                "smem": "min(STAGES, (231424 - 18432 - 256) / ((256 + 128 * (TILE != 0)) * 128)) * (256 + 128 * (TILE != 0)) * 128 + 18432 + 256 + 1024",
                "args": [{"tensor_map": "A", "box": ["128 + 128 * (TILE == 2)", 64], "swizzle": 128},
                         {"tensor_map": "B", "box": ["128 + 128 * (TILE == 1)", 64], "swizzle": 128},
                         "C", "M", "N", "K"]}] }
*/

#if TILE == 0
#define BM 128
#define BN 128
#elif TILE == 1
#define BM 128
#define BN 256
#elif TILE == 2
#define BM 256
#define BN 128
#else
#error "TILE must be 0, 1 or 2"
#endif

#define BK 64                                   // K elements per stage: one 128-byte line per row
#define THREADS 384                             // producer warpgroup + two consumer warpgroups
#define MI (BM / 128)                           // m64 blocks per consumer warpgroup
#define STAGE_BYTES ((BM + BN) * BK * 2)
#define EPI_PITCH 144                           // bytes per staged row: 64 columns + 16 pad
#define EPI_BYTES (128 * EPI_PITCH)             // staging: 64 rows x 64 columns per consumer warpgroup
#define SMEM_BUDGET 231424                      // 227 KB opt-in, less the 1024 alignment slack
#define FIT_STAGES ((SMEM_BUDGET - EPI_BYTES - 256) / STAGE_BYTES)
#define NSTAGES (STAGES < FIT_STAGES ? STAGES : FIT_STAGES)
// SMS only sizes the grid (the plan launches min(tiles, SMS) blocks); the kernel strides by gridDim.x.
static_assert(SMS >= 1, "SMS is the persistent grid's size: the number of SMs, one block each");

__device__ __forceinline__ uint32_t shared_address(const void* p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarriers -------------------------------------------------------------------------------

__device__ __forceinline__ void barrier_init(uint32_t bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}

// Returns once the phase with parity `parity` of the barrier has completed.
__device__ __forceinline__ void barrier_wait(uint32_t bar, uint32_t parity)
{
    asm volatile(
        "{\n.reg .pred done;\n"
        "wait_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra wait_%=;\n}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}

__device__ __forceinline__ void barrier_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// Arrives once and adds `bytes` to the transaction count the phase waits for (the copy engine
// completes them as data lands).
__device__ __forceinline__ void barrier_arrive_expect_bytes(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// ---- loads -----------------------------------------------------------------------------------

// The tensor map kforge builds on the host (a CUtensorMap: 128 opaque bytes, 64-byte aligned).
struct __align__(64) TensorMap {
    uint64_t opaque[16];
};

// One bulk tensor copy: the box at (column x, row y) of the map's matrix -> shared memory at `dst`,
// completing `bytes` of barrier `bar`'s transaction. Coordinates are innermost first.
__device__ __forceinline__ void tma_load(uint32_t dst, const TensorMap* map, int x, int y, uint32_t bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar)
                 : "memory");
}

// ---- wgmma -----------------------------------------------------------------------------------

// Shared-memory matrix descriptor of a K-major tile in the 128-byte swizzle: start address,
// leading-dimension offset (unused by this layout: 16 bytes), stride between 8-row groups (8 rows
// x 128 bytes) and the swizzle mode (1 = 128B) in bits 62-63. Tiles start 1024-byte aligned.
__device__ __forceinline__ uint64_t tile_descriptor(uint32_t address)
{
    uint64_t desc = (address & 0x3FFFF) >> 4;
    desc |= uint64_t(16 >> 4) << 16;
    desc |= uint64_t(1024 >> 4) << 32;
    desc |= uint64_t(1) << 62;
    return desc;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

template <int N>
__device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving accesses to the accumulators across wgmma issue and wait.
__device__ __forceinline__ void pin_accumulators(float* d)
{
#pragma unroll
    for (int i = 0; i < MI * BN / 2; ++i)
        asm volatile("" : "+f"(d[i])::"memory");
}

// D (64 x 128, fp32) += A (64 x 16, shared) * B (128 x 16, shared)^T.
__device__ __forceinline__ void wgmma_n128(float* d, uint64_t desc_a, uint64_t desc_b)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(desc_a), "l"(desc_b), "r"(1));
}

// D (64 x 256, fp32) += A (64 x 16, shared) * B (256 x 16, shared)^T.
__device__ __forceinline__ void wgmma_n256(float* d, uint64_t desc_a, uint64_t desc_b)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(desc_a), "l"(desc_b), "r"(1));
}

__device__ __forceinline__ void wgmma_tile(float* d, uint64_t desc_a, uint64_t desc_b)
{
#if BN == 256
    wgmma_n256(d, desc_a, desc_b);
#else
    wgmma_n128(d, desc_a, desc_b);
#endif
}

// ---- the tile order --------------------------------------------------------------------------

// Tile `index` in grouped order: GROUP_M tile rows are walked column by column.
__device__ __forceinline__ void tile_origin(int index, int tiles_m, int tiles_n, int& m0, int& n0)
{
    const int per_group = GROUP_M * tiles_n;
    const int first_m = index / per_group * GROUP_M;
    const int group_rows = min(tiles_m - first_m, GROUP_M);
    const int in_group = index % per_group;
    m0 = (first_m + in_group % group_rows) * BM;
    n0 = in_group / group_rows * BN;
}

// ---- the kernel ------------------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(THREADS, 1)
hgemm_ws_tma(const __grid_constant__ TensorMap map_a, const __grid_constant__ TensorMap map_b,
             __nv_bfloat16* __restrict__ C, int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    // Layout (1024-aligned for the swizzle): NSTAGES slots | epilogue staging | barriers.
    const uint32_t base = (shared_address(smem_raw) + 1023) & ~1023u;
    uint8_t* const base_ptr = smem_raw + (base - shared_address(smem_raw));
    const uint32_t full_bar = base + NSTAGES * STAGE_BYTES + EPI_BYTES; // NSTAGES x 8 bytes
    const uint32_t empty_bar = full_bar + NSTAGES * 8;

    const int warpgroup = threadIdx.x / 128;
    const int t = threadIdx.x % 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < NSTAGES; ++s) {
            barrier_init(full_bar + s * 8, 1);   // the producer's expect_tx arrival (+ the bytes)
            barrier_init(empty_bar + s * 8, 8);  // lane 0 of each of the 8 consumer warps
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int tiles = tiles_m * tiles_n;
    const int k_tiles = (K + BK - 1) / BK;

    if (warpgroup == 0) {
        // Producer: one thread fills slots in order, across tiles, as soon as the consumers free
        // them; the rest of the warpgroup has nothing to do.
        if (threadIdx.x == 0) {
            asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&map_a)) : "memory");
            asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&map_b)) : "memory");
            int stage = 0;
            uint32_t phase = 1; // a fresh barrier counts its (virtual) previous phase as complete
            for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
                int m0, n0;
                tile_origin(tile, tiles_m, tiles_n, m0, n0);
                for (int kt = 0; kt < k_tiles; ++kt) {
                    barrier_wait(empty_bar + stage * 8, phase);
                    const uint32_t slot = base + stage * STAGE_BYTES;
                    const uint32_t full = full_bar + stage * 8;
                    barrier_arrive_expect_bytes(full, STAGE_BYTES);
                    tma_load(slot, &map_a, kt * BK, m0, full);
                    tma_load(slot + BM * 128, &map_b, kt * BK, n0, full);
                    if (++stage == NSTAGES) {
                        stage = 0;
                        phase ^= 1;
                    }
                }
            }
        }
    } else {
        // Consumers: warpgroup c (0 or 1) owns rows [c * BM / 2, (c + 1) * BM / 2) of each tile.
        const int c = warpgroup - 1;
        const int warp = t / 32, lane = t % 32;
        uint8_t* const staging = base_ptr + NSTAGES * STAGE_BYTES + c * 64 * EPI_PITCH;
        int stage = 0;
        uint32_t phase = 0;
        float acc[MI * BN / 2];
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int m0, n0;
            tile_origin(tile, tiles_m, tiles_n, m0, n0);
#pragma unroll
            for (int i = 0; i < MI * BN / 2; ++i)
                acc[i] = 0.0f;

            int previous = -1; // the slot whose wgmma may still be running
            for (int kt = 0; kt < k_tiles; ++kt) {
                barrier_wait(full_bar + stage * 8, phase); // TMA and wgmma share the async proxy
                const uint32_t slot = base + stage * STAGE_BYTES;
                const uint32_t a_tile = slot + c * (BM / 2) * 128;
                const uint32_t b_tile = slot + BM * 128;
                wgmma_fence();
                pin_accumulators(acc);
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {
#pragma unroll
                    for (int mi = 0; mi < MI; ++mi)
                        wgmma_tile(acc + mi * (BN / 2), tile_descriptor(a_tile + mi * 64 * 128 + kk * 32),
                                   tile_descriptor(b_tile + kk * 32));
                }
                wgmma_commit();
                // At most one group in flight: the previous stage's wgmma are done, so its slot
                // goes back to the producer while this stage's run on the tensor cores.
                wgmma_wait<1>();
                pin_accumulators(acc);
                if (previous >= 0 && lane == 0)
                    barrier_arrive(empty_bar + previous * 8);
                previous = stage;
                if (++stage == NSTAGES) {
                    stage = 0;
                    phase ^= 1;
                }
            }
            wgmma_wait<0>();
            pin_accumulators(acc);
            if (previous >= 0 && lane == 0)
                barrier_arrive(empty_bar + previous * 8);

            // Epilogue, one 64 x 64 block at a time through this warpgroup's staging area (64 rows
            // of 128 bytes, padded to 144: the bf16x2 stores of a warp's 8 rows x 4 lanes then hit
            // 32 distinct banks, and each row's 8 chunks are read back as one 128-byte line).
#pragma unroll
            for (int mi = 0; mi < MI; ++mi) {
                const int row0 = m0 + c * (BM / 2) + mi * 64;
#pragma unroll
                for (int slice = 0; slice < BN / 64; ++slice) {
                    asm volatile("bar.sync %0, 128;\n" ::"r"(1 + c) : "memory"); // staging is free
#pragma unroll
                    for (int j = 0; j < 8; ++j) {
#pragma unroll
                        for (int h = 0; h < 2; ++h) {
                            const int r = warp * 16 + lane / 4 + 8 * h;
                            const float* d = acc + mi * (BN / 2) + 4 * (slice * 8 + j) + 2 * h;
                            *reinterpret_cast<__nv_bfloat162*>(staging + r * EPI_PITCH + j * 16 + (lane % 4) * 4) =
                                __floats2bfloat162_rn(d[0], d[1]);
                        }
                    }
                    asm volatile("bar.sync %0, 128;\n" ::"r"(1 + c) : "memory"); // staging is written
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        const int id = t + i * 128;
                        const int r = id / 8, ch = id % 8;
                        const int row = row0 + r, col = n0 + slice * 64 + ch * 8;
                        if (row < M && col < N)
                            *reinterpret_cast<uint4*>(C + (int64_t)row * N + col) =
                                *reinterpret_cast<const uint4*>(staging + r * EPI_PITCH + ch * 16);
                    }
                }
            }
        }
    }
}
