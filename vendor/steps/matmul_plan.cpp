// plan_matmul(): the row-major step translated to one column-major cuBLASLt call, and its checks.
//
// Every number is derived here and nowhere else (see the header for the translation). The checks
// are those that need no GPU: the dtype combinations cuBLASLt computes in fp32 (A and B of one
// type; C and D of one type, since cuBLASLt has no other combination; a bias of D's type, the
// BIAS epilogue's rule outside fp8), sizes that fit the int32 range cuBLASLt's kernels index with
// in practice (its layouts take uint64 rows and columns, but its header warns that usually only
// int32 values are supported), and a batch whose output matrices do not overlap.
#include "matmul_plan.hpp"

#include <climits>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "vendor_routine.hpp"

namespace kforge::vendor {
namespace {

[[noreturn]] void refuse_matmul(const std::string& why) { fail(Status::bad_bindings, "matmul: " + why); }

void require_lt_range(const char* name, long long value, long long low)
{
    if (value < low)
        refuse_matmul(fmt::format("{} = {}: cuBLASLt needs {} >= {}", name, value, name, low));
    if (value > INT_MAX)
        refuse_matmul(fmt::format("{} = {} is past 2^31 - 1, the largest size cuBLASLt's kernels take in practice",
                                  name, value));
}

// Matrix i of a batch starts i * stride elements after the operand's 256-byte-aligned base, so the
// alignment all of them share is the largest power of two up to 256 that divides stride's bytes.
uint32_t shared_alignment(long long batch, long long stride, StepDtype dtype)
{
    uint32_t alignment = 256;
    if (batch <= 1 || stride == 0)
        return alignment;
    // Only the low bits matter, so the product may wrap.
    uint64_t offset = static_cast<uint64_t>(stride) * dtype_bytes(dtype);
    while (offset % alignment != 0)
        alignment /= 2;
    return alignment;
}

float finite_float(const char* name, double value)
{
    auto single = static_cast<float>(value);
    if (!std::isfinite(single))
        refuse_matmul(fmt::format("{} = {} is not a finite fp32 number (cuBLASLt's scale type is fp32)", name, value));
    return single;
}

// A stored matrix of `stored_rows` x `stored_cols` (row-major, packed rows) as cuBLASLt's
// column-major layout: rows and columns swap, and the leading dimension is the row length.
LtMatrixPlan lt_matrix(const char* operand, StepDtype dtype, long long stored_rows, long long stored_cols,
                       long long batch, long long stride)
{
    LtMatrixPlan matrix;
    matrix.operand = operand;
    matrix.dtype = dtype;
    matrix.rows = static_cast<uint64_t>(stored_cols);
    matrix.cols = static_cast<uint64_t>(stored_rows);
    matrix.ld = stored_cols;
    matrix.batch_stride = stride;
    matrix.min_alignment = shared_alignment(batch, stride, dtype);
    return matrix;
}

LtEpilogue lt_epilogue(int epilogue, bool has_bias)
{
    switch (epilogue) {
    case KFORGE_EPILOGUE_NONE:
        return has_bias ? LtEpilogue::bias : LtEpilogue::none;
    case KFORGE_EPILOGUE_RELU:
        return has_bias ? LtEpilogue::relu_bias : LtEpilogue::relu;
    case KFORGE_EPILOGUE_GELU_TANH:
        return has_bias ? LtEpilogue::gelu_bias : LtEpilogue::gelu;
    default:
        refuse_matmul(fmt::format("epilogue {} is none of KFORGE_EPILOGUE_NONE, _RELU, _GELU_TANH", epilogue));
    }
}

void check_dtypes(StepDtype a, StepDtype b, StepDtype c, StepDtype d, StepDtype bias, bool has_c, bool has_bias)
{
    if (a != b)
        refuse_matmul(fmt::format("a is {} and b is {}: cuBLASLt needs A and B of one dtype", dtype_name(a),
                                  dtype_name(b)));
    if (a == StepDtype::f32 && d != StepDtype::f32)
        refuse_matmul(fmt::format("f32 inputs with a {} output: an f32 product has f32 C, D and bias", dtype_name(d)));
    if (d != a && d != StepDtype::f32)
        refuse_matmul(fmt::format("{} inputs with a {} output: the output is {} or f32", dtype_name(a), dtype_name(d),
                                  dtype_name(a)));
    if (has_c && c != d)
        refuse_matmul(fmt::format("c is {} and d is {}: cuBLASLt reads C in D's dtype", dtype_name(c), dtype_name(d)));
    if (has_bias && bias != d)
        refuse_matmul(fmt::format("the bias is {} and d is {}: cuBLASLt's BIAS epilogue takes a bias of D's dtype",
                                  dtype_name(bias), dtype_name(d)));
}

} // namespace

StepDtype parse_step_dtype(const char* text, const std::string& what)
{
    if (!text)
        fail(Status::bad_bindings, what + " is missing (f32, bf16 or f16)");
    if (std::strcmp(text, "f32") == 0)
        return StepDtype::f32;
    if (std::strcmp(text, "bf16") == 0)
        return StepDtype::bf16;
    if (std::strcmp(text, "f16") == 0)
        return StepDtype::f16;
    fail(Status::bad_bindings,
         fmt::format("{} is {}: library steps take f32, bf16 or f16 (computed in fp32)", what, text));
}

const char* dtype_name(StepDtype dtype)
{
    switch (dtype) {
    case StepDtype::f32:
        return "f32";
    case StepDtype::bf16:
        return "bf16";
    case StepDtype::f16:
        return "f16";
    }
    return "?";
}

size_t dtype_bytes(StepDtype dtype) { return dtype == StepDtype::f32 ? 4 : 2; }

const char* epilogue_name(LtEpilogue epilogue)
{
    switch (epilogue) {
    case LtEpilogue::none:
        return "DEFAULT";
    case LtEpilogue::relu:
        return "RELU";
    case LtEpilogue::gelu:
        return "GELU";
    case LtEpilogue::bias:
        return "BIAS";
    case LtEpilogue::relu_bias:
        return "RELU_BIAS";
    case LtEpilogue::gelu_bias:
        return "GELU_BIAS";
    }
    return "?";
}

MatmulPlan plan_matmul(const KforgeMatmulStep& step, unsigned long long workspace_bytes)
{
    StepDtype a_dtype = parse_step_dtype(step.a_dtype, "matmul: a_dtype");
    StepDtype b_dtype = parse_step_dtype(step.b_dtype, "matmul: b_dtype");
    StepDtype d_dtype = parse_step_dtype(step.d_dtype, "matmul: d_dtype");
    StepDtype c_dtype = step.has_c ? parse_step_dtype(step.c_dtype, "matmul: c_dtype") : d_dtype;
    StepDtype bias_dtype = step.has_bias ? parse_step_dtype(step.bias_dtype, "matmul: bias_dtype") : d_dtype;
    check_dtypes(a_dtype, b_dtype, c_dtype, d_dtype, bias_dtype, step.has_c != 0, step.has_bias != 0);

    require_lt_range("m", step.m, 1);
    require_lt_range("n", step.n, 1);
    require_lt_range("k", step.k, 1);
    require_lt_range("batch", step.batch, 1);
    const std::pair<const char*, long long> strides[] = {{"stride_a", step.stride_a},
                                                         {"stride_b", step.stride_b},
                                                         {"stride_c", step.stride_c},
                                                         {"stride_d", step.stride_d}};
    for (const auto& [name, stride] : strides)
        if (stride < 0)
            refuse_matmul(fmt::format("{} = {}: batch strides are at least 0", name, stride));
    if (step.batch > 1 && step.stride_d < step.m * step.n)
        refuse_matmul(fmt::format("stride_d = {} with batch = {}: the output matrices ({} x {} = {} elements each) "
                                  "would overlap",
                                  step.stride_d, step.batch, step.m, step.n, step.m * step.n));
    if (!step.has_c && step.beta != 0)
        refuse_matmul(fmt::format("beta = {} but the step has no c to scale", step.beta));

    MatmulPlan plan;
    plan.transa = step.transpose_b != 0;
    plan.transb = step.transpose_a != 0;
    plan.m = step.n;
    plan.n = step.m;
    plan.k = step.k;
    plan.batch = static_cast<int32_t>(step.batch);
    // The step's B is stored [k, n], or [n, k] when transposed; its A [m, k], or [k, m].
    plan.a = plan.transa ? lt_matrix("b", b_dtype, step.n, step.k, step.batch, step.stride_b)
                         : lt_matrix("b", b_dtype, step.k, step.n, step.batch, step.stride_b);
    plan.b = plan.transb ? lt_matrix("a", a_dtype, step.k, step.m, step.batch, step.stride_a)
                         : lt_matrix("a", a_dtype, step.m, step.k, step.batch, step.stride_a);
    plan.d = lt_matrix("d", d_dtype, step.m, step.n, step.batch, step.stride_d);
    plan.reads_c = step.has_c != 0;
    plan.c = plan.reads_c ? lt_matrix("c", c_dtype, step.m, step.n, step.batch, step.stride_c) : plan.d;
    plan.alpha = finite_float("alpha", step.alpha);
    plan.beta = finite_float("beta", step.beta);
    plan.epilogue = lt_epilogue(step.epilogue, step.has_bias != 0);
    plan.has_bias = step.has_bias != 0;
    plan.bias_dtype = bias_dtype;
    plan.bias_length = static_cast<uint64_t>(step.n);
    plan.workspace_bytes = workspace_bytes;
    return plan;
}

std::string MatmulPlan::describe() const
{
    auto op = [](bool transposed) { return transposed ? "T" : "N"; };
    auto layout = [](const char* name, const LtMatrixPlan& x) {
        return fmt::format("{}={} {}type={} {}rows={} {}cols={} stride{}={} align{}={}", name, x.operand, name,
                           dtype_name(x.dtype), name, x.rows, name, x.cols, name, x.batch_stride, name,
                           x.min_alignment);
    };
    // The leading dimensions come first, as in every BLAS call, then each layout's other attributes.
    std::string text = fmt::format("cublasLtMatmul transa={} transb={} m={} n={} k={} lda={} ldb={} ldc={} ldd={} "
                                   "batch={}",
                                   op(transa), op(transb), m, n, k, a.ld, b.ld, c.ld, d.ld, batch);
    for (const auto& [name, matrix] : {std::pair<const char*, const LtMatrixPlan*>{"A", &a}, {"B", &b}, {"C", &c},
                                       {"D", &d}})
        text += " " + layout(name, *matrix);
    text += fmt::format(" alpha={:g} beta={:g} epilogue={}", alpha, beta, epilogue_name(epilogue));
    if (has_bias)
        text += fmt::format(" bias=bias biastype={} biaslength={}", dtype_name(bias_dtype), bias_length);
    bool fp32 = a.dtype == StepDtype::f32;
    text += fmt::format(" compute=32F scale=32F pointer_mode=HOST impl_mask={} reduction_scheme_mask=NONE "
                        "workspace={}",
                        fp32 ? "no-TF32/BF16/F16" : "all", workspace_bytes);
    return text;
}

} // namespace kforge::vendor
