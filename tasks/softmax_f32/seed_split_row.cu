// softmax_f32 seed: every row is read from DRAM once and kept on chip, including rows far too long
// for one block (512 x 262144: 1 MiB per row), which are split over S blocks that exchange their
// partial (max, sum) through scratch. 8 bytes moved per element at every shape.
//
// Rows that fit one block are handled exactly as in seed_row_regs: TX threads per row (blockDim.x),
// TY rows per block (blockDim.y), VPT aligned float4 chunks of the global float4 grid per thread
// (partial first/last chunks lane by lane, so odd N and unaligned rows are fine), one exp per element,
// the per-thread (max, sum) pairs merged by shuffles and one shared-memory step, output
// e * exp(m_t - M) / S.
//
// Long rows (C > THREADS * VPT chunks, C = ceil(N/4) + (N % 4 != 0)) with S = ceil(C / (THREADS VPT))
// parts, 2 <= S <= 32: a block takes a ticket from an atomic counter (scratch word 0) and handles
// part (ticket % S) of row (ticket / S). It loads its part into registers, merges its (max, sum),
// publishes it as one 64-bit word {max bits, sum bits} (never 0 once written: sum >= 1, or max = -inf
// for an empty part), then the first S lanes of warp 0 spin (volatile loads, __nanosleep) until all
// S words of the row are non-zero, merge them (same order in every block of the row, so all agree
// bit for bit), and the block writes its part from registers.
// Forward progress: tickets are taken in order by blocks already running, and a block waits only for
// the other parts of its own row. A row whose S tickets are all taken completes (its blocks are
// running or done); so if every resident block waited, all would hold parts of the row of the last
// ticket taken, at most S - 1 blocks. Any GPU with at least S (<= 32) resident blocks (132+ on H100)
// therefore completes, whatever order the hardware starts blocks in. Launch 1 zeroes the counter and the S words of every row (only
// when some row is split; scratch is not initialised).
// Rows with S > 32 (over 32 x 4096 chunks, i.e. N > 2^19 at THREADS 1024, VPT 4) fall back to one block
// per row, an online two-pass loop (2 reads + 1 write) with the second pass in reverse tile order.
// The three cases are three kernels (softmax_rows, softmax_split, softmax_long_rows); the plan launches
// the one the shape needs, so each has its own register allocation.
//
// Params (6 points): THREADS (block size: the threads per row and the rows per block for short rows,
// and the block of a split row) and VPT (float4 registers per thread). For 512 x 262144: THREADS 512,
// VPT 8 gives S = 16 blocks of 64 KB per row, two blocks per SM (one loading while the other writes).
// Expected: ~85-90% of DRAM copy bandwidth at every bench shape.
/* kforge:plan
{ "params": {"THREADS": [256, 512, 1024], "VPT": [4, 8]},
  "scratch": [{"name": "slots", "bytes": "8 * (32 + M * ceil_div(ceil_div(N, 4) + (N % 4 != 0), THREADS * VPT) * (ceil_div(ceil_div(N, 4) + (N % 4 != 0), THREADS * VPT) > 1 && ceil_div(ceil_div(N, 4) + (N % 4 != 0), THREADS * VPT) <= 32))"}],
  "launches": [{"kernel": "softmax_zero_slots", "repeat": "(ceil_div(ceil_div(N, 4) + (N % 4 != 0), THREADS * VPT) > 1 && ceil_div(ceil_div(N, 4) + (N % 4 != 0), THREADS * VPT) <= 32)",
                "grid": ["ceil_div(32 + M * ceil_div(ceil_div(N, 4) + (N % 4 != 0), THREADS * VPT), 256)"], "block": [256],
                "args": ["slots", {"value": "32 + M * ceil_div(ceil_div(N, 4) + (N % 4 != 0), THREADS * VPT)", "dtype": "i64"}]},
               {"kernel": "softmax_rows",
                "repeat": "ceil_div(N, 4) + (N % 4 != 0) <= THREADS * VPT",
                "grid": ["ceil_div(M, max(1, THREADS / min(THREADS, 32 * ceil_div(ceil_div(N, 4) + (N % 4 != 0), 32 * VPT))))"],
                "block": ["min(THREADS, 32 * ceil_div(ceil_div(N, 4) + (N % 4 != 0), 32 * VPT))",
                          "max(1, THREADS / min(THREADS, 32 * ceil_div(ceil_div(N, 4) + (N % 4 != 0), 32 * VPT)))"],
                "args": ["x", "y", "M", "N"]},
               {"kernel": "softmax_split", "repeat": "(ceil_div(ceil_div(N, 4) + (N % 4 != 0), THREADS * VPT) > 1 && ceil_div(ceil_div(N, 4) + (N % 4 != 0), THREADS * VPT) <= 32)",
                "grid": ["M * ceil_div(ceil_div(N, 4) + (N % 4 != 0), THREADS * VPT)"], "block": ["THREADS"],
                "args": ["x", "y", "slots", "M", "N"]},
               {"kernel": "softmax_long_rows",
                "repeat": "ceil_div(ceil_div(N, 4) + (N % 4 != 0), THREADS * VPT) > 32",
                "grid": ["M"], "block": ["THREADS"], "args": ["x", "y", "M", "N"]}] }
*/

