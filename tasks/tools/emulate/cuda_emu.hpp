// CPU emulation of the CUDA subset the bundled kernels use. Force-included before a kernel file
// compiled as C++. Blocks run one after another; the threads of a block are fibers scheduled by
// the harness (emu_main.cpp), switching only at __syncthreads / warp operations. __shared__ becomes
// `static`, which is right because only one block exists at a time.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cfloat>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct dim3 { unsigned x = 1, y = 1, z = 1; };
extern "C" {
extern dim3 emu_thread_idx, emu_block_idx, emu_block_dim, emu_grid_dim;
void emu_block_barrier();
// Posts `bits` for this lane, waits for every live lane of the warp, returns lane `src`'s bits
// (or this lane's own when src is outside 0..31).
uint64_t emu_warp_exchange(uint64_t bits, int src);
void emu_warp_barrier();
typedef void (*emu_invoker)(void* fn, void** args, int nargs, const char* kinds);
void emu_register(const char* name, void* fn, emu_invoker invoker);
}
#define threadIdx emu_thread_idx
#define blockIdx emu_block_idx
#define blockDim emu_block_dim
#define gridDim emu_grid_dim

inline void __syncthreads() { emu_block_barrier(); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu_warp_barrier(); }
inline unsigned emu_lane() { return (emu_thread_idx.x + emu_block_dim.x * (emu_thread_idx.y + emu_block_dim.y * emu_thread_idx.z)) & 31; }
template <typename T> inline T emu_shfl(T v, int src)
{
    uint64_t bits = 0; std::memcpy(&bits, &v, sizeof(T));
    uint64_t got = emu_warp_exchange(bits, src);
    T out; std::memcpy(&out, &got, sizeof(T)); return out;
}
template <typename T> inline T __shfl_xor_sync(unsigned, T v, int mask) { return emu_shfl(v, (int)(emu_lane() ^ (unsigned)mask)); }
template <typename T> inline T __shfl_up_sync(unsigned, T v, unsigned d) { int s = (int)emu_lane() - (int)d; return emu_shfl(v, s < 0 ? -1 : s); }
template <typename T> inline T __shfl_down_sync(unsigned, T v, unsigned d) { int s = (int)emu_lane() + (int)d; return emu_shfl(v, s > 31 ? -1 : s); }
template <typename T> inline T __ldg(const T* p) { return *p; }
template <typename T> inline T atomicAdd(T* p, T v) { T old = *p; *p = old + v; return old; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
using std::min; using std::max;
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }

struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(4) uchar4 { unsigned char x, y, z, w; };
struct alignas(4) char4 { signed char x, y, z, w; };
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

