#include "../emulate/csr_gen.hpp"
#include <cstdio>
#include <vector>
#include <cmath>
#include <cstring>
struct Case { const char* name; int64_t R, C, NNZ; double sigma; int64_t band; };
int main(int argc, char** argv){
  double ac = atof(argv[1]), rt = atof(argv[2]);
  Case cases[] = {{"single-row",1,100003,100000,0,100003},{"sparse-empty",1000,1000,300,1.0,1000},{"tiny",37,5,111,0,5},{"skewed-test",5000,7000,80000,2.0,7000},
                  {"uniform16",1<<22,1<<22,1<<26,0.0,1<<22},{"skewed16",1<<22,1<<22,1<<26,2.0,1<<22},{"banded7",4096000,4096000,28672000,0.3,51201},{"HO",9000001,9000001,45000005,0.7,6001}};
  int first = argc > 3 ? atoi(argv[3]) : 0, last = argc > 4 ? atoi(argv[4]) : 8;
  for (int ci = first; ci < last; ++ci) { Case c = cases[ci];
    CsrMatrix m = make_csr(1234 + ci, 1, 2, c.R, c.C, c.NNZ, c.sigma, c.band, 4096);
    // structure checks
    int64_t empty = 0, maxlen = 0; for (int64_t r = 0; r < c.R; ++r) { int64_t L = m.row_ptr[r+1]-m.row_ptr[r]; empty += L==0; maxlen = std::max(maxlen, L);
      for (int64_t k = m.row_ptr[r]; k < m.row_ptr[r+1]; ++k) { if (m.col[k] < 0 || m.col[k] >= c.C) { printf("BAD col\n"); return 1; } if (k > m.row_ptr[r] && m.col[k] <= m.col[k-1]) { printf("BAD order\n"); return 1; } } }
    std::vector<float> v(c.NNZ), x(c.C); for (int64_t k = 0; k < c.NNZ; ++k) v[k] = (float)(2*U01(9,3,k)-1); for (int64_t i = 0; i < c.C; ++i) x[i] = (float)(2*U01(9,4,i)-1);
    double maxref = 0; std::vector<double> ref(c.R); for (int64_t r = 0; r < c.R; ++r) { double s = 0; for (int64_t k = m.row_ptr[r]; k < m.row_ptr[r+1]; ++k) s += (double)v[k]*x[m.col[k]]; ref[r] = (float)s; maxref = std::max(maxref, std::fabs(ref[r])); }
    double atol = ac * maxref; double seq = 0, warp = 0, drop = 0, bf = 0; int64_t dropfail = 0;
    for (int64_t r = 0; r < c.R; ++r) { float s = 0; float lane[32] = {0}; int64_t b = m.row_ptr[r], e = m.row_ptr[r+1];
      for (int64_t k = b; k < e; ++k) { s = std::fmaf(v[k], x[m.col[k]], s); lane[(k-b)%32] = std::fmaf(v[k], x[m.col[k]], lane[(k-b)%32]); }
      for (int off = 16; off; off >>= 1) for (int l = 0; l < off; ++l) lane[l] += lane[l+off];
      float d = 0; for (int64_t k = b; k + 1 < e; ++k) d = std::fmaf(v[k], x[m.col[k]], d);
      double tol = atol + rt * std::fabs(ref[r]);
      seq = std::max(seq, std::fabs(s - ref[r]) / tol); warp = std::max(warp, std::fabs(lane[0] - ref[r]) / tol); double dr = std::fabs((e > b ? d : 0) - ref[r]) / tol; drop = std::max(drop, dr); dropfail += dr > 1; }
    printf("%-13s R=%ld C=%ld NNZ=%ld empty=%ld maxrow=%ld max|ref|=%.3g atol=%.3g | seq %.3f warp %.3f | drop-last-nnz: max %.1f, rows failing %ld\n", c.name, c.R, c.C, c.NNZ, empty, maxlen, maxref, atol, seq, warp, drop, dropfail);
  }
}