#define NEG_INF (-INFINITY)
#define MIN_BLOCKS (1024 / THREADS > 1 ? 1024 / THREADS : 1)   // at least 1024 threads per SM: <= 64 registers
#define LOOP_VPT (VPT < 4 ? VPT : 4)   // chunks per thread per tile on the looped path

// A row seen through the float4 grid: `base` is the aligned address of the row's first chunk, the row's
// element i sits at base[a + i] (a = the row's start mod 4), n elements. Chunk j holds row elements
// 4j - a .. 4j - a + 3: an aligned float4 when all four are in the row, else loaded lane by lane with
// -inf outside the row (only the first and the last chunk can be partial). Indices are 32-bit: a row
// has fewer than 2^31 elements.
struct Row {
    const float* base;
    float* out;
    int a, n;
    __device__ int chunks() const { return (a + n + 3) >> 2; }
};

__device__ __forceinline__ Row row_view(const float* x, float* y, int64_t row, int N, bool live)
{
    const int64_t start = live ? row * N : 0;
    const int a = (int)(start & 3);
    return Row{x + (start - a), y + (start - a), a, live ? N : 0};
}

__device__ __forceinline__ float4 load_chunk(const Row& r, int j, bool streaming)
{
    const int e = 4 * j - r.a;
    if (e >= 0 && e + 4 <= r.n)
        return streaming ? __ldcs(reinterpret_cast<const float4*>(r.base) + j) : __ldg(reinterpret_cast<const float4*>(r.base) + j);
    float4 v = make_float4(NEG_INF, NEG_INF, NEG_INF, NEG_INF);
    const float* p = r.base + 4 * j;
    if (e + 0 >= 0 && e + 0 < r.n) v.x = p[0];
    if (e + 1 >= 0 && e + 1 < r.n) v.y = p[1];
    if (e + 2 >= 0 && e + 2 < r.n) v.z = p[2];
    if (e + 3 >= 0 && e + 3 < r.n) v.w = p[3];
    return v;
}

__device__ __forceinline__ void store_chunk(const Row& r, int j, float4 v)
{
    const int e = 4 * j - r.a;
    if (e >= 0 && e + 4 <= r.n) {
        __stcs(reinterpret_cast<float4*>(r.out) + j, v);
        return;
    }
    float* p = r.out + 4 * j;
    if (e + 0 >= 0 && e + 0 < r.n) p[0] = v.x;
    if (e + 1 >= 0 && e + 1 < r.n) p[1] = v.y;
    if (e + 2 >= 0 && e + 2 < r.n) p[2] = v.z;
    if (e + 3 >= 0 && e + 3 < r.n) p[3] = v.w;
}

