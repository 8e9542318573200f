// jacobi2d_f32 seed: two steps per launch (temporal blocking). A block owns a BX x BY tile of the
// output, loads the tile plus a 2-cell halo into shared memory, computes step one on the tile plus
// a 1-cell halo, then step two on the tile: about half the DRAM traffic of one step per launch.
// Launch plan: the first launch does 1 step when T is odd and 2 when T is even; then (T - 1) / 2
// launches of 2 steps each. Launches alternate between u_out and `tmp`, starting on whichever
// makes the last one write u_out. Cells outside the grid are never read for cells inside it.
/* kforge:plan
{ "params": {"BX": [32, 64], "BY": [4, 8, 16]},
  "scratch": [{"name": "tmp", "bytes": "4 * NX * NY"}],
  "launches": [
    {"kernel": "jacobi_first2", "grid": ["ceil_div(NX, BX)", "ceil_div(NY, BY)", 1], "block": ["BX", "BY", 1],
     "args": ["u_in", "u_out", "tmp", "NX", "NY", "2 - T % 2", "((T - 1) / 2) % 2"]},
    {"kernel": "jacobi_pair", "grid": ["ceil_div(NX, BX)", "ceil_div(NY, BY)", 1], "block": ["BX", "BY", 1],
     "args": ["u_out", "tmp", "NX", "NY", "((T - 1) / 2 - 1 - iter) % 2"], "repeat": "(T - 1) / 2"}] }
*/

#define HX (BX + 4)
#define HY (BY + 4)

__device__ __forceinline__ bool on_boundary(int i, int j, int NX, int NY)
{
    return i == 0 || j == 0 || i == NY - 1 || j == NX - 1;
}

// `steps` (1 or 2) Jacobi steps from src to dst for this block's tile.
__device__ void advance(const float* __restrict__ src, float* __restrict__ dst, int NX, int NY, int steps)
{
    __shared__ float t0[HY][HX];   // input tile, halo 2; cell (y, x) is grid (i0 - 2 + y, j0 - 2 + x)
    __shared__ float t1[HY][HX];   // after one step (the 1-cell halo ring and the tile)
    const int j0 = blockIdx.x * BX, i0 = blockIdx.y * BY;
    const int tid = threadIdx.y * BX + threadIdx.x;

    for (int e = tid; e < HX * HY; e += BX * BY) {
        int y = e / HX, x = e % HX;
        int i = i0 - 2 + y, j = j0 - 2 + x;
        if (i >= 0 && i < NY && j >= 0 && j < NX)
            t0[y][x] = src[i * NX + j];
    }
    __syncthreads();
    float (*last)[HX] = t0;
    if (steps == 2) {
        for (int e = tid; e < (BX + 2) * (BY + 2); e += BX * BY) {
            int y = 1 + e / (BX + 2), x = 1 + e % (BX + 2);
            int i = i0 - 2 + y, j = j0 - 2 + x;
            if (i < 0 || i >= NY || j < 0 || j >= NX)
                continue;
            t1[y][x] = on_boundary(i, j, NX, NY)
                           ? t0[y][x]
                           : 0.25f * ((t0[y - 1][x] + t0[y + 1][x]) + (t0[y][x - 1] + t0[y][x + 1]));
        }
        __syncthreads();
        last = t1;
    }
    const int y = threadIdx.y + 2, x = threadIdx.x + 2;
    const int i = i0 + threadIdx.y, j = j0 + threadIdx.x;
    if (i >= NY || j >= NX)
        return;
    dst[i * NX + j] = on_boundary(i, j, NX, NY)
                          ? last[y][x]
                          : 0.25f * ((last[y - 1][x] + last[y + 1][x]) + (last[y][x - 1] + last[y][x + 1]));
}

extern "C" __global__ void __launch_bounds__(BX * BY)
jacobi_first2(const float* __restrict__ u_in, float* __restrict__ u_out, float* __restrict__ tmp, int NX, int NY,
              int steps, int to_tmp)
{
    advance(u_in, to_tmp ? tmp : u_out, NX, NY, steps);
}

// to_tmp = 1: u_out -> tmp; 0: tmp -> u_out. Always two steps.
extern "C" __global__ void __launch_bounds__(BX * BY)
jacobi_pair(float* __restrict__ u_out, float* __restrict__ tmp, int NX, int NY, int to_tmp)
{
    if (to_tmp)
        advance(u_out, tmp, NX, NY, 2);
    else
        advance(tmp, u_out, NX, NY, 2);
}
