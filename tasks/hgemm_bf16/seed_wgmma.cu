// hgemm_bf16 seed: Hopper warpgroup MMA (wgmma, sm_90a) fed by a multi-stage cp.async pipeline.
//
// A block of two warpgroups (256 threads) computes a 128 x BN tile of C; each warpgroup owns 64
// rows and issues m64nBNk16 wgmma instructions whose A and B operands both come from shared
// memory through matrix descriptors, with fp32 accumulators in registers (BN / 2 per thread).
// K is consumed 64 at a time: one stage holds a 128 x 64 tile of A and a BN x 64 tile of B, both
// K-major (A is M x K and B is N x K row-major, exactly the "TN" layout wgmma reads without a
// transpose), each 64-element row being one 128-byte line stored with the 128-byte swizzle (the
// 16-byte chunk j of row r lives at chunk j ^ (r % 8)), so the tensor cores read without bank
// conflicts and every cp.async writes 16 whole bytes.
//
// Pipeline: STAGES shared-memory slots. Each iteration waits for its own stage's copies, fences
// them into the async proxy (wgmma reads shared memory through it), meets the block at a barrier,
// issues the copies of a later stage into a slot no wgmma still reads, then issues the four
// wgmma of this stage as one group and waits until at most WAIT groups are pending. With WAIT = 1
// the tensor cores run one stage behind the issue (no bubble between stages) and the copies run
// STAGES - 2 stages ahead; with WAIT = 0, STAGES - 1 stages ahead.
//
// Epilogue: each warpgroup rounds its accumulators to bf16 into shared memory (the pipeline's
// slots, idle by then), then writes its 64 x BN tile row by row with 16-byte stores; storing the
// accumulator fragments directly (4 bytes per thread, 8 rows per instruction) cost 10% of the time
// on an H100.
//
// Tails: M and N are multiples of 16 and K of 16, but not of the tile sizes. Copies of rows past
// M or N, or of 16-byte chunks past K, use cp.async's zero fill, so the MMA adds zeros; the
// epilogue stores only rows < M and 16-byte chunks of columns < N (N being a multiple of 16, a
// chunk lies wholly inside or outside C).
// Blocks walk the tiles in groups of GROUP_M tile rows so that neighbouring blocks share A and B
// in L2. Measured on an H100 (BN=256 STAGES=4 WAIT=1): 232 us at 4096^3, 0.76x cuBLAS.
/* kforge:plan
{ "params": {"BN": [128, 256], "STAGES": [3, 4], "WAIT": [0, 1]},
  "launches": [{"kernel": "hgemm_wgmma", "grid": ["ceil_div(M, 128) * ceil_div(N, BN)", 1, 1],
                "block": [256, 1, 1], "smem": "(128 + BN) * 128 * STAGES + 1024",
                "args": ["A", "B", "C", "M", "N", "K"]}] }
*/

#define BM 128
#define BK 64
#define THREADS 256
#define GROUP_M 8
#define STAGE_BYTES ((BM + BN) * BK * 2)

