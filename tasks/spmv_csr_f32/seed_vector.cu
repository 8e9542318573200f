// spmv_csr_f32 seed: "CSR vector", LANES consecutive threads per row (LANES divides 32): the lanes
// stride through the row together (coalesced reads of col_idx and vals), then combine their
// partial sums with shuffles inside their segment of the warp. The matrix is streamed with
// evict-first loads (__ldcs), so the gathered x (16 MB on the bench shapes) stays in L2; x goes
// through the read-only path (__ldg). Simple and fast on even rows; on skewed rows the lanes of a
// long row work alone (see seed_merge_path.cu).
/* kforge:plan
{ "params": {"LANES": [2, 4, 8, 16, 32], "BLOCK": [128, 256]},
  "launches": [{"kernel": "spmv_vector", "grid": ["ceil_div(R, BLOCK / LANES)"], "block": ["BLOCK"],
                "args": ["row_ptr", "col_idx", "vals", "x", "y", "R"]}] }
*/

extern "C" __global__ void __launch_bounds__(BLOCK)
spmv_vector(const int* __restrict__ row_ptr, const int* __restrict__ col_idx, const float* __restrict__ vals,
            const float* __restrict__ x, float* __restrict__ y, int R)
{
    const int lane = threadIdx.x % LANES;
    const int r = blockIdx.x * (BLOCK / LANES) + threadIdx.x / LANES;
    // Every lane of the warp takes part in the shuffles, so rows past the end compute an empty sum.
    float sum = 0.0f;
    if (r < R) {
        const int end = __ldcs(&row_ptr[r + 1]);
#pragma unroll 4
        for (int k = __ldcs(&row_ptr[r]) + lane; k < end; k += LANES)
            sum = fmaf(__ldcs(&vals[k]), __ldg(&x[__ldcs(&col_idx[k])]), sum);
    }
#pragma unroll
    for (int offset = LANES / 2; offset > 0; offset >>= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (r < R && lane == 0)
        y[r] = sum;
}
