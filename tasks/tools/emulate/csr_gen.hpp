// The CSR generator of tasks/README.md ("CSR matrices"), implemented straight from the text.
#pragma once
#include <vector>
#include <algorithm>
#include <stdexcept>
#include "draws.hpp"
struct CsrMatrix { std::vector<int64_t> row_ptr; std::vector<int64_t> col; };
inline CsrMatrix make_csr(uint64_t seed, uint64_t t_rows, uint64_t t_cols, int64_t R, int64_t C, int64_t NNZ, double sigma, int64_t band, int64_t group){
  using I = __int128; int64_t W = std::min(band, C);
  if ((NNZ + R - 1) / R > W) throw std::runtime_error("infeasible");
  int64_t G = (int64_t)std::max<I>(1, std::min<I>(group, (I)(W - 1) * R / NNZ));
  CsrMatrix m; m.row_ptr.assign(R + 1, 0); m.col.assign(NNZ, -1);
  std::vector<uint64_t> w(R);
  for (int64_t r = 0; r < R; ++r) w[r] = 1 + (uint64_t)std::floor(65536.0 * std::exp(std::min(sigma * Z(seed, t_rows, r), 16.0)));
  for (int64_t s = 0; s < R; s += G) {
    int64_t e = std::min(R, s + G); int64_t base = (int64_t)((I)NNZ * s / R); int64_t ng = (int64_t)((I)NNZ * e / R) - base;
    I total = 0; for (int64_t r = s; r < e; ++r) total += w[r];
    I prefix = 0; for (int64_t r = s; r < e; ++r) { m.row_ptr[r] = base + (int64_t)((I)ng * prefix / total); prefix += w[r]; }
  }
  m.row_ptr[R] = NNZ;
  for (int64_t r = 0; r < R; ++r) {
    int64_t L = m.row_ptr[r + 1] - m.row_ptr[r]; if (L > W || L < 0) throw std::runtime_error("row too long");
    int64_t d = (int64_t)((I)r * C / R); int64_t lo = std::min(std::max<int64_t>(d - W / 2, 0), C - W);
    for (int64_t j = 0; j < L; ++j) { int64_t a = (int64_t)((I)j * W / L), b = (int64_t)((I)(j + 1) * W / L); int64_t k = m.row_ptr[r] + j;
      m.col[k] = lo + a + (int64_t)(U64(seed, t_cols, k) % (uint64_t)(b - a)); }
  }
  return m;
}