// (m, s) merged with (m2, s2); a side that saw no element has m = -inf, s = 0.
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2)
{
    const float mn = fmaxf(m, m2);
    const float a = m == NEG_INF ? 0.0f : s * expf(m - mn);
    const float b = m2 == NEG_INF ? 0.0f : s2 * expf(m2 - mn);
    m = mn;
    s = a + b;
}

__device__ __forceinline__ void warp_merge(float& m, float& s)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, offset);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, offset);
        merge(m, s, m2, s2);
    }
}

// Merges the (m, s) of the blockDim.x threads of each row of the block; every thread gets its row's
// result. Called by every thread of the block (it may hold a block barrier).
__device__ __forceinline__ void row_merge(float& m, float& s)
{
    __shared__ float shared_m[32], shared_s[32];
    warp_merge(m, s);
    const int TX = blockDim.x;
    if (TX == 32)
        return;
    const int lane = threadIdx.x & 31;
    const int warps = TX >> 5, first = threadIdx.y * warps;
    if (lane == 0) {
        shared_m[first + (threadIdx.x >> 5)] = m;
        shared_s[first + (threadIdx.x >> 5)] = s;
    }
    __syncthreads();
    m = lane < warps ? shared_m[first + lane] : NEG_INF;
    s = lane < warps ? shared_s[first + lane] : 0.0f;
    warp_merge(m, s);
    __syncthreads();   // the arrays may be reused
}

__device__ __forceinline__ float max4(float4 v) { return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)); }

// exp(v - m) lane by lane; -inf lanes (outside the row) give 0.
__device__ __forceinline__ float4 exp4(float4 v, float m)
{
    return make_float4(expf(v.x - m), expf(v.y - m), expf(v.z - m), expf(v.w - m));
}

// Loads chunks from + tx + k blockDim.x (k < K) of row r into v, -inf for those at or past `to`.
template <int K>
__device__ __forceinline__ void load_tile(const Row& r, float4 (&v)[K], int from, int to, bool streaming)
{
    const int TX = blockDim.x;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int j = from + (int)threadIdx.x + k * TX;
        v[k] = j < to ? load_chunk(r, j, streaming) : make_float4(NEG_INF, NEG_INF, NEG_INF, NEG_INF);
    }
}

// Loads chunks [from, to) of row r into v (thread tx takes from + tx + k blockDim.x), -inf elsewhere;
// returns the thread's max m and replaces v by exp(v - m), summing into s.
__device__ __forceinline__ float load_exp(const Row& r, float4 (&v)[VPT], int from, int to, float& s)
{
    load_tile(r, v, from, to, true);
    float m = NEG_INF;
#pragma unroll
    for (int k = 0; k < VPT; ++k)
        m = fmaxf(m, max4(v[k]));
    const float m_safe = m == NEG_INF ? 0.0f : m;
    s = 0.0f;
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        v[k] = exp4(v[k], m_safe);
        s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
    return m;
}

__device__ __forceinline__ void store_scaled(const Row& r, const float4 (&v)[VPT], int from, int to, float scale)
{
    const int TX = blockDim.x;
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        const int j = from + (int)threadIdx.x + k * TX;
        if (j < to)
            store_chunk(r, j, make_float4(v[k].x * scale, v[k].y * scale, v[k].z * scale, v[k].w * scale));
    }
}

