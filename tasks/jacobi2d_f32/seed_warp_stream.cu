// jacobi2d_f32 seed: S time steps per launch (temporal blocking) by register streaming. Each warp
// owns a strip of 128 columns (4 contiguous per lane) and walks down its rows; for every time level
// s < S it keeps a 3-row window in registers, so each new input row advances every level by one row.
// The levels are skewed: level s lags the input by 2 s rows and reads its lower level's window as it
// was before the row arrived (levels updated in descending order), so the S updates of a row are
// independent (4 S-way ILP per lane, no chain through the levels). Left and right neighbours of a
// lane's 4 cells are 2 shuffles per row and level (0.5 per cell-step); nothing else leaves
// registers. DRAM sees the grid once per S steps (about 1.2 reads + 1 write) instead of every step.
//
// Halos: a warp's values go stale S columns from its strip's edges (the end lanes have no
// neighbour) and S rows from its row range, so strips overlap: a warp writes columns [S, 128 - S)
// of its strip (128 - 2S new columns) and rows [ys, ys + TY) after reading rows ys - S ..
// ys + TY + S - 1 (TY + 3S iterations, the last S only draining the levels). Dirichlet boundary: a
// cell in the first/last row or column keeps its value at every level (a select, so garbage outside
// the grid never reaches a cell inside it). Rows are only 4-byte aligned, so they are loaded and
// stored coalesced (lane + 32 c) and turned into each lane's 4 contiguous cells through a 512-byte
// shared buffer per warp; input rows are prefetched 3 iterations ahead, and the row loop is unrolled
// by 3 so the 3-slot windows rotate by name rather than by register moves.
//
// Launch plan: L = ceil(T / S) launches; the first does T - S (L - 1) steps (levels past `steps`
// copy their input), the others S each, alternating between u_out and `tmp` so the last one writes
// u_out.
//
// Params: S {4, 8} steps per launch, TY {32, 64, 128} rows per warp (vertical halo overhead
// (TY + 2S) / TY against parallelism: 4096 x 4096 with S 8, TY 64 is 37 x 64 = 2368 warps).
// NVRTC sm_90a: about 115 registers at S 4 (16 warps per SM), 165 at S 8 (12), no spills.
// Expected: S times less DRAM traffic than one step per launch for ~7 instructions per cell-step:
// roughly 0.5 ms for 4096^2 x 64 on H100 (the one-step-per-launch model says 2.9 ms), i.e. about
// 5-8x the two-steps seed and several times the model roofline (may_exceed).
/* kforge:plan
{ "params": {"S": [4, 8], "TY": [32, 64, 128]},
  "scratch": [{"name": "tmp", "bytes": "4 * NX * NY"}],
  "launches": [
    {"kernel": "jacobi_stream_first", "grid": ["ceil_div(ceil_div(NX, 128 - 2 * S) * ceil_div(NY, TY), 4)"], "block": [128],
     "args": ["u_in", "u_out", "tmp", "NX", "NY", "T - S * (ceil_div(T, S) - 1)", "(ceil_div(T, S) - 1) % 2"]},
    {"kernel": "jacobi_stream", "grid": ["ceil_div(ceil_div(NX, 128 - 2 * S) * ceil_div(NY, TY), 4)"], "block": [128],
     "args": ["u_out", "tmp", "NX", "NY", "S", "(ceil_div(T, S) - 2 - iter) % 2"], "repeat": "ceil_div(T, S) - 1"}] }
*/

#define OUT_W (128 - 2 * S)   // new columns per warp
#define FULL 0xffffffffu

template <int P> struct Phase {   // a compile-time slot index for the rotating windows
    static constexpr int value = P;
};

__device__ __forceinline__ float4 level_row(float4 up, float4 c, float4 down, bool keep_row, bool k0, bool k1, bool k2,
                                            bool k3)
{
    const float left = __shfl_up_sync(FULL, c.w, 1), right = __shfl_down_sync(FULL, c.x, 1);
    float4 o;
    o.x = keep_row || k0 ? c.x : 0.25f * ((up.x + down.x) + (left + c.y));
    o.y = keep_row || k1 ? c.y : 0.25f * ((up.y + down.y) + (c.x + c.z));
    o.z = keep_row || k2 ? c.z : 0.25f * ((up.z + down.z) + (c.y + c.w));
    o.w = keep_row || k3 ? c.w : 0.25f * ((up.w + down.w) + (c.z + right));
    return o;
}

