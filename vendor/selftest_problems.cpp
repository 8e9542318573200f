// Self-test problems: inputs from a fixed seed, answers computed on the host in double precision.
//
// The sizes follow the bundled tasks' `tests` shapes (a single element, odd sizes, one past a tile
// or a power of two, a row that holds the whole matrix), and the tolerances are the tasks' own
// checks, so a routine that passes here would pass the evaluator's comparison with the reference.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "selftest.hpp"

namespace kforge::vendor {
namespace {

HostTensor exact_output(const std::string& name, const std::string& dtype, std::vector<double> expected,
                        uint64_t row_length = 0)
{
    HostTensor t = host_output(name, dtype, std::move(expected), 0, 0, row_length);
    t.exact = true;
    return t;
}

HostValue integer(const std::string& name, int64_t value) { return HostValue{name, value, static_cast<double>(value)}; }

struct Gemm {
    int64_t m, n, k;
};
const Gemm k_gemm_shapes[] = {{48, 80, 112}, {16, 1040, 32}, {208, 144, 16}, {128, 96, 2048}};

std::string gemm_label(const Gemm& g) { return fmt::format("M={},N={},K={}", g.m, g.n, g.k); }

std::vector<Problem> sgemm_problems()
{
    std::vector<Problem> problems;
    Rng rng(11);
    for (const Gemm& g : k_gemm_shapes) {
        auto a = uniform_floats(rng, static_cast<size_t>(g.m * g.k), -1, 1);
        auto b = uniform_floats(rng, static_cast<size_t>(g.k * g.n), -1, 1);
        std::vector<double> c(static_cast<size_t>(g.m * g.n), 0.0);
        for (int64_t i = 0; i < g.m; ++i)
            for (int64_t p = 0; p < g.k; ++p)
                for (int64_t j = 0; j < g.n; ++j)
                    c[i * g.n + j] += static_cast<double>(a[i * g.k + p]) * b[p * g.n + j];
        double atol = 3e-5 * std::sqrt(static_cast<double>(g.k));
        problems.push_back(Problem{gemm_label(g),
                                   {host_input("A", "f32", a), host_input("B", "f32", b),
                                    host_output("C", "f32", std::move(c), atol, 0, static_cast<uint64_t>(g.n))},
                                   {integer("M", g.m), integer("N", g.n), integer("K", g.k)}});
    }
    return problems;
}

std::vector<Problem> gemm_bf16_problems()
{
    std::vector<Problem> problems;
    Rng rng(12);
    for (const Gemm& g : k_gemm_shapes) {
        std::vector<uint16_t> a(static_cast<size_t>(g.m * g.k)), b(static_cast<size_t>(g.n * g.k));
        for (auto& v : a)
            v = to_bf16(rng.uniform(-1, 1));
        for (auto& v : b)
            v = to_bf16(rng.uniform(-1, 1));
        std::vector<double> c(static_cast<size_t>(g.m * g.n), 0.0);
        for (int64_t i = 0; i < g.m; ++i)
            for (int64_t j = 0; j < g.n; ++j)
                for (int64_t p = 0; p < g.k; ++p)
                    c[i * g.n + j] += static_cast<double>(from_bf16(a[i * g.k + p])) * from_bf16(b[j * g.k + p]);
        double atol = 1e-4 * std::sqrt(static_cast<double>(g.k));
        problems.push_back(Problem{gemm_label(g),
                                   {host_input("A", "bf16", a), host_input("B", "bf16", b),
                                    host_output("C", "bf16", std::move(c), atol, 1.6e-2, static_cast<uint64_t>(g.n))},
                                   {integer("M", g.m), integer("N", g.n), integer("K", g.k)}});
    }
    return problems;
}

std::vector<Problem> saxpy_problems()
{
    std::vector<Problem> problems;
    Rng rng(13);
    const float a = 1.7f;
    for (int64_t n : {1, 3, 1025, 1000003}) {
        auto x = uniform_floats(rng, static_cast<size_t>(n), -3, 3);
        auto y = uniform_floats(rng, static_cast<size_t>(n), -3, 3);
        std::vector<double> z(static_cast<size_t>(n));
        for (size_t i = 0; i < z.size(); ++i)
            z[i] = static_cast<double>(a) * x[i] + y[i];
        problems.push_back(Problem{fmt::format("n={}", n),
                                   {host_input("x", "f32", x), host_input("y", "f32", y), host_output("z", "f32", std::move(z), 1e-6, 1e-6)},
                                   {integer("n", n), HostValue{"a", 1, static_cast<double>(a)}}});
    }
    return problems;
}

std::vector<Problem> transpose_problems()
{
    std::vector<Problem> problems;
    Rng rng(14);
    for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 1}, {1, 1000}, {33, 65}, {257, 1023}, {2049, 31}}) {
        auto in = uniform_floats(rng, static_cast<size_t>(m * n), -1, 1);
        std::vector<double> out(static_cast<size_t>(m * n));
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j)
                out[j * m + i] = in[i * n + j];
        problems.push_back(Problem{fmt::format("M={},N={}", m, n),
                                   {host_input("in", "f32", in), exact_output("out", "f32", std::move(out), static_cast<uint64_t>(m))},
                                   {integer("M", m), integer("N", n)}});
    }
    return problems;
}

