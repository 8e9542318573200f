// sgemm_f32 seed: BM x BN tiles of C per block, K consumed BK at a time through shared memory
// (A stored transposed, so a thread's TM values of A are contiguous); each thread accumulates a
// TM x TN register tile with fp32 FMAs. Edge tiles load zeros and guard their stores; K % 16 == 0,
// so K % BK == 0 for both BK values.
/* kforge:plan
{ "params": {"BM": [64, 128], "BN": [64, 128], "BK": [8, 16], "TM": [4, 8], "TN": [4, 8]},
  "launches": [{"kernel": "sgemm_regblock", "grid": ["ceil_div(N, BN)", "ceil_div(M, BM)", 1],
                "block": ["(BM / TM) * (BN / TN)"], "args": ["A", "B", "C", "M", "N", "K"]}] }
*/

#define THREADS ((BM / TM) * (BN / TN))

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_regblock(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N,
               int K)
{
    __shared__ float As[BK][BM];   // As[k][m]
    __shared__ float Bs[BK][BN];   // Bs[k][n]
    const int tid = threadIdx.x;
    const int tcol = tid % (BN / TN), trow = tid / (BN / TN);
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = tid; i < BM * BK; i += THREADS) {
            int r = i / BK, c = i % BK;
            int m = m0 + r;
            As[c][r] = m < M ? A[(int64_t)m * K + k0 + c] : 0.0f;
        }
        for (int i = tid; i < BK * BN; i += THREADS) {
            int r = i / BN, c = i % BN;
            int n = n0 + c;
            Bs[r][c] = n < N ? B[(int64_t)(k0 + r) * N + n] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i)
                a[i] = As[k][trow * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j)
                b[j] = Bs[k][tcol * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        int m = m0 + trow * TM + i;
        if (m >= M)
            continue;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            int n = n0 + tcol * TN + j;
            if (n < N)
                C[(int64_t)m * N + n] = acc[i][j];
        }
    }
}
