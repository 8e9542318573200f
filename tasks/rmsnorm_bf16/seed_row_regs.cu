// rmsnorm_bf16 seed: the row is held in registers (packed bf16) and read from DRAM once: 4 bytes
// moved per element, x once and y once; w (the same for every row) comes from L1/L2.
//
// Layout. N % 8 == 0, so every row starts 16-byte aligned and is N / 8 chunks of 8 bf16 (one uint4).
// A row is handled by TX threads (a multiple of 32; blockDim.x), a block holds TY rows (blockDim.y).
// Thread t keeps chunks t, t + TX, ..., t + (VPT-1) TX as packed uint4 (4 registers per 8 values; a
// warp loads 512 contiguous bytes per instruction), all VPT loads in flight before any use. The sum of
// squares is fp32 (per thread, then shuffles, then one shared-memory step when TX > 32: one barrier
// round); y = x * rstd * w is computed in fp32 and rounded to bf16 once, 16 bytes per store.
//
// Rows longer than THREADS * VPT chunks (N > 65536 at THREADS 1024, VPT 8; the bench rows are at most
// 1024 chunks) go to a second kernel, rmsnorm_long_rows: one block per row, the sum of squares tile by
// tile, then the output pass with the tiles in reverse order (the row's tail is the likeliest still in
// L2): 2 reads + 1 write. The plan launches one of the two kernels, by N.
//
// Plan: C = N / 8 chunks; TX = min(THREADS, 32 ceil(C / (32 VPT))) (a warp per row when N <= 256 VPT);
// TY = max(1, THREADS / TX). Params (9 points): THREADS (block size and the most threads per row), VPT
// (uint4 registers per thread: 8, 16 or 32 data registers). Expected: 85-90% of DRAM copy bandwidth
// at every bench shape (131072 x 2048: a warp per row at VPT 8, or 2 warps at VPT 4; 16384 x 8192: 128
// to 512 threads per row).
/* kforge:plan
{ "params": {"THREADS": [256, 512, 1024], "VPT": [2, 4, 8]},
  "launches": [{"kernel": "rmsnorm_rows",
                "repeat": "N / 8 <= THREADS * VPT",
                "grid": ["ceil_div(M, max(1, THREADS / min(THREADS, 32 * ceil_div(N / 8, 32 * VPT))))"],
                "block": ["min(THREADS, 32 * ceil_div(N / 8, 32 * VPT))",
                          "max(1, THREADS / min(THREADS, 32 * ceil_div(N / 8, 32 * VPT)))"],
                "args": ["x", "w", "y", "M", "N", "eps"]},
               {"kernel": "rmsnorm_long_rows",
                "repeat": "N / 8 > THREADS * VPT",
                "grid": ["M"], "block": ["THREADS"],
                "args": ["x", "w", "y", "M", "N", "eps"]}] }
*/

#define MIN_BLOCKS (1024 / THREADS > 1 ? 1024 / THREADS : 1)   // at least 1024 threads per SM: <= 64 registers
#define LOOP_VPT (VPT < 4 ? VPT : 4)                            // chunks per thread per tile, long rows

__device__ __forceinline__ void unpack8(uint4 v, float f[8])
{
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 t = __bfloat1622float2(h[i]);
        f[2 * i] = t.x;
        f[2 * i + 1] = t.y;
    }
}

__device__ __forceinline__ uint4 pack8(const float f[8])
{
    uint4 v;
    __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i)
        h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
    return v;
}

__device__ __forceinline__ float squares8(uint4 v)
{
    float f[8];
    unpack8(v, f);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i)
        s = fmaf(f[i], f[i], s);
    return s;
}

// y chunk from x chunk v and weight chunk g.
__device__ __forceinline__ uint4 scale8(uint4 v, uint4 g, float rstd)
{
    float f[8], w[8];
    unpack8(v, f);
    unpack8(g, w);
#pragma unroll
    for (int i = 0; i < 8; ++i)
        f[i] = f[i] * rstd * w[i];
    return pack8(f);
}

// Loads chunks from + tx + k blockDim.x (k < K) of a row into v, zeros for those at or past `to`.
template <int K>
__device__ __forceinline__ void load_tile(const uint4* __restrict__ row, uint4 (&v)[K], int from, int to, bool streaming)
{
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int j = from + (int)threadIdx.x + k * (int)blockDim.x;
        v[k] = j >= to ? make_uint4(0u, 0u, 0u, 0u) : streaming ? __ldcs(row + j) : __ldg(row + j);
    }
}

// Sum over the blockDim.x threads of each row of the block; every thread gets its row's sum.
// Called by every thread of the block (it may hold a block barrier).
__device__ __forceinline__ float row_sum(float v)
{
    __shared__ float shared[32];
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    const int TX = blockDim.x;
    if (TX == 32)
        return v;
    const int lane = threadIdx.x & 31, warps = TX >> 5, first = threadIdx.y * warps;
    if (lane == 0)
        shared[first + (threadIdx.x >> 5)] = v;
    __syncthreads();
    v = lane < warps ? shared[first + lane] : 0.0f;
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    __syncthreads();   // the array may be reused
    return v;
}

// Rows of at most blockDim.x * VPT chunks (launched when N / 8 <= THREADS * VPT), blockDim.y rows per block.
extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
rmsnorm_rows(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w, __nv_bfloat16* __restrict__ y,
             int M, int N, float eps)
{
    const int TX = blockDim.x;
    const int64_t row = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
    const int chunks = row < M ? N / 8 : 0;
    const uint4* in = reinterpret_cast<const uint4*>(x + (row < M ? row * N : 0));
    uint4* out = reinterpret_cast<uint4*>(y + (row < M ? row * N : 0));
    const uint4* w8 = reinterpret_cast<const uint4*>(w);

    uint4 v[VPT];
    load_tile(in, v, 0, chunks, true);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < VPT; ++k)
        s += squares8(v[k]);
    const float rstd = rsqrtf(row_sum(s) / (float)N + eps);
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        const int j = (int)threadIdx.x + k * TX;
        if (j < chunks)
            __stcs(out + j, scale8(v[k], __ldg(w8 + j), rstd));
    }
}

// Longer rows (launched when N / 8 > THREADS * VPT): one block per row, tiles of THREADS * LOOP_VPT
// chunks; the output pass walks the tiles in reverse.
extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
rmsnorm_long_rows(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                  __nv_bfloat16* __restrict__ y, int M, int N, float eps)
{
    const int TX = blockDim.x, chunks = N / 8, tile = TX * LOOP_VPT;
    const uint4* in = reinterpret_cast<const uint4*>(x + (int64_t)blockIdx.x * N);
    uint4* out = reinterpret_cast<uint4*>(y + (int64_t)blockIdx.x * N);
    const uint4* w8 = reinterpret_cast<const uint4*>(w);

    float s = 0.0f;
    for (int base = 0; base < chunks; base += tile) {
        uint4 v[LOOP_VPT];
        load_tile(in, v, base, chunks, false);
#pragma unroll
        for (int k = 0; k < LOOP_VPT; ++k)
            s += squares8(v[k]);
    }
    const float rstd = rsqrtf(row_sum(s) / (float)N + eps);
    for (int base = (chunks - 1) / tile * tile; base >= 0; base -= tile) {
        uint4 v[LOOP_VPT];
        load_tile(in, v, base, chunks, false);
#pragma unroll
        for (int k = 0; k < LOOP_VPT; ++k) {
            const int j = base + (int)threadIdx.x + k * TX;
            if (j < chunks)
                __stcs(out + j, scale8(v[k], __ldg(w8 + j), rstd));
        }
    }
}
