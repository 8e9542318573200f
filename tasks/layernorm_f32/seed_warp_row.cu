// layernorm_f32 seed: one warp per row (good for short and medium rows), two-pass statistics in
// fp32 with shuffle reductions. With VEC = 4 and N % 4 == 0 the row is read as float4.
/* kforge:plan
{ "params": {"WARPS": [4, 8], "VEC": [1, 4]},
  "launches": [{"kernel": "layernorm_warp", "grid": ["ceil_div(M, WARPS)"], "block": ["32 * WARPS"],
                "args": ["x", "gamma", "beta", "y", "M", "N", "eps"]}] }
*/

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

extern "C" __global__ void __launch_bounds__(32 * WARPS)
layernorm_warp(const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
               float* __restrict__ y, int M, int N, float eps)
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
    if (row >= M)
        return;
    const float* in = x + (int64_t)row * N;
    float* out = y + (int64_t)row * N;
    const bool vec = VEC == 4 && (N & 3) == 0;
    const float4* in4 = reinterpret_cast<const float4*>(in);

    float sum = 0.0f;
    if (vec) {
        for (int i = lane; i < N / 4; i += 32) {
            float4 v = in4[i];
            sum += (v.x + v.y) + (v.z + v.w);
        }
    } else {
        for (int i = lane; i < N; i += 32)
            sum += in[i];
    }
    const float mean = warp_sum(sum) / N;

    float squares = 0.0f;
    if (vec) {
        for (int i = lane; i < N / 4; i += 32) {
            float4 v = in4[i];
            float a = v.x - mean, b = v.y - mean, c = v.z - mean, d = v.w - mean;
            squares += (a * a + b * b) + (c * c + d * d);
        }
    } else {
        for (int i = lane; i < N; i += 32) {
            float d = in[i] - mean;
            squares = fmaf(d, d, squares);
        }
    }
    const float rstd = rsqrtf(warp_sum(squares) / N + eps);

    if (vec) {
        const float4* g4 = reinterpret_cast<const float4*>(gamma);
        const float4* b4 = reinterpret_cast<const float4*>(beta);
        float4* out4 = reinterpret_cast<float4*>(out);
        for (int i = lane; i < N / 4; i += 32) {
            float4 v = in4[i], g = g4[i], b = b4[i];
            out4[i] = make_float4(fmaf((v.x - mean) * rstd, g.x, b.x), fmaf((v.y - mean) * rstd, g.y, b.y),
                                  fmaf((v.z - mean) * rstd, g.z, b.z), fmaf((v.w - mean) * rstd, g.w, b.w));
        }
    } else {
        for (int i = lane; i < N; i += 32)
            out[i] = fmaf((in[i] - mean) * rstd, gamma[i], beta[i]);
    }
}