std::vector<Problem> reduce_problems()
{
    std::vector<Problem> problems;
    Rng rng(15);
    for (int64_t n : {1, 1025, 1000003, 4194319}) {
        auto x = uniform_floats(rng, static_cast<size_t>(n), -1, 7);
        // Large values at the head, the middle and the tail, as the task plants them.
        x[0] = 1e5f;
        x[static_cast<size_t>(n / 2)] = 1.25e5f;
        x.back() = 2e5f;
        double sum = 0, sum_abs = 0;
        for (float v : x) {
            sum += v;
            sum_abs += std::fabs(v);
        }
        problems.push_back(Problem{fmt::format("n={}", n),
                                   {host_input("x", "f32", x), host_output("out", "f32", {sum}, 1e-5 * sum_abs, 0)},
                                   {integer("n", n)}});
    }
    return problems;
}

std::vector<Problem> scan_problems()
{
    std::vector<Problem> problems;
    Rng rng(16);
    for (int64_t n : {1, 2, 1025, 1000001, 4194319}) {
        std::vector<uint32_t> in(static_cast<size_t>(n));
        for (auto& v : in)
            v = static_cast<uint32_t>(rng.next());
        std::vector<double> out(in.size());
        uint32_t running = 0;
        for (size_t i = 0; i < in.size(); ++i)
            out[i] = running += in[i];
        problems.push_back(Problem{fmt::format("n={}", n), {host_input("in", "u32", in), exact_output("out", "u32", std::move(out))},
                                   {integer("n", n)}});
    }
    return problems;
}

std::vector<Problem> histogram_problems()
{
    std::vector<Problem> problems;
    Rng rng(17);
    for (auto [n, cold_percent] : {std::pair<int64_t, int>{1, 100}, {255, 100}, {65537, 50}, {1000003, 10}}) {
        auto hot = static_cast<uint8_t>(rng.next());
        std::vector<uint8_t> data(static_cast<size_t>(n));
        std::vector<double> hist(256, 0.0);
        for (auto& v : data) {
            v = static_cast<int>(rng.next() % 100) < cold_percent ? static_cast<uint8_t>(rng.next()) : hot;
            hist[v] += 1;
        }
        problems.push_back(Problem{fmt::format("n={},COLD={}", n, cold_percent),
                                   {host_input("data", "u8", data), exact_output("hist", "u32", std::move(hist))},
                                   {integer("n", n)}});
    }
    return problems;
}

// A CSR matrix whose row r has lengths[r] sorted, distinct columns in [0, cols).
Problem csr_problem(Rng& rng, int64_t cols, const std::vector<int64_t>& lengths)
{
    std::vector<int32_t> row_ptr{0}, col_idx;
    std::vector<int32_t> all(static_cast<size_t>(cols));
    std::iota(all.begin(), all.end(), 0);
    for (int64_t length : lengths) {
        for (int64_t j = 0; j < length; ++j)
            std::swap(all[static_cast<size_t>(j)], all[static_cast<size_t>(j + static_cast<int64_t>(rng.next() % static_cast<uint64_t>(cols - j)))]);
        std::vector<int32_t> row(all.begin(), all.begin() + length);
        std::sort(row.begin(), row.end());
        col_idx.insert(col_idx.end(), row.begin(), row.end());
        row_ptr.push_back(static_cast<int32_t>(col_idx.size()));
    }
    auto vals = uniform_floats(rng, col_idx.size(), -1, 1);
    auto x = uniform_floats(rng, static_cast<size_t>(cols), -1, 1);
    std::vector<double> y(lengths.size(), 0.0);
    double max_abs = 0;
    for (size_t r = 0; r < lengths.size(); ++r) {
        for (int32_t k = row_ptr[r]; k < row_ptr[r + 1]; ++k)
            y[r] += static_cast<double>(vals[static_cast<size_t>(k)]) * x[static_cast<size_t>(col_idx[static_cast<size_t>(k)])];
        max_abs = std::max(max_abs, std::fabs(y[r]));
    }
    auto rows = static_cast<int64_t>(lengths.size());
    auto nnz = static_cast<int64_t>(col_idx.size());
    return Problem{fmt::format("R={},C={},NNZ={}", rows, cols, nnz),
                   {host_input("row_ptr", "i32", row_ptr), host_input("col_idx", "i32", col_idx), host_input("vals", "f32", vals),
                    host_input("x", "f32", x), host_output("y", "f32", std::move(y), 1e-5 * max_abs, 1e-5)},
                   {integer("R", rows), integer("C", cols), integer("NNZ", nnz)}};
}

