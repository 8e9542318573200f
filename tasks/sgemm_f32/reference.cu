// Reference for sgemm_f32: 64 x 64 tiles of C per block, staged through shared memory in steps of
// 16 along K; each of the 256 threads accumulates a 4 x 4 patch of C in fp64 and rounds once.
// Out-of-range rows and columns are loaded as zeros and never stored.
/* kforge:plan
{ "launches": [{"kernel": "sgemm_ref", "grid": ["ceil_div(N, 64)", "ceil_div(M, 64)", 1], "block": [256],
                "args": ["A", "B", "C", "M", "N", "K"]}] }
*/

#define TILE 64
#define STEP 16

extern "C" __global__ void sgemm_ref(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ float As[STEP][TILE];   // As[k][m]
    __shared__ float Bs[STEP][TILE];   // Bs[k][n]
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int m0 = blockIdx.y * TILE, n0 = blockIdx.x * TILE;
    double acc[4][4] = {};

    for (int k0 = 0; k0 < K; k0 += STEP) {
        for (int i = threadIdx.x; i < TILE * STEP; i += 256) {
            int r = i / STEP, c = i % STEP;   // A element (m0 + r, k0 + c)
            int m = m0 + r, k = k0 + c;
            As[c][r] = (m < M && k < K) ? A[(long long)m * K + k] : 0.0f;
        }
        for (int i = threadIdx.x; i < STEP * TILE; i += 256) {
            int r = i / TILE, c = i % TILE;   // B element (k0 + r, n0 + c)
            int k = k0 + r, n = n0 + c;
            Bs[r][c] = (k < K && n < N) ? B[(long long)k * N + n] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < STEP; ++k)
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j)
                    acc[i][j] += (double)As[k][ty * 4 + i] * (double)Bs[k][tx * 4 + j];
        __syncthreads();
    }
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
            int m = m0 + ty * 4 + i, n = n0 + tx * 4 + j;
            if (m < M && n < N)
                C[(long long)m * N + n] = (float)acc[i][j];
        }
}
