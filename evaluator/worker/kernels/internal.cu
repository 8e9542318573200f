// kforge's own device kernels, compiled by NVRTC inside the GPU worker: input generation, poison
// and canary patterns, checksums, the output comparison and the SM-clock probe. Preceded at build
// time by element.cuh, generate.cuh and compare.cuh (see evaluator/CMakeLists.txt).

struct KfCompareResult {
    kf_u64 mismatches;
    kf_u64 first_index;      // smallest mismatching index (~0 when none)
    kf_u64 not_finite;       // NaN or infinity where the reference is finite
    kf_u64 max_abs_err_bits; // bits of the largest finite |got - expected| (doubles >= 0 order as bits)
};

struct KfAbsStats {
    double sum_abs;
    kf_u64 max_abs_bits;
};

#define KF_GRID_STRIDE(i, n)                                                                       \
    for (kf_u64 i = (kf_u64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (kf_u64)gridDim.x * blockDim.x)

extern "C" __global__ void kforge_generate(void* out, kf_u64 n, KfGenParams params)
{
    KF_GRID_STRIDE(i, n)
        kf_store_bits(out, params.dtype, i, kf_generate_bits(params, i));
}

// Fills `bytes` with a seeded pseudo-random byte pattern (canaries, scratch garbage).
extern "C" __global__ void kforge_fill_pattern(unsigned char* data, kf_u64 bytes, kf_u64 seed)
{
    KF_GRID_STRIDE(i, bytes)
        data[i] = (unsigned char)(kf_random_bits(seed, 0x6361, i / 8) >> (8 * (i % 8)));
}

// An order-independent 64-bit checksum: the sum of mixed (position, byte) pairs, so any change of
// any byte changes it (with overwhelming probability) whatever the thread order.
extern "C" __global__ void kforge_checksum(const unsigned char* data, kf_u64 bytes, kf_u64* result)
{
    kf_u64 local = 0;
    kf_u64 words = bytes / 8;
    const kf_u64* data64 = (const kf_u64*)data;
    KF_GRID_STRIDE(i, words)
        local += kf_mix64(data64[i] ^ kf_mix64(i + 0x1234567ULL));
    KF_GRID_STRIDE(i, bytes - words * 8)
        local += kf_mix64((kf_u64)data[words * 8 + i] ^ kf_mix64(~(words * 8 + i)));
    atomicAdd(result, local);
}

extern "C" __global__ void kforge_compare(const void* got, const void* expected, kf_u64 n, int dtype, int exact,
                                          double atol, double rtol, KfCompareResult* result)
{
    kf_u64 mismatches = 0, not_finite = 0, first = ~0ULL, max_err = 0;
    int is_float = kf_dtype_is_float(dtype);
    KF_GRID_STRIDE(i, n) {
        kf_u64 g = kf_load_bits(got, dtype, i);
        kf_u64 e = kf_load_bits(expected, dtype, i);
        if (!kf_element_matches(g, e, dtype, exact, atol, rtol)) {
            ++mismatches;
            if (i < first)
                first = i;
        }
        if (is_float) {
            double gv = kf_bits_to_value(g, dtype);
            double ev = kf_bits_to_value(e, dtype);
            if ((kf_is_nan(gv) || kf_is_inf(gv)) && !(kf_is_nan(ev) || kf_is_inf(ev))) {
                ++not_finite;
            } else if (!(kf_is_nan(gv) || kf_is_inf(gv) || kf_is_nan(ev) || kf_is_inf(ev))) {
                kf_u64 bits = kf_double_to_bits(kf_abs(gv - ev));
                if (bits > max_err)
                    max_err = bits;
            }
        }
    }
    if (mismatches) {
        atomicAdd(&result->mismatches, mismatches);
        atomicMin(&result->first_index, first);
    }
    if (not_finite)
        atomicAdd(&result->not_finite, not_finite);
    if (max_err)
        atomicMax(&result->max_abs_err_bits, max_err);
}

extern "C" __global__ void kforge_abs_stats(const void* data, kf_u64 n, int dtype, KfAbsStats* out)
{
    double sum = 0;
    kf_u64 max_bits = 0;
    KF_GRID_STRIDE(i, n) {
        double v = kf_abs(kf_bits_to_value(kf_load_bits(data, dtype, i), dtype));
        if (kf_is_nan(v) || kf_is_inf(v))
            continue;
        sum += v;
        kf_u64 bits = kf_double_to_bits(v);
        if (bits > max_bits)
            max_bits = bits;
    }
    atomicAdd(&out->sum_abs, sum);
    atomicMax(&out->max_abs_bits, max_bits);
}

// Reads `words` 16-byte words and keeps their sum only if it is impossible, so nothing is written:
// L2 ends up holding clean lines of this buffer, and every dirty line the previous run left has
// been written back before the next timed run starts (a memset flush would leave L2 full of dirty
// lines whose write-back then competes with the timed kernel).
extern "C" __global__ void kforge_flush_read(const kf_u64* data, kf_u64 words, kf_u64* sink)
{
    kf_u64 acc = 0;
    KF_GRID_STRIDE(i, words)
        acc ^= data[i];
    if (acc == 0x0123456789abcdefULL)
        *sink = acc;
}

// Records (clock64, globaltimer) from a block on SM 0. Launched with several blocks per SM so one
// lands there; comparing two probes gives the SM clock over the interval between them.
extern "C" __global__ void kforge_clock_probe(kf_u64* slot)
{
    unsigned int smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    if (smid == 0 && threadIdx.x == 0) {
        kf_u64 timer;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(timer));
        slot[0] = (kf_u64)clock64();
        slot[1] = timer;
    }
}
