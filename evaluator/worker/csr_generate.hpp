// Host generation of the CSR matrices that the `csr`/`csr_cols` generators describe
// (core/task.hpp CsrSpec; tasks/README.md "CSR matrices"), with the evaluator's own random draws
// (kernels/generate.cuh), so a matrix is a pure function of (seed, tensor streams, sizes).
#pragma once

#include <cstdint>
#include <vector>

#include "core/task.hpp"

namespace kforge {

struct CsrMatrix {
    std::vector<int64_t> row_ptr; // R + 1
    std::vector<int64_t> cols;    // NNZ, sorted and unique within each row
};

// `row_stream` and `col_stream` are the draw streams of the row-pointer and column tensors.
CsrMatrix generate_csr(const CsrSizes& sizes, uint64_t seed, uint64_t row_stream, uint64_t col_stream);

} // namespace kforge
