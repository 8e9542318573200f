// Reference for transpose_f32: one output element per grid-stride step, read from its source.
/* kforge:plan
{ "launches": [{"kernel": "transpose_ref", "grid": ["min(ceil_div(M * N, 256), 65536)"], "block": [256],
                "args": ["in", "out", "M", "N"]}] }
*/

extern "C" __global__ void transpose_ref(const float* in, float* out, int M, int N)
{
    const long long total = (long long)M * N;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        long long n = i / M, m = i % M;   // out is N x M: element i is out[n][m]
        out[i] = in[m * N + n];
    }
}