__device__ __forceinline__ uint32_t shared_address(const void* p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, bypassing L1; `valid` false writes 16 zero bytes and reads nothing.
__device__ __forceinline__ void copy16(uint32_t dst, const void* src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void copy_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Shared-memory matrix descriptor of a K-major tile in the 128-byte swizzle: start address,
// leading-dimension offset (unused by this layout, 16 bytes), stride between 8-row groups (8 rows
// x 128 bytes) and the swizzle mode in bits 62-63. Tiles start 1024-byte aligned.
__device__ __forceinline__ uint64_t tile_descriptor(uint32_t address)
{
    uint64_t desc = (address & 0x3FFFF) >> 4;
    desc |= uint64_t(16 >> 4) << 16;
    desc |= uint64_t(1024 >> 4) << 32;
    desc |= uint64_t(1) << 62;
    return desc;
}

// Copies rows [row0, row0 + ROWS) x columns [k0, k0 + 64) of a row-major matrix with `rows` rows
// and K columns into a swizzled tile at `tile`.
template <int ROWS>
__device__ __forceinline__ void copy_tile(uint32_t tile, const __nv_bfloat16* src, int row0, int rows, int k0, int K)
{
#pragma unroll
    for (int i = 0; i < ROWS * 8 / THREADS; ++i) {
        const int id = threadIdx.x + i * THREADS;
        const int r = id >> 3, j = id & 7;
        const int row = row0 + r, k = k0 + j * 8;
        const bool valid = row < rows && k < K;
        const __nv_bfloat16* from = valid ? src + (int64_t)row * K + k : src;
        copy16(tile + r * 128 + ((j ^ (r & 7)) << 4), from, valid);
    }
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
    for (int i = 0; i < BN / 2; ++i)
        asm volatile("" : "+f"(d[i])::"memory");
}

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

__device__ __forceinline__ void wgmma_bn(float* d, uint64_t desc_a, uint64_t desc_b)
{
#if BN == 256
    wgmma_n256(d, desc_a, desc_b);
#elif BN == 128
    wgmma_n128(d, desc_a, desc_b);
#else
#error "BN must be 128 or 256"
#endif
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
hgemm_wgmma(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B, __nv_bfloat16* __restrict__ C,
            int M, int N, int K)
{
    extern __shared__ uint8_t smem_raw[];
    const uint32_t smem = (shared_address(smem_raw) + 1023) & ~1023u;

    // Grouped tile order: GROUP_M tile rows are walked column by column.
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int per_group = GROUP_M * tiles_n;
    const int first_m = (int)blockIdx.x / per_group * GROUP_M;
    const int group_rows = min(tiles_m - first_m, GROUP_M);
    const int in_group = (int)blockIdx.x % per_group;
    const int m0 = (first_m + in_group % group_rows) * BM;
    const int n0 = in_group / group_rows * BN;

    const int warpgroup = threadIdx.x / 128;
    const int k_tiles = (K + BK - 1) / BK;
    constexpr int ahead = STAGES - 1 - WAIT; // stages copied ahead of the one being multiplied

    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; ++i)
        acc[i] = 0.0f;

    auto copy_stage = [&](int kt) {
        if (kt < k_tiles) {
            const uint32_t slot = smem + (kt % STAGES) * STAGE_BYTES;
            copy_tile<BM>(slot, A, m0, M, kt * BK, K);
            copy_tile<BN>(slot + BM * 128, B, n0, N, kt * BK, K);
        }
        copy_commit(); // empty groups past the end keep the group count uniform
    };

#pragma unroll
    for (int s = 0; s < ahead; ++s)
        copy_stage(s);

    for (int kt = 0; kt < k_tiles; ++kt) {
        copy_wait<ahead - 1>(); // this thread's copies of stage kt have landed
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads(); // everyone's copies of stage kt are visible, and every warpgroup has
                         // finished the wgmma that read the slot refilled next
        copy_stage(kt + ahead);

        const uint32_t slot = smem + (kt % STAGES) * STAGE_BYTES;
        const uint32_t a_tile = slot + warpgroup * 64 * 128;
        const uint32_t b_tile = slot + BM * 128;
        wgmma_fence();
        pin_accumulators(acc);
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)
            wgmma_bn(acc, tile_descriptor(a_tile + kk * 32), tile_descriptor(b_tile + kk * 32));
        wgmma_commit();
        wgmma_wait<WAIT>();
        pin_accumulators(acc);
    }
    wgmma_wait<0>();
    pin_accumulators(acc);

    // Epilogue through shared memory: every warpgroup's 64 x BN bf16 tile is written into the
    // pipeline's slots (idle now), padded by 16 bytes per row, then stored with 16-byte writes.
    __syncthreads();
    const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
    constexpr int PITCH = BN * 2 + 16; // bytes per staged row
    uint8_t* stage = smem_raw + (smem - shared_address(smem_raw)) + warpgroup * 64 * PITCH;
#pragma unroll
    for (int c = 0; c < BN / 8; ++c) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = warp * 16 + lane / 4 + 8 * h;
            *reinterpret_cast<__nv_bfloat162*>(stage + r * PITCH + (c * 8 + (lane % 4) * 2) * 2) =
                __floats2bfloat162_rn(acc[4 * c + 2 * h], acc[4 * c + 2 * h + 1]);
        }
    }
    asm volatile("bar.sync %0, 128;\n" ::"r"(warpgroup + 1) : "memory");
    const int t = threadIdx.x % 128;
    constexpr int CHUNKS = BN / 8; // 16-byte chunks per row
#pragma unroll 4
    for (int i = t; i < 64 * CHUNKS; i += 128) {
        const int r = i / CHUNKS, ch = i % CHUNKS;
        const int row = m0 + warpgroup * 64 + r, col = n0 + ch * 8;
        if (row < M && col < N) // N is a multiple of 16, so a chunk lies wholly inside or outside
            *reinterpret_cast<uint4*>(C + (int64_t)row * N + col) = *reinterpret_cast<const uint4*>(stage + r * PITCH + ch * 16);
    }
}