std::vector<Problem> spmv_problems()
{
    Rng rng(18);
    std::vector<Problem> problems;
    problems.push_back(csr_problem(rng, 1, {1}));
    problems.push_back(csr_problem(rng, 5, std::vector<int64_t>(37, 3)));
    // Three rows in four empty, the rest of random length, one row holding every column.
    std::vector<int64_t> lengths(1000);
    for (size_t r = 0; r < lengths.size(); ++r)
        lengths[r] = r % 4 == 0 ? 0 : static_cast<int64_t>(rng.next() % 40);
    lengths[501] = 700;
    problems.push_back(csr_problem(rng, 700, lengths));
    problems.push_back(csr_problem(rng, 100000, {100000}));
    return problems;
}

} // namespace

uint64_t Rng::next()
{
    uint64_t z = (m_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

float Rng::uniform(double low, double high)
{
    return static_cast<float>(low + (high - low) * static_cast<double>(next() >> 11) * 0x1.0p-53);
}

std::vector<float> uniform_floats(Rng& rng, size_t count, double low, double high)
{
    std::vector<float> values(count);
    for (auto& v : values)
        v = rng.uniform(low, high);
    return values;
}

// The generated inputs are finite, so neither conversion handles NaN payloads specially.
uint16_t to_bf16(float value)
{
    uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<uint16_t>(bits >> 16);
}

float from_bf16(uint16_t half)
{
    uint32_t bits = static_cast<uint32_t>(half) << 16;
    float value = 0;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

uint16_t to_f16(float value)
{
    uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    uint32_t sign = (bits >> 16) & 0x8000u;
    int32_t exponent = static_cast<int32_t>((bits >> 23) & 0xffu) - 127 + 15;
    uint32_t mantissa = bits & 0x7fffffu;
    if (((bits >> 23) & 0xffu) == 0xffu)
        return static_cast<uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0u));
    if (exponent >= 31)
        return static_cast<uint16_t>(sign | 0x7c00u);
    if (exponent <= 0) {
        // A subnormal half: the 24-bit significand shifted so its unit is 2^-24.
        if (exponent < -10)
            return static_cast<uint16_t>(sign);
        mantissa |= 0x800000u;
        auto shift = static_cast<uint32_t>(14 - exponent);
        uint32_t half = mantissa >> shift, rest = mantissa & ((1u << shift) - 1), middle = 1u << (shift - 1);
        if (rest > middle || (rest == middle && (half & 1u)))
            ++half;
        return static_cast<uint16_t>(sign | half);
    }
    uint32_t half = sign | (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
    uint32_t rest = mantissa & 0x1fffu;
    // A carry out of the mantissa rounds up into the exponent, as it should.
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
        ++half;
    return static_cast<uint16_t>(half);
}

float from_f16(uint16_t half)
{
    uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
    uint32_t exponent = (half >> 10) & 0x1fu, mantissa = half & 0x3ffu;
    if (exponent == 0) {
        float value = std::ldexp(static_cast<float>(mantissa), -24);
        return sign ? -value : value;
    }
    uint32_t bits = exponent == 31 ? sign | 0x7f800000u | (mantissa << 13)
                                   : sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
    float value = 0;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

HostTensor host_output(const std::string& name, const std::string& dtype, std::vector<double> expected, double atol,
                       double rtol, uint64_t row_length)
{
    uint64_t count = expected.size();
    return HostTensor{name, dtype, count, {}, true, std::move(expected), atol, rtol, false, row_length};
}

size_t element_bytes(const std::string& dtype)
{
    if (dtype == "f32" || dtype == "u32" || dtype == "i32")
        return 4;
    if (dtype == "bf16" || dtype == "f16")
        return 2;
    if (dtype == "u8")
        return 1;
    return 0;
}

std::vector<Problem> selftest_problems(const std::string& routine)
{
    if (routine == "cublas_sgemm")
        return sgemm_problems();
    if (routine == "cublas_gemm_bf16")
        return gemm_bf16_problems();
    if (routine == "cublas_saxpy")
        return saxpy_problems();
    if (routine == "cublas_geam_transpose")
        return transpose_problems();
    if (routine == "cub_reduce_sum")
        return reduce_problems();
    if (routine == "cub_inclusive_scan")
        return scan_problems();
    if (routine == "cub_histogram_even")
        return histogram_problems();
    if (routine == "cusparse_spmv_csr")
        return spmv_problems();
    return {};
}

} // namespace kforge::vendor
