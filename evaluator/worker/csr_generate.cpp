// The CSR construction, step by step as the spec states it: groups of rows share an exact number of
// nonzeros, split by lognormal weights in exact integer arithmetic; each row's columns are one per
// stratum of a window that follows the diagonal. Rows are independent once the row pointers exist,
// so both passes run on all cores.
#include "evaluator/worker/csr_generate.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

#include "evaluator/worker/kernels/generate.cuh"
#include "util/host_resources.hpp"

namespace kforge {
namespace {

__extension__ using Wide = __int128;

// Runs body(begin, end) over [0, count) split across the CPUs this process may use.
template <typename Body>
void parallel_ranges(int64_t count, int64_t granule, Body body)
{
    static const auto cpus = static_cast<int64_t>(usable_cpus()); // file reads: once per worker, not per input
    int64_t threads = std::max<int64_t>(1, std::min<int64_t>(cpus, count / granule));
    if (threads <= 1) {
        body(int64_t{0}, count);
        return;
    }
    std::vector<std::thread> pool;
    int64_t chunk = (count + threads - 1) / threads;
    for (int64_t t = 0; t < threads; ++t) {
        int64_t begin = t * chunk, end = std::min(count, begin + chunk);
        if (begin < end)
            pool.emplace_back([=] { body(begin, end); });
    }
    for (auto& thread : pool)
        thread.join();
}

} // namespace

CsrMatrix generate_csr(const CsrSizes& sizes, uint64_t seed, uint64_t row_stream, uint64_t col_stream)
{
    const int64_t R = sizes.rows, C = sizes.cols, NNZ = sizes.nnz, W = sizes.window, G = std::max<int64_t>(1, sizes.group);
    CsrMatrix m;
    m.row_ptr.assign(static_cast<size_t>(R + 1), 0);
    m.cols.assign(static_cast<size_t>(NNZ), 0);

    // Groups are independent: each fills its own rows' pointers.
    int64_t groups = (R + G - 1) / G;
    parallel_ranges(groups, 64, [&](int64_t first, int64_t last) {
        std::vector<uint64_t> weights;
        for (int64_t g = first; g < last; ++g) {
            int64_t s = g * G, e = std::min(R, s + G);
            int64_t base = static_cast<int64_t>(Wide(NNZ) * s / R);
            int64_t n_g = static_cast<int64_t>(Wide(NNZ) * e / R) - base;
            weights.resize(static_cast<size_t>(e - s));
            Wide total = 0;
            for (int64_t r = s; r < e; ++r) {
                double z = kf_standard_normal(seed, row_stream, static_cast<uint64_t>(r));
                double w = 1.0 + std::floor(65536.0 * std::exp(std::min(sizes.sigma * z, 16.0)));
                weights[static_cast<size_t>(r - s)] = static_cast<uint64_t>(w);
                total += weights[static_cast<size_t>(r - s)];
            }
            Wide prefix = 0;
            for (int64_t r = s; r < e; ++r) {
                m.row_ptr[static_cast<size_t>(r)] = base + static_cast<int64_t>(Wide(n_g) * prefix / total);
                prefix += weights[static_cast<size_t>(r - s)];
            }
        }
    });
    m.row_ptr[static_cast<size_t>(R)] = NNZ;

    parallel_ranges(R, 4096, [&](int64_t first, int64_t last) {
        for (int64_t r = first; r < last; ++r) {
            int64_t begin = m.row_ptr[static_cast<size_t>(r)];
            int64_t L = m.row_ptr[static_cast<size_t>(r + 1)] - begin;
            int64_t diagonal = static_cast<int64_t>(Wide(r) * C / R);
            int64_t lo = std::min(std::max<int64_t>(diagonal - W / 2, 0), C - W);
            for (int64_t j = 0; j < L; ++j) {
                int64_t a = static_cast<int64_t>(Wide(j) * W / L);
                int64_t b = static_cast<int64_t>(Wide(j + 1) * W / L);
                int64_t k = begin + j;
                uint64_t draw = kf_random_bits(seed, col_stream, static_cast<uint64_t>(k));
                m.cols[static_cast<size_t>(k)] = lo + a + static_cast<int64_t>(draw % static_cast<uint64_t>(b - a));
            }
        }
    });
    return m;
}

} // namespace kforge
