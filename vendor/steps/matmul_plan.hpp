// The cuBLASLt call a matmul step makes, derived from the step alone (no GPU, no cuBLASLt).
//
// kforge's matrices are row-major, cuBLASLt's column-major. A row-major R x C matrix is, byte for
// byte, the column-major C x R matrix with leading dimension C, so the step's
// D = op(A) op(B) is computed as D^T = op(B)^T op(A)^T: cuBLASLt's m is the step's n and its n
// the step's m, cuBLASLt's A is the step's B buffer (transposed when transpose_b) and its B the
// step's A buffer (transposed when transpose_a), and the bias, one value per column of D, is one
// per row of D^T, which is what the BIAS epilogue adds. plan_matmul() computes every number once;
// the cuBLASLt code passes exactly these and describe() prints exactly these, so the tests that
// read the description check the call that is made.
#pragma once

#include <cstdint>
#include <string>

#include "kforge_vendor.h"

namespace kforge::vendor {

enum class StepDtype { f32, bf16, f16 };

// One matrix as cuBLASLt sees it: column-major `rows` x `cols` with leading dimension `ld`, the
// stored matrix before TRANSA/TRANSB apply.
struct LtMatrixPlan {
    const char* operand = "";      // the step's operand it reads or writes: "a", "b", "c", "d"
    StepDtype dtype = StepDtype::f32;
    uint64_t rows = 0, cols = 0;
    int64_t ld = 0;
    int64_t batch_stride = 0;      // elements between the matrices of a batch
    // The alignment in bytes every matrix of the batch is known to have: operands start 256-byte
    // aligned and the i-th matrix is i * batch_stride elements further.
    uint32_t min_alignment = 256;
};

// The epilogue cuBLASLt runs after the product (cublasLtEpilogue_t by name).
enum class LtEpilogue { none, relu, gelu, bias, relu_bias, gelu_bias };

struct MatmulPlan {
    bool transa = false, transb = false;  // cuBLASLt's TRANSA / TRANSB: T when true
    int64_t m = 0, n = 0, k = 0;          // cuBLASLt's: the step's n, m and k
    int32_t batch = 1;
    LtMatrixPlan a, b, c, d;              // a holds the step's B buffer, b the step's A buffer
    bool reads_c = false;                 // C is the step's c; otherwise D is passed as C, unread
    float alpha = 1, beta = 0;
    LtEpilogue epilogue = LtEpilogue::none;
    bool has_bias = false;
    StepDtype bias_dtype = StepDtype::f32;
    uint64_t bias_length = 0;             // = the step's n = cuBLASLt's m (rows of D^T)
    uint64_t workspace_bytes = 0;

    // "cublasLtMatmul transa=T transb=N m=.. n=.. k=.. A=b lda=.. ..." (kforge_vendor_step_describe).
    std::string describe() const;
};

// Derives the call, failing with bad_bindings for dtypes cuBLASLt does not take together, sizes
// out of its range, an unknown epilogue, a beta without C, or output matrices of a batch that
// would overlap.
MatmulPlan plan_matmul(const KforgeMatmulStep& step, unsigned long long workspace_bytes);

// "f32", "bf16" or "f16" as a StepDtype; bad_bindings naming `what` (e.g. "matmul: a_dtype")
// for anything else, a missing one included.
StepDtype parse_step_dtype(const char* text, const std::string& what);
const char* dtype_name(StepDtype dtype);
size_t dtype_bytes(StepDtype dtype);
const char* epilogue_name(LtEpilogue epilogue);

} // namespace kforge::vendor
