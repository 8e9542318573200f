// layernorm_f32 seed: the row is held in registers and read from DRAM once (x read once, y written
// once; gamma and beta come from L1/L2, they are the same for every row).
//
// Layout. A row is handled by TX threads (a multiple of 32; blockDim.x) and a block holds TY rows
// (blockDim.y). The row is cut into 16-byte chunks of the *global* float4 grid: chunk j of a row whose
// start is a floats past a 16-byte boundary holds row elements 4j - a .. 4j - a + 3, so every chunk
// load is an aligned float4 even though N is arbitrary (rows are only 4-byte aligned in general); only
// the first and last chunk can be partial and those lanes are loaded one by one. Thread t keeps chunks
// t, t + TX, ..., t + (VPT-1) TX (a warp loads 512 contiguous bytes per instruction), all VPT loads in
// flight before any use.
//
// Statistics in one block-barrier round: each thread computes (n, mean, M2) of its own values with a
// two-pass over its registers (so the N(128, 1) rows cancel nothing), and the triples are merged over
// the row with Chan's parallel update (shuffles, then one shared-memory step when TX > 32). Then
// y = (x - mean) * rstd * gamma + beta from the registers; gamma/beta are float4 loads when the row is
// 16-byte aligned (always when N % 4 == 0), scalar loads otherwise.
//
// Rows longer than THREADS * VPT chunks (the test with N = 100000, or N > 32768 at THREADS 1024, VPT 8)
// go to another kernel, layernorm_long_rows (the plan launches one of the three, by N and PERSIST; separate kernels
// keep the register path's allocation free of the loop's): one block per row, tiles of THREADS x 4
// chunks, running per-thread triples merged tile by tile, then the output pass with the tiles in
// reverse order (the row's tail is the likeliest still in L2): 2 reads + 1 write.
//
// Plan: C = ceil(N/4) + (N % 4 != 0) chunks at most; TX = min(THREADS, 32 ceil(C / (32 VPT))) (a warp
// per row when N <= 128 VPT); TY = max(1, THREADS / TX). The kernels derive the rest from blockDim and
// N. Measured on an H100 (PERSIST 0): THREADS 512, VPT 8 best, 90.2 / 179.2 / 179.5 us on the bench
// shapes with STREAM 0, 99-100% of the device-to-device copy bandwidth (STREAM 1: 93.0 / 183.6 / 182.3);
// the 256-thread points were dominated and are gone.
//
// PERSIST = 1 launches layernorm_rows_persistent instead: one block per SM (132 on H100 SXM / H200; on
// another GPU any grid is still correct) loops over row groups and issues the next group's loads before
// it reduces and stores the current one, so the SM's read stream never drains between rows (no block
// relaunch and no wave tail: the last groups are already loaded when the other SMs run out), with one
// barrier per row group instead of two. It holds two row sets of at most 4096 chunks per block each
// (PVPT = min(VPT, 4096 / THREADS) chunks per thread: 1024 x 8 runs as 1024 x 4). Expected: part of the
// 1-3% that launch ramp, wave tail and the per-block load/reduce/store phases cost at 97-98% of copy.
// Measured, it lost: 107.6 / 198.8 / 203.2 us (84-90% of copy) at its best point, so the sweep leaves
// it out (PERSIST {0}); the kernel stays as a documented alternative a proposal may revisit.
//
// STREAM (1: evict-first __ldcs loads of x and __stcs stores of y; 0: default caching, as Triton's
// generated LayerNorm does, 2-3% faster on the H100) is a one-value param so a proposal can flip it;
// gamma and beta always go through __ldg (read by every row, they stay in L1/L2).
//
// Params (4 points): THREADS (block size and the most threads per row), VPT (float4 registers per thread
// per row), PERSIST {0}, STREAM {0}.
/* kforge:plan
{ "params": {"THREADS": [512, 1024], "VPT": [4, 8], "PERSIST": [0], "STREAM": [0]},
  "launches": [{"kernel": "layernorm_rows",
                "repeat": "PERSIST == 0 && (ceil_div(N, 4) + (N % 4 != 0)) <= THREADS * VPT",
                "grid": ["ceil_div(M, max(1, THREADS / min(THREADS, 32 * ceil_div((ceil_div(N, 4) + (N % 4 != 0)), 32 * VPT))))"],
                "block": ["min(THREADS, 32 * ceil_div((ceil_div(N, 4) + (N % 4 != 0)), 32 * VPT))",
                          "max(1, THREADS / min(THREADS, 32 * ceil_div((ceil_div(N, 4) + (N % 4 != 0)), 32 * VPT)))"],
                "args": ["x", "gamma", "beta", "y", "M", "N", "eps"]},
               {"kernel": "layernorm_rows_persistent",
                "repeat": "PERSIST == 1 && (ceil_div(N, 4) + (N % 4 != 0)) <= THREADS * min(VPT, 4096 / THREADS)",
                "grid": ["min(ceil_div(M, max(1, THREADS / min(THREADS, 32 * ceil_div((ceil_div(N, 4) + (N % 4 != 0)), 32 * min(VPT, 4096 / THREADS))))), 132)"],
                "block": ["min(THREADS, 32 * ceil_div((ceil_div(N, 4) + (N % 4 != 0)), 32 * min(VPT, 4096 / THREADS)))",
                          "max(1, THREADS / min(THREADS, 32 * ceil_div((ceil_div(N, 4) + (N % 4 != 0)), 32 * min(VPT, 4096 / THREADS))))"],
                "args": ["x", "gamma", "beta", "y", "M", "N", "eps"]},
               {"kernel": "layernorm_long_rows",
                "repeat": "(ceil_div(N, 4) + (N % 4 != 0)) > THREADS * (VPT - PERSIST * (VPT - min(VPT, 4096 / THREADS)))",
                "grid": ["M"], "block": ["THREADS"],
                "args": ["x", "gamma", "beta", "y", "M", "N", "eps"]}] }
*/