__device__ __forceinline__ void stream(const float* __restrict__ src, float* __restrict__ dst, int NX, int NY, int steps)
{
    __shared__ __align__(16) float buf[4][128];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int strip = blockIdx.x * 4 + warp;
    const int strips_x = (NX + OUT_W - 1) / OUT_W;
    if (strip >= strips_x * ((NY + TY - 1) / TY))
        return;   // whole warps leave; no block barrier below
    const int xs = (strip % strips_x) * OUT_W - S, ys = (strip / strips_x) * TY;
    float* row_buf = buf[warp];

    // Columns of this lane: xs + 4 lane + c. Boundary (or outside) columns keep their value.
    const int j = xs + 4 * lane;
    const bool k0 = j <= 0 || j >= NX - 1, k1 = j + 1 <= 0 || j + 1 >= NX - 1, k2 = j + 2 <= 0 || j + 2 >= NX - 1,
               k3 = j + 3 <= 0 || j + 3 >= NX - 1;

    const int rows = TY + 2 * S;   // input rows ys - S + i, i < rows
    float pre[3][4];               // raw coalesced loads, 3 rows ahead: column xs + lane + 32 c
    auto load_row = [&](int i, float* out) {
        const int r = ys - S + i;
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            const int col = xs + lane + 32 * c;
            out[c] = (i < rows && r >= 0 && r < NY && col >= 0 && col < NX) ? __ldg(&src[r * NX + col]) : 0.0f;
        }
    };
    load_row(0, pre[0]);
    load_row(1, pre[1]);
    load_row(2, pre[2]);

    float4 win[S][3];   // level s, rows in a rotating 3-slot window
#pragma unroll
    for (int s = 0; s < S; ++s)
#pragma unroll
        for (int q = 0; q < 3; ++q)
            win[s][q] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    // One iteration: every level advances by one row, from the windows as they were before the
    // iteration (levels in descending order, so each reads its lower level before that one is
    // updated): the S level updates are independent, which gives each warp 4 S-way ILP instead of
    // a chain through the levels. Level s therefore lags the input by 2 s rows: at iteration i (input
    // row r = ys - S + i) level s produces row r - 2 s. Slot P of a window holds its oldest row
    // before the iteration and its newest after it.
    auto step_row = [&](int i, auto phase) {
        constexpr int P = decltype(phase)::value, MID = (P + 1) % 3, NEW = (P + 2) % 3;
        const int r = ys - S + i;
        {
            const int y = r - 2 * S;
            const float4 out = level_row(win[S - 1][P], win[S - 1][MID], win[S - 1][NEW],
                                         y <= 0 || y >= NY - 1 || S > steps, k0, k1, k2, k3);
            if (y >= ys && y < NY) {   // y < ys + TY holds: i < iterations
                *reinterpret_cast<float4*>(&row_buf[4 * lane]) = out;
                __syncwarp();
#pragma unroll
                for (int c = 0; c < 4; ++c) {
                    const int e = lane + 32 * c, col = xs + e;
                    if (e >= S && e < 128 - S && col < NX)
                        dst[y * NX + col] = row_buf[e];
                }
                __syncwarp();
            }
        }
#pragma unroll
        for (int s = S - 1; s >= 1; --s) {
            const int y = r - 2 * s;
            win[s][P] = level_row(win[s - 1][P], win[s - 1][MID], win[s - 1][NEW], y <= 0 || y >= NY - 1 || s > steps,
                                  k0, k1, k2, k3);
        }
#pragma unroll
        for (int c = 0; c < 4; ++c)
            row_buf[lane + 32 * c] = pre[P][c];
        __syncwarp();
        win[0][P] = *reinterpret_cast<const float4*>(&row_buf[4 * lane]);
        __syncwarp();
        load_row(i + 3, pre[P]);
    };
    const int iterations = TY + 3 * S;   // the last S only drain the levels
    for (int i = 0; i < iterations; i += 3) {
        step_row(i, Phase<0>{});
        if (i + 1 < iterations)
            step_row(i + 1, Phase<1>{});
        if (i + 2 < iterations)
            step_row(i + 2, Phase<2>{});
    }
}

extern "C" __global__ void __launch_bounds__(128)
jacobi_stream_first(const float* __restrict__ u_in, float* __restrict__ u_out, float* __restrict__ tmp, int NX, int NY,
                    int steps, int to_tmp)
{
    stream(u_in, to_tmp ? tmp : u_out, NX, NY, steps);
}

// to_tmp = 1: u_out -> tmp; 0: tmp -> u_out.
extern "C" __global__ void __launch_bounds__(128)
jacobi_stream(float* __restrict__ u_out, float* __restrict__ tmp, int NX, int NY, int steps, int to_tmp)
{
    if (to_tmp)
        stream(u_out, tmp, NX, NY, steps);
    else
        stream(tmp, u_out, NX, NY, steps);
}
