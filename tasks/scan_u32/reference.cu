// Reference for scan_u32, reduce-then-scan in three launches over chunks of 2048 elements:
// (1) each block writes its chunk's sum to scratch; (2) one block turns the chunk sums into
// exclusive offsets, 1024 at a time with a running carry; (3) each block scans its chunk, 256
// elements at a time with a Hillis-Steele scan in shared memory, adding its offset and a carry.
// Unsigned arithmetic wraps modulo 2^32 everywhere, as the task defines.
/* kforge:plan
{ "scratch": [{"name": "offsets", "bytes": "4 * ceil_div(n, 2048)"}],
  "launches": [{"kernel": "scan_sums_ref", "grid": ["ceil_div(n, 2048)"], "block": [256], "args": ["in", "offsets", "n"]},
               {"kernel": "scan_offsets_ref", "grid": [1], "block": [1024], "args": ["offsets", "ceil_div(n, 2048)"]},
               {"kernel": "scan_chunks_ref", "grid": ["ceil_div(n, 2048)"], "block": [256],
                "args": ["in", "out", "offsets", "n"]}] }
*/

#define CHUNK 2048

// Inclusive scan of one value per thread over a block of `threads` threads (a power of two).
__device__ unsigned int inclusive_scan(unsigned int value, unsigned int* shared, int threads)
{
    shared[threadIdx.x] = value;
    __syncthreads();
    for (int offset = 1; offset < threads; offset *= 2) {
        unsigned int add = threadIdx.x >= offset ? shared[threadIdx.x - offset] : 0u;
        __syncthreads();
        shared[threadIdx.x] += add;
        __syncthreads();
    }
    unsigned int result = shared[threadIdx.x];
    __syncthreads();
    return result;
}

extern "C" __global__ void scan_sums_ref(const unsigned int* in, unsigned int* sums, int64_t n)
{
    __shared__ unsigned int shared[256];
    const int64_t begin = (int64_t)blockIdx.x * CHUNK;
    unsigned int sum = 0;
    for (int64_t i = begin + threadIdx.x; i < n && i < begin + CHUNK; i += 256)
        sum += in[i];
    sum = inclusive_scan(sum, shared, 256);
    if (threadIdx.x == 255)
        sums[blockIdx.x] = sum;
}

extern "C" __global__ void scan_offsets_ref(unsigned int* sums, int count)
{
    __shared__ unsigned int shared[1024];
    unsigned int carry = 0;
    for (int base = 0; base < count; base += 1024) {
        int i = base + threadIdx.x;
        unsigned int value = i < count ? sums[i] : 0u;
        unsigned int inclusive = inclusive_scan(value, shared, 1024);
        if (i < count)
            sums[i] = carry + inclusive - value;
        __shared__ unsigned int tile_total;
        if (threadIdx.x == 1023)
            tile_total = inclusive;
        __syncthreads();
        carry += tile_total;
        __syncthreads();
    }
}

extern "C" __global__ void scan_chunks_ref(const unsigned int* in, unsigned int* out, const unsigned int* offsets,
                                           int64_t n)
{
    __shared__ unsigned int shared[256];
    __shared__ unsigned int tile_total;
    unsigned int carry = offsets[blockIdx.x];
    for (int64_t base = (int64_t)blockIdx.x * CHUNK; base < (int64_t)(blockIdx.x + 1) * CHUNK && base < n;
         base += 256) {
        int64_t i = base + threadIdx.x;
        unsigned int value = i < n ? in[i] : 0u;
        unsigned int inclusive = inclusive_scan(value, shared, 256);
        if (i < n)
            out[i] = carry + inclusive;
        if (threadIdx.x == 255)
            tile_total = inclusive;
        __syncthreads();
        carry += tile_total;
        __syncthreads();
    }
}
