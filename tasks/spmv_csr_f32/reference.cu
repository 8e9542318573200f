// Reference for spmv_csr_f32: one thread per row, the row's products summed in fp64 in column
// order and rounded once. An empty row writes 0.
/* kforge:plan
{ "launches": [{"kernel": "spmv_ref", "grid": ["ceil_div(R, 256)"], "block": [256],
                "args": ["row_ptr", "col_idx", "vals", "x", "y", "R"]}] }
*/

extern "C" __global__ void spmv_ref(const int* row_ptr, const int* col_idx, const float* vals, const float* x,
                                    float* y, int R)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R)
        return;
    double sum = 0.0;
    for (int k = row_ptr[r]; k < row_ptr[r + 1]; ++k)
        sum += (double)vals[k] * (double)x[col_idx[k]];
    y[r] = (float)sum;
}