#define MIN_BLOCKS (1024 / THREADS > 1 ? 1024 / THREADS : 1)   // at least 1024 threads per SM: <= 64 registers
#define LOOP_VPT (VPT < 4 ? VPT : 4)   // chunks per thread per tile on the looped path (no spills)
// Chunks per thread per row set in the persistent kernel: it holds two sets of at most 4096 chunks per
// block (32 data registers per thread at 1024 threads, 64 at 512), so THREADS 1024, VPT 8 runs as VPT 4.
#define PVPT (THREADS * VPT > 4096 ? 4096 / THREADS : VPT)

// A row seen through the float4 grid: row element i is base[a + i], n elements (0 for a row past M).
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

__device__ __forceinline__ bool in_row(const Row& r, int e) { return e >= 0 && e < r.n; }

// Chunk j; lanes outside the row read as 0.
__device__ __forceinline__ float4 load_chunk(const Row& r, int j, bool streaming)
{
    const int e = 4 * j - r.a;
    if (e >= 0 && e + 4 <= r.n)
        return streaming ? __ldcs(reinterpret_cast<const float4*>(r.base) + j) : __ldg(reinterpret_cast<const float4*>(r.base) + j);
    const float* p = r.base + 4 * j;
    return make_float4(in_row(r, e) ? p[0] : 0.0f, in_row(r, e + 1) ? p[1] : 0.0f, in_row(r, e + 2) ? p[2] : 0.0f,
                       in_row(r, e + 3) ? p[3] : 0.0f);
}

// The four gamma (or beta) values of chunk j: one aligned float4 when the row is aligned.
__device__ __forceinline__ float4 load_param(const float* __restrict__ p, const Row& r, int j)
{
    const int e = 4 * j - r.a;
    if (r.a == 0 && e + 4 <= r.n)
        return __ldg(reinterpret_cast<const float4*>(p) + j);
    return make_float4(in_row(r, e) ? __ldg(p + e) : 0.0f, in_row(r, e + 1) ? __ldg(p + e + 1) : 0.0f,
                       in_row(r, e + 2) ? __ldg(p + e + 2) : 0.0f, in_row(r, e + 3) ? __ldg(p + e + 3) : 0.0f);
}

// y for chunk j from x values v.
__device__ __forceinline__ void store_out(const Row& r, int j, float4 v, float mean, float rstd,
                                          const float* __restrict__ gamma, const float* __restrict__ beta)
{
    const float4 g = load_param(gamma, r, j), b = load_param(beta, r, j);
    const float4 o = make_float4(fmaf((v.x - mean) * rstd, g.x, b.x), fmaf((v.y - mean) * rstd, g.y, b.y),
                                 fmaf((v.z - mean) * rstd, g.z, b.z), fmaf((v.w - mean) * rstd, g.w, b.w));
    const int e = 4 * j - r.a;
    if (e >= 0 && e + 4 <= r.n) {
        if (STREAM)
            __stcs(reinterpret_cast<float4*>(r.out) + j, o);
        else
            reinterpret_cast<float4*>(r.out)[j] = o;
        return;
    }
    float* p = r.out + 4 * j;
    if (in_row(r, e)) p[0] = o.x;
    if (in_row(r, e + 1)) p[1] = o.y;
    if (in_row(r, e + 2)) p[2] = o.z;
    if (in_row(r, e + 3)) p[3] = o.w;
}

// Elements of chunk j inside the row.
__device__ __forceinline__ int valid_in_chunk(const Row& r, int j)
{
    const int e = 4 * j - r.a;
    return (int)in_row(r, e) + (int)in_row(r, e + 1) + (int)in_row(r, e + 2) + (int)in_row(r, e + 3);
}

