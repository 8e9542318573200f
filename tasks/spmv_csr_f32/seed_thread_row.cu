// spmv_csr_f32 seed: "CSR scalar", one thread per row. Simple and fine for short, even rows;
// slow when a few rows are very long (one thread walks them alone) and its loads are uncoalesced.
/* kforge:plan
{ "params": {"BLOCK": [128, 256, 512]},
  "launches": [{"kernel": "spmv_scalar", "grid": ["ceil_div(R, BLOCK)"], "block": ["BLOCK"],
                "args": ["row_ptr", "col_idx", "vals", "x", "y", "R"]}] }
*/

extern "C" __global__ void __launch_bounds__(BLOCK)
spmv_scalar(const int* __restrict__ row_ptr, const int* __restrict__ col_idx, const float* __restrict__ vals,
            const float* __restrict__ x, float* __restrict__ y, int R)
{
    const int r = blockIdx.x * BLOCK + threadIdx.x;
    if (r >= R)
        return;
    const int end = row_ptr[r + 1];
    float sum = 0.0f;
    for (int k = row_ptr[r]; k < end; ++k)
        sum = fmaf(vals[k], __ldg(&x[col_idx[k]]), sum);
    y[r] = sum;
}