struct __nv_bfloat16 { uint16_t bits; };
struct alignas(4) __nv_bfloat162 { __nv_bfloat16 x, y; };
inline float __bfloat162float(__nv_bfloat16 h) { uint32_t u = (uint32_t)h.bits << 16; float f; std::memcpy(&f, &u, 4); return f; }
inline __nv_bfloat16 __float2bfloat16_rn(float f)
{
    uint32_t u; std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return {(uint16_t)((u >> 16) | 0x40)};
    return {(uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}
inline float2 __bfloat1622float2(__nv_bfloat162 h) { return {__bfloat162float(h.x), __bfloat162float(h.y)}; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return {__float2bfloat16_rn(a), __float2bfloat16_rn(b)}; }

// IEEE half through the host compiler's _Float16 (round to nearest even, as the device converts).
struct __half { uint16_t bits; };
struct alignas(4) __half2 { __half x, y; };
inline float __half2float(__half h) { _Float16 v; std::memcpy(&v, &h.bits, 2); return (float)v; }
inline __half __float2half_rn(float f) { _Float16 v = (_Float16)f; __half h; std::memcpy(&h.bits, &v, 2); return h; }
inline __half __float2half(float f) { return __float2half_rn(f); }
inline float2 __half22float2(__half2 h) { return {__half2float(h.x), __half2float(h.y)}; }
inline __half2 __floats2half2_rn(float a, float b) { return {__float2half_rn(a), __float2half_rn(b)}; }
inline __half __hadd(__half a, __half b) { return __float2half_rn(__half2float(a) + __half2float(b)); }
inline __half __hmul(__half a, __half b) { return __float2half_rn(__half2float(a) * __half2float(b)); }

// WMMA: every lane holds the whole 16 x 16 tile (the API keeps the element mapping opaque).
namespace nvcuda { namespace wmma {
struct matrix_a {}; struct matrix_b {}; struct accumulator {}; struct row_major {}; struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
template <typename Use, int M, int N, int K, typename T, typename Layout = void> struct fragment { float v[256]; };
template <typename F> inline void fill_fragment(F& f, float x) { for (float& e : f.v) e = x; }
inline float emu_to_float(__nv_bfloat16 h) { return __bfloat162float(h); }
inline float emu_to_float(__half h) { return __half2float(h); }
inline float emu_to_float(float x) { return x; }
template <typename Use, typename T, typename L> inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, L>& f, const T* p, unsigned ldm)
{
    for (int r = 0; r < 16; ++r) for (int c = 0; c < 16; ++c)   // f.v[r*16+c] is element (row r, col c) of the logical tile
        f.v[r * 16 + c] = emu_to_float(std::is_same<L, col_major>::value ? p[c * ldm + r] : p[r * ldm + c]);
}
template <typename A, typename B, typename C>
inline void mma_sync(C& d, const A& a, const B& b, const C& c)
{
    float out[256];
    for (int i = 0; i < 16; ++i) for (int j = 0; j < 16; ++j) { float s = c.v[i * 16 + j]; for (int k = 0; k < 16; ++k) s = std::fmaf(a.v[i * 16 + k], b.v[k * 16 + j], s); out[i * 16 + j] = s; }
    std::memcpy(d.v, out, sizeof out);
}
template <typename F> inline void store_matrix_sync(float* p, const F& f, unsigned ldm, layout_t layout)
{
    for (int r = 0; r < 16; ++r) for (int c = 0; c < 16; ++c) (layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.v[r * 16 + c];
}
} }

// Registration: the glue file names each kernel; the invoker unpacks type-erased arguments.
namespace emu {
template <typename T> inline T take(void* p) { T v; std::memcpy(&v, p, sizeof(T)); return v; }
template <typename... A, size_t... I> inline void call(void (*f)(A...), void** args, std::index_sequence<I...>) { f(take<A>(args[I])...); }
template <typename... A> void invoke(void* fn, void** args, int nargs, const char* kinds)
{
    // kinds: one char per argument from the plan ('p' pointer, or the scalar's byte size '1'..'8').
    const char expect[] = {(std::is_pointer<A>::value ? 'p' : (char)('0' + sizeof(A)))..., 0};
    if (nargs != (int)sizeof...(A) || std::strcmp(expect, kinds) != 0) {
        fprintf(stderr, "argument mismatch: plan passes %d args '%s', kernel takes %zu '%s'\n", nargs, kinds, sizeof...(A), expect);
        abort();
    }
    call(reinterpret_cast<void (*)(A...)>(fn), args, std::index_sequence_for<A...>{});
}
struct Registrar {
    template <typename... A> Registrar(const char* name, void (*f)(A...)) { emu_register(name, (void*)f, &invoke<A...>); }
};
}

// ---- added for the norm/softmax/scan seeds (wip/seeds-norm) -------------------------------------
// Several blocks are resident at once (emulate.cpp's scheduler; each resident block runs in its own
// copy of the kernel object, so static __shared__ variables are per block); __nanosleep yields to the
// scheduler so a block that spins on another block's flag lets that block run.
extern "C" void emu_yield();
inline void __nanosleep(unsigned) { emu_yield(); }
inline void __threadfence() {}
inline void __threadfence_block() {}
// Warp votes (__ballot_sync, __any_sync, __all_sync): the seeds-misc block below.

// ==== seeds-misc additions (append-only block: cp.async, warp votes and matches, bit intrinsics) ====
#include <vector>

// cp.async through <cuda_pipeline.h> (fakeinc/cuda_pipeline.h is empty; the primitives live here).
// Copies are queued per thread and performed only when __pipeline_wait_prior releases their group,
// so a kernel that reads shared memory before waiting (or before the barrier after the wait) sees
// stale data, as it could on the GPU. Groups left pending when the block changes are dropped (on the
// GPU they would land in the finished block's shared memory).
namespace emu_pipe {
struct Copy { void* dst; const void* src; size_t bytes, zfill; };
struct Thread {
    std::vector<std::vector<Copy>> committed;
    std::vector<Copy> open;
    unsigned bx = ~0u, by = ~0u, bz = ~0u;
};
inline Thread& mine()
{
    static std::vector<Thread> all;
    unsigned tid = emu_thread_idx.x + emu_block_dim.x * (emu_thread_idx.y + emu_block_dim.y * emu_thread_idx.z);
    if (all.size() <= tid) all.resize(tid + 1);
    Thread& t = all[tid];
    if (t.bx != emu_block_idx.x || t.by != emu_block_idx.y || t.bz != emu_block_idx.z) {
        t.committed.clear(); t.open.clear();
        t.bx = emu_block_idx.x; t.by = emu_block_idx.y; t.bz = emu_block_idx.z;
    }
    return t;
}
inline void perform(const Copy& c)
{
    std::memcpy(c.dst, c.src, c.bytes - c.zfill);
    std::memset(static_cast<char*>(c.dst) + (c.bytes - c.zfill), 0, c.zfill);
}
}
inline void __pipeline_memcpy_async(void* dst, const void* src, size_t bytes, size_t zfill = 0)
{
    if ((bytes != 4 && bytes != 8 && bytes != 16) || zfill > bytes || ((uintptr_t)dst % bytes) || ((uintptr_t)src % bytes)) {
        fprintf(stderr, "__pipeline_memcpy_async: bad size %zu / zfill %zu or misaligned address\n", bytes, zfill);
        abort();
    }
    emu_pipe::mine().open.push_back({dst, src, bytes, zfill});
}
inline void __pipeline_commit()
{
    emu_pipe::Thread& t = emu_pipe::mine();
    t.committed.push_back(std::move(t.open));
    t.open.clear();
}
inline void __pipeline_wait_prior(size_t prior)
{
    emu_pipe::Thread& t = emu_pipe::mine();
    while (t.committed.size() > prior) {
        for (const auto& c : t.committed.front()) emu_pipe::perform(c);
        t.committed.erase(t.committed.begin());
    }
}

// Warp votes and matches. Every lane of the warp must take part (full masks only), as in the kernels
// that use them; each lane posts its value and reads every other lane's through emu_warp_exchange.
inline unsigned emu_lane_count()
{
    unsigned threads = emu_block_dim.x * emu_block_dim.y * emu_block_dim.z;
    unsigned lane0 = (emu_thread_idx.x + emu_block_dim.x * (emu_thread_idx.y + emu_block_dim.y * emu_thread_idx.z)) & ~31u;
    return std::min(32u, threads - lane0);
}
template <typename T> inline unsigned __match_any_sync(unsigned, T v)
{
    uint64_t bits = 0; std::memcpy(&bits, &v, sizeof(T));
    unsigned mask = 0, lanes = emu_lane_count();
    for (unsigned l = 0; l < lanes; ++l) {   // one exchange round per source lane
        uint64_t other = emu_warp_exchange(bits, (int)l);
        if (other == bits) mask |= 1u << l;
    }
    return mask;
}
inline unsigned __ballot_sync(unsigned, int p)
{
    unsigned mask = 0, lanes = emu_lane_count();
    for (unsigned l = 0; l < lanes; ++l)
        if (emu_warp_exchange(p != 0, (int)l)) mask |= 1u << l;
    return mask;
}
inline int __any_sync(unsigned m, int p) { return __ballot_sync(m, p) != 0; }
inline int __all_sync(unsigned m, int p) { return __ballot_sync(m, p) == (emu_lane_count() == 32 ? 0xffffffffu : (1u << emu_lane_count()) - 1); }
template <typename T> inline T __shfl_sync(unsigned, T v, int src, int width = 32)
{
    int lane = (int)emu_lane();
    return emu_shfl(v, (lane & ~(width - 1)) + (src & (width - 1)));
}
template <typename T> inline T __ldca(const T* p) { return *p; }
template <typename T> inline T __ldcv(const T* p) { return *const_cast<const volatile T*>(p); }
template <typename T> inline T atomicExch(T* p, T v) { T old = *p; *p = v; return old; }
template <typename T> inline T atomicCAS(T* p, T cmp, T v) { T old = *p; if (old == cmp) *p = v; return old; }
template <typename T> inline T atomicMax(T* p, T v) { T old = *p; if (v > old) *p = v; return old; }
template <typename T> inline T atomicOr(T* p, T v) { T old = *p; *p = old | v; return old; }
inline float __fdividef(float a, float b) { return a / b; }
inline unsigned __activemask() { return emu_lane_count() == 32 ? 0xffffffffu : (1u << emu_lane_count()) - 1; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
inline unsigned __brev(unsigned x) { unsigned r = 0; for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i); return r; }
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s)
{
    uint64_t v = ((uint64_t)y << 32) | x; unsigned r = 0;
    for (int i = 0; i < 4; ++i) r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
    return r;
}
template <typename T> inline T __ldcs(const T* p) { return *p; }
template <typename T> inline T __ldcg(const T* p) { return *p; }
template <typename T> inline T __ldlu(const T* p) { return *p; }
template <typename T> inline void __stcs(T* p, T v) { *p = v; }
template <typename T> inline void __stcg(T* p, T v) { *p = v; }
template <typename T> inline void __stwt(T* p, T v) { *p = v; }
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(8) int2 { int x, y; };
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline float2 make_float2(float x, float y) { return {x, y}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
// ==== end of seeds-misc additions ====

// ==== torch-replies additions (bf16 arithmetic: each operation exact in float, then rounded to
// bf16 once, which is what the hardware's bf16 add/mul/fma give for these magnitudes) ====
inline __nv_bfloat16 __float2bfloat16(float f) { return __float2bfloat16_rn(f); }
inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) { return __float2bfloat16_rn(__bfloat162float(a) + __bfloat162float(b)); }
inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) { return __float2bfloat16_rn(__bfloat162float(a) * __bfloat162float(b)); }
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c)
{
    return __float2bfloat16_rn((float)((double)__bfloat162float(a) * __bfloat162float(b) + __bfloat162float(c)));
}
// ==== end of torch-replies additions ====