// Squared deviations from `mean` of the lanes of chunk j inside the row.
__device__ __forceinline__ float squares(const Row& r, int j, float4 v, float mean)
{
    const float a = v.x - mean, b = v.y - mean, c = v.z - mean, d = v.w - mean;
    const int e = 4 * j - r.a;
    if (e >= 0 && e + 4 <= r.n)
        return (a * a + b * b) + (c * c + d * d);
    return (in_row(r, e) ? a * a : 0.0f) + (in_row(r, e + 1) ? b * b : 0.0f) + (in_row(r, e + 2) ? c * c : 0.0f) +
           (in_row(r, e + 3) ? d * d : 0.0f);
}

// Chan's update: (n, mean, m2) merged with (n2, mean2, m22). Counts are floats (exact below 2^24).
__device__ __forceinline__ void merge(float& n, float& mean, float& m2, float n2, float mean2, float m22)
{
    const float total = n + n2;
    if (total == 0.0f)
        return;
    const float delta = mean2 - mean, w = n2 / total;
    mean = fmaf(delta, w, mean);
    m2 = m2 + m22 + delta * delta * n * w;
    n = total;
}

__device__ __forceinline__ void warp_merge(float& n, float& mean, float& m2)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float n2 = __shfl_xor_sync(0xffffffffu, n, offset);
        const float mean2 = __shfl_xor_sync(0xffffffffu, mean, offset);
        const float m22 = __shfl_xor_sync(0xffffffffu, m2, offset);
        merge(n, mean, m2, n2, mean2, m22);
    }
}

// Merges the triples of the blockDim.x threads of each row through `shared` (one barrier when TX > 32);
// every thread gets its row's result. Called by every thread of the block. The caller keeps `shared`
// unwritten until every thread has read it.
__device__ __forceinline__ void row_merge_via(float& n, float& mean, float& m2, float (*shared)[32])
{
    warp_merge(n, mean, m2);
    const int TX = blockDim.x;
    if (TX == 32)
        return;
    const int lane = threadIdx.x & 31, warps = TX >> 5, first = threadIdx.y * warps;
    if (lane == 0) {
        shared[0][first + (threadIdx.x >> 5)] = n;
        shared[1][first + (threadIdx.x >> 5)] = mean;
        shared[2][first + (threadIdx.x >> 5)] = m2;
    }
    __syncthreads();
    n = lane < warps ? shared[0][first + lane] : 0.0f;
    mean = lane < warps ? shared[1][first + lane] : 0.0f;
    m2 = lane < warps ? shared[2][first + lane] : 0.0f;
    warp_merge(n, mean, m2);
}

// row_merge_via with its own array and a second barrier after it (the array may be reused).
__device__ __forceinline__ void row_merge(float& n, float& mean, float& m2)
{
    __shared__ float shared[3][32];
    row_merge_via(n, mean, m2, shared);
    if (blockDim.x > 32)
        __syncthreads();
}

// The thread's triple over its K chunks starting at `from` (chunks at or past `to` hold zeros).
template <int K>
__device__ __forceinline__ void thread_stats(const Row& r, const float4 (&v)[K], int from, int to, float& n,
                                             float& mean, float& m2)
{
    const int TX = blockDim.x;
    float sum = 0.0f;
    int count = 0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int j = from + (int)threadIdx.x + k * TX;
        sum += (v[k].x + v[k].y) + (v[k].z + v[k].w);
        count += j < to ? valid_in_chunk(r, j) : 0;
    }
    n = (float)count;
    mean = count > 0 ? sum / n : 0.0f;
    m2 = 0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int j = from + (int)threadIdx.x + k * TX;
        if (j < to)
            m2 += squares(r, j, v[k], mean);
    }
}

template <int K>
__device__ __forceinline__ void load_tile(const Row& r, float4 (&v)[K], int from, int to, bool streaming)
{
    const int TX = blockDim.x;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int j = from + (int)threadIdx.x + k * TX;
        v[k] = j < to ? load_chunk(r, j, streaming) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
}

// Rows of at most TX * VPT chunks (the plan launches it when C <= THREADS * VPT): TY rows per block.
extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
layernorm_rows(const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
               float* __restrict__ y, int M, int N, float eps)
{
#if !PERSIST   // launched only when PERSIST = 0: no code (and no registers) otherwise
    const int TX = blockDim.x;
    const int64_t row = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
    const Row r = row_view(x, y, row, N, row < M);
    const int chunks = r.chunks();
    float4 v[VPT];
    load_tile(r, v, 0, chunks, STREAM != 0);
    float n, mean, m2;
    thread_stats(r, v, 0, chunks, n, mean, m2);
    row_merge(n, mean, m2);
    const float rstd = rsqrtf(m2 / (float)N + eps);
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        const int j = (int)threadIdx.x + k * TX;
        if (j < chunks)
            store_out(r, j, v[k], mean, rstd, gamma, beta);
    }
