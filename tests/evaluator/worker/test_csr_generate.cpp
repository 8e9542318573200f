// CSR generation as the spec defines it: exact nonzero counts, sorted unique in-range columns,
// windows that follow the diagonal, and skew that grows with sigma.
#include "kf_catch.hpp"

#include "evaluator/worker/csr_generate.hpp"

using namespace kforge;

namespace {
void check_valid(const CsrMatrix& m, const CsrSizes& s)
{
    REQUIRE(m.row_ptr.size() == static_cast<size_t>(s.rows + 1));
    REQUIRE(m.row_ptr.front() == 0);
    REQUIRE(m.row_ptr.back() == s.nnz);
    for (int64_t r = 0; r < s.rows; ++r) {
        int64_t begin = m.row_ptr[r], end = m.row_ptr[r + 1];
        REQUIRE(begin <= end);
        REQUIRE(end - begin <= s.window);
        for (int64_t k = begin; k < end; ++k) {
            REQUIRE(m.cols[k] >= 0);
            REQUIRE(m.cols[k] < s.cols);
            if (k > begin)
                REQUIRE(m.cols[k] > m.cols[k - 1]);
        }
    }
}
} // namespace

TEST_CASE("uniform CSR rows get equal shares and valid columns", "[evaluator][csr]")
{
    CsrSizes s{1000, 800, 16000, 800, 4096, 0.0};
    s.group = std::max<int64_t>(1, std::min<int64_t>(s.group, (s.window - 1) * s.rows / s.nnz));
    CsrMatrix m = generate_csr(s, 42, 1, 2);
    check_valid(m, s);
    for (int64_t r = 0; r < s.rows; ++r)
        CHECK(m.row_ptr[r + 1] - m.row_ptr[r] == 16);
    CsrMatrix again = generate_csr(s, 42, 1, 2);
    CHECK(again.cols == m.cols);
    CHECK(generate_csr(s, 43, 1, 2).cols != m.cols);
}

TEST_CASE("skewed CSR rows vary in length but keep totals and windows", "[evaluator][csr]")
{
    CsrSizes s{2000, 5000, 32000, 600, 4096, 1.5};
    s.group = std::max<int64_t>(1, std::min<int64_t>(s.group, (s.window - 1) * s.rows / s.nnz));
    CsrMatrix m = generate_csr(s, 7, 3, 4);
    check_valid(m, s);
    int64_t longest = 0, empty = 0;
    for (int64_t r = 0; r < s.rows; ++r) {
        longest = std::max(longest, m.row_ptr[r + 1] - m.row_ptr[r]);
        empty += m.row_ptr[r + 1] == m.row_ptr[r];
    }
    CHECK(longest > 64); // far above the mean of 16
    CHECK(empty > 0);
}

TEST_CASE("banded CSR columns stay near the diagonal", "[evaluator][csr]")
{
    CsrSizes s{500, 500, 3500, 7, 1, 0.0};
    CsrMatrix m = generate_csr(s, 9, 5, 6);
    check_valid(m, s);
    for (int64_t r = 0; r < s.rows; ++r)
        for (int64_t k = m.row_ptr[r]; k < m.row_ptr[r + 1]; ++k)
            CHECK(std::abs(m.cols[k] - r) <= 6);
}
