// Reference for histogram_u8: a first launch zeroes the 256 bins; then each block counts its
// grid-stride share of the bytes in a shared-memory histogram and adds it to the output with one
// atomicAdd per bin. Integer counts, so the order of the additions does not matter.
/* kforge:plan
{ "launches": [{"kernel": "histogram_zero_ref", "grid": [1], "block": [256], "args": ["hist"]},
               {"kernel": "histogram_ref", "grid": ["min(ceil_div(n, 256), 4096)"], "block": [256],
                "args": ["data", "hist", "n"]}] }
*/

extern "C" __global__ void histogram_zero_ref(unsigned int* hist)
{
    hist[threadIdx.x] = 0;
}

extern "C" __global__ void histogram_ref(const unsigned char* data, unsigned int* hist, int64_t n)
{
    __shared__ unsigned int local[256];
    local[threadIdx.x] = 0;
    __syncthreads();
    for (int64_t i = (int64_t)blockIdx.x * 256 + threadIdx.x; i < n; i += (int64_t)gridDim.x * 256)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    if (local[threadIdx.x] != 0)
        atomicAdd(&hist[threadIdx.x], local[threadIdx.x]);
}