#endif
}

// One step of the persistent kernel: issues the loads of row group `next` (when `has_next`) into `nxt`,
// then normalises row group `group` from `cur` (loaded one step earlier). Called by every thread.
__device__ __forceinline__ void persistent_step(const float* __restrict__ x, const float* __restrict__ gamma,
                                                const float* __restrict__ beta, float* __restrict__ y, int M, int N,
                                                float eps, int64_t group, int64_t next, bool has_next,
                                                float4 (&cur)[PVPT], float4 (&nxt)[PVPT], float (*shared)[32])
{
    const int TX = blockDim.x, TY = blockDim.y;
    if (has_next) {
        const int64_t row = next * TY + threadIdx.y;
        const Row r = row_view(x, y, row, N, row < M);
        load_tile(r, nxt, 0, r.chunks(), STREAM != 0);
    }
    const int64_t row = group * TY + threadIdx.y;
    const Row r = row_view(x, y, row, N, row < M);
    const int chunks = r.chunks();
    float n, mean, m2;
    thread_stats(r, cur, 0, chunks, n, mean, m2);
    row_merge_via(n, mean, m2, shared);
    const float rstd = rsqrtf(m2 / (float)N + eps);
#pragma unroll
    for (int k = 0; k < PVPT; ++k) {
        const int j = (int)threadIdx.x + k * TX;
        if (j < chunks)
            store_out(r, j, cur[k], mean, rstd, gamma, beta);
    }
}

// Rows of at most TX * PVPT chunks, persistent (PERSIST = 1): one block per SM walks the row groups
// blockIdx.x, blockIdx.x + gridDim.x, ... (TY rows each, so the SMs sweep one contiguous band of rows at
// a time) and keeps the next group's loads in flight while it reduces and stores the current one. Two
// register sets with alternating roles (the step appears twice: no copies that would wait on loads) and
// two shared arrays by parity (one barrier per row group: a thread rewrites an array only after the
// next barrier, which every thread reaches after reading it).
extern "C" __global__ void __launch_bounds__(THREADS, 1)
layernorm_rows_persistent(const float* __restrict__ x, const float* __restrict__ gamma,
                          const float* __restrict__ beta, float* __restrict__ y, int M, int N, float eps)
{
#if PERSIST   // launched only when PERSIST = 1
    __shared__ float shared[2][3][32];
    const int TY = blockDim.y;
    const int64_t groups = ((int64_t)M + TY - 1) / TY, stride = gridDim.x;
    int64_t group = blockIdx.x;
    if (group >= groups)
        return;
    float4 a[PVPT], b[PVPT];
    {
        const int64_t row = group * TY + threadIdx.y;
        const Row r = row_view(x, y, row, N, row < M);
        load_tile(r, a, 0, r.chunks(), STREAM != 0);
    }
    for (;;) {
        persistent_step(x, gamma, beta, y, M, N, eps, group, group + stride, group + stride < groups, a, b, shared[0]);
        group += stride;
        if (group >= groups)
            break;
        persistent_step(x, gamma, beta, y, M, N, eps, group, group + stride, group + stride < groups, b, a, shared[1]);
        group += stride;
        if (group >= groups)
            break;
    }
#endif
}

// Longer rows (launched when C > THREADS * VPT, or THREADS * PVPT with PERSIST = 1), one block per row:
// tiles of THREADS * LOOP_VPT chunks, running triples merged tile by tile, then the output with the
// tiles in reverse order.
extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
layernorm_long_rows(const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
                    float* __restrict__ y, int M, int N, float eps)
{
    const int TX = blockDim.x;
    const Row r = row_view(x, y, blockIdx.x, N, true);
    const int chunks = r.chunks();
    const int tile = TX * LOOP_VPT;
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int base = 0; base < chunks; base += tile) {
        float4 v[LOOP_VPT];
        load_tile(r, v, base, chunks, false);
        float tn, tmean, tm2;
        thread_stats(r, v, base, chunks, tn, tmean, tm2);
        merge(n, mean, m2, tn, tmean, tm2);
    }
    row_merge(n, mean, m2);
    const float rstd = rsqrtf(m2 / (float)N + eps);
    for (int base = (chunks - 1) / tile * tile; base >= 0; base -= tile) {
        float4 v[LOOP_VPT];
        load_tile(r, v, base, chunks, false);
#pragma unroll
        for (int k = 0; k < LOOP_VPT; ++k) {
            const int j = base + (int)threadIdx.x + k * TX;
            if (j < chunks)
                store_out(r, j, v[k], mean, rstd, gamma, beta);
        }
    }
}
