/* kforge:plan
{"params": {"BLOCK": [128, 256]}, "scratch": [{"name": "partials", "bytes": "ceil_div(M, 64) * 4"}],
 "launches": [{"kernel": "k", "grid": ["ceil_div(M, 64)", 1, 1], "block": ["BLOCK", 1, 1], "smem": "BLOCK / 32 * 4",
   "args": ["x", "partials", "M", {"value": "N", "dtype": "i64"}], "repeat": "2", "swap": ["y", "partials"]}]}
*/
extern "C" __global__ void k(const float* x, float* p, int M, long long N) {}