// A whole row by one block (blockDim.y == 1), too long for registers: online (max, sum) over tiles of
// blockDim.x * LOOP_VPT chunks, a row merge, then the output with the tiles in reverse order
// (the last ones read are the likeliest still in L2). 2 reads + 1 write.
__device__ __forceinline__ void softmax_looped(const Row& r)
{
    const int TX = blockDim.x, tile = TX * LOOP_VPT, chunks = r.chunks();
    float m = NEG_INF, s = 0.0f;
    for (int base = 0; base < chunks; base += tile) {
        float4 v[LOOP_VPT];
        load_tile(r, v, base, chunks, false);
        float tm = m;
#pragma unroll
        for (int k = 0; k < LOOP_VPT; ++k)
            tm = fmaxf(tm, max4(v[k]));
        if (tm == NEG_INF)
            continue;
        float ts = m == NEG_INF ? 0.0f : s * expf(m - tm);
#pragma unroll
        for (int k = 0; k < LOOP_VPT; ++k) {
            const float4 e = exp4(v[k], tm);
            ts += (e.x + e.y) + (e.z + e.w);
        }
        m = tm;
        s = ts;
    }
    row_merge(m, s);
    const float inv = 1.0f / s;
    for (int base = (chunks - 1) / tile * tile; base >= 0; base -= tile) {
        float4 v[LOOP_VPT];
        load_tile(r, v, base, chunks, false);
#pragma unroll
        for (int k = 0; k < LOOP_VPT; ++k) {
            const int j = base + (int)threadIdx.x + k * TX;
            if (j < chunks) {
                const float4 e = exp4(v[k], m);
                store_chunk(r, j, make_float4(e.x * inv, e.y * inv, e.z * inv, e.w * inv));
            }
        }
    }
}

#define MAX_PARTS 32

extern "C" __global__ void softmax_zero_slots(unsigned long long* __restrict__ slots, int64_t words)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < words)
        slots[i] = 0ull;
}

// A row of P = ceil(C / (blockDim.x * VPT)) parts, 2 <= P <= MAX_PARTS (launched with M * P blocks of
// THREADS threads): the block with ticket t handles part t % P of row t / P.
extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
softmax_split(const float* __restrict__ x, float* __restrict__ y, unsigned long long* __restrict__ slots, int M, int N)
{
    __shared__ long long ticket;
    __shared__ float shared_total[2];
    const int64_t c_max = (N + 3) / 4 + (N % 4 != 0);   // the most chunks any row touches
    const int per_block = blockDim.x * VPT;
    const int parts = (int)((c_max + per_block - 1) / per_block);
    if (threadIdx.x == 0)
        ticket = (long long)atomicAdd(slots, 1ull);
    __syncthreads();
    const int64_t row = ticket / parts;
    const int part = (int)(ticket % parts);
    const Row r = row_view(x, y, row, N, true);
    const int from = part * per_block, to = min(from + per_block, r.chunks());
    float4 v[VPT];
    float s;
    const float m = load_exp(r, v, from, to, s);
    float block_m = m, block_s = s;
    row_merge(block_m, block_s);
    volatile unsigned long long* row_slots = slots + 32 + row * parts;
    if (threadIdx.x == 0)
        row_slots[part] = ((unsigned long long)__float_as_uint(block_m) << 32) | __float_as_uint(block_s);
    if (threadIdx.x < 32) {
        float pm = NEG_INF, ps = 0.0f;
        if ((int)threadIdx.x < parts) {
            unsigned long long word;
            while ((word = row_slots[threadIdx.x]) == 0ull)
                __nanosleep(64);
            pm = __uint_as_float((unsigned)(word >> 32));
            ps = __uint_as_float((unsigned)word);
        }
        warp_merge(pm, ps);
        if (threadIdx.x == 0) {
            shared_total[0] = pm;
            shared_total[1] = ps;
        }
    }
    __syncthreads();
    store_scaled(r, v, from, to, m == NEG_INF ? 0.0f : expf(m - shared_total[0]) / shared_total[1]);
}

// Rows of at most blockDim.x * VPT chunks (launched when C <= THREADS * VPT), blockDim.y rows per block.
extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
softmax_rows(const float* __restrict__ x, float* __restrict__ y, int M, int N)
{
    const int64_t row = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
    const Row r = row_view(x, y, row, N, row < M);
    float4 v[VPT];
    float s;
    const float m = load_exp(r, v, 0, r.chunks(), s);
    float row_m = m, row_s = s;
    row_merge(row_m, row_s);
    store_scaled(r, v, 0, r.chunks(), m == NEG_INF ? 0.0f : expf(m - row_m) / row_s);
}

// Longer rows (launched when C > THREADS * VPT): one block per row, two passes.
extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
softmax_long_rows(const float* __restrict__ x, float* __restrict__ y, int M, int N)
{
    softmax_looped(row_view(x, y, blockIdx.x, N, true));
}
