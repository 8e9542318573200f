// sgemm_f32 seed: the textbook shared-memory tiled kernel. A TILE x TILE block computes a
// TILE x TILE patch of C, one element per thread, staging TILE x TILE tiles of A and B; edges and a
// K that is not a multiple of TILE are handled by loading zeros.
/* kforge:plan
{ "params": {"TILE": [16, 32]},
  "launches": [{"kernel": "sgemm_tiled", "grid": ["ceil_div(N, TILE)", "ceil_div(M, TILE)", 1],
                "block": ["TILE", "TILE", 1], "args": ["A", "B", "C", "M", "N", "K"]}] }
*/

extern "C" __global__ void __launch_bounds__(TILE * TILE)
sgemm_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int m = blockIdx.y * TILE + ty, n = blockIdx.x * TILE + tx;
    float acc = 0.0f;

    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (m < M && k0 + tx < K) ? A[(int64_t)m * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && n < N) ? B[(int64_t)(k0 + ty) * N + n] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();
    }
    if (m < M && n < N)
        C[(int64_t)m * N + n] = acc;
}
