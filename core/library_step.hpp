// Library steps: a launch of a plan that calls cuBLASLt (`matmul`) or cuDNN (`conv`) instead of a
// kernel (docs/library-steps.md is the contract).
//
// This file holds a step as written (parsed with the plan), its validation against a task (names,
// roles, dtypes, before anything is compiled) and its resolution for one shape and param point: every
// dimension and stride as a number, and every operand's extent — the elements the step reads or
// writes — checked against the operand's allocation, so a step can never touch memory outside its
// tensors. The GPU worker turns a resolved step into the vendor library's call (vendor/kforge_vendor.h);
// everything here is plain data and runs without a GPU.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "util/expr.hpp"
#include "util/json_reader.hpp"

namespace kforge {

struct Task;
struct Shape;
struct Plan;

enum class LibraryOp { matmul, conv };
enum class StepEpilogue { none, relu, gelu_tanh };

std::string_view library_op_name(LibraryOp op);
std::string_view step_epilogue_name(StepEpilogue epilogue);

// One operand of a step: its role ("a", "b", "c", "d", "bias", "x", "w", "y", "workspace") and the
// task tensor or scratch buffer it names.
struct StepOperand {
    std::string role;
    std::string name;
};

struct PlanMatmul {
    Expr m, n, k;
    Expr batch = Expr::constant(1);
    std::array<std::optional<Expr>, 4> strides;   // a, b, c, d: elements between batch matrices
    bool transpose_a = false, transpose_b = false;
    double alpha = 1, beta = 0;
    StepEpilogue epilogue = StepEpilogue::none;
};

struct PlanConv {
    Expr n, c, k;
    Expr groups = Expr::constant(1);
    std::vector<Expr> size, kernel, stride, padding, dilation, output_padding; // one per spatial dim
    bool transposed = false;
    bool channels_last = false;
};

struct PlanLibraryStep {
    LibraryOp op = LibraryOp::matmul;
    std::vector<StepOperand> operands;            // in the order written
    std::optional<DType> dtype;                   // for scratch operands ("dtype")
    PlanMatmul matmul;
    PlanConv conv;
    Expr algo = Expr::constant(0);
};

// Parses the launch entry `entry` (it has "library"). Throws Error naming the field (plan.cpp makes
// it a PlanError).
PlanLibraryStep parse_library_step(const JsonReader& entry);

// Checks names, roles and dtypes against the task and the plan's scratch buffers: operands are
// tensors or scratch, outputs are never task inputs, an output aliases no operand it reads (C may be
// D), dtypes are allowed together, expressions name known integers (`int_names`). Throws PlanError
// prefixed with `where`.
void validate_library_step(const Task& task, const Plan& plan, const PlanLibraryStep& step,
                           const std::set<std::string>& int_names, const std::string& where);

// One operand at one shape: what the step touches of it and what is there, in elements.
struct ResolvedOperand {
    std::string role;
    std::string name;
    DType dtype = DType::f32;
    bool scratch = false;
    bool written = false;
    int64_t used = 0;           // elements read or written, from the start of the buffer
    int64_t available = 0;      // elements the buffer holds
};

struct ResolvedMatmul {
    int64_t m = 0, n = 0, k = 0, batch = 1;
    std::array<int64_t, 4> strides{};             // a, b, c, d
    bool transpose_a = false, transpose_b = false;
    double alpha = 1, beta = 0;
    StepEpilogue epilogue = StepEpilogue::none;
    bool has_c = false, has_bias = false;
};

struct ResolvedConv {
    int spatial_dims = 2;
    int64_t n = 0, c = 0, k = 0, groups = 1;
    std::array<int64_t, 3> size{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1},
        output_padding{0, 0, 0}, out{1, 1, 1};
    bool transposed = false;
    bool channels_last = false;
};

struct ResolvedLibraryStep {
    LibraryOp op = LibraryOp::matmul;
    // In the vendor library's run order: matmul a, b, c, d, bias, workspace; conv x, w, y, workspace
    // (roles without a buffer are absent; `operand(role)` finds one).
    std::vector<ResolvedOperand> operands;
    ResolvedMatmul matmul;
    ResolvedConv conv;
    int64_t algo = 0;
    int64_t workspace_bytes = 0;

    const ResolvedOperand* operand(std::string_view role) const;
};

// The step at one shape and param point (`scope` binds symbols and params; `scratch_bytes` gives
// each scratch buffer's resolved size). Throws PlanError prefixed with `where` for a dimension out
// of range or an operand the step would overrun, naming the operand and both element counts.
ResolvedLibraryStep resolve_library_step(const Task& task, const PlanLibraryStep& step, const Shape& shape,
                                         const ExprScope& scope,
                                         const std::vector<std::pair<std::string, int64_t>>& scratch_bytes,
                                         const std::string& where);

// The dtype of an operand named `name`: the tensor's own, or the step's `dtype` for scratch
// (default: the first tensor operand's, as A's for a matmul).
DType library_operand_dtype(const Task& task, const PlanLibraryStep& step, const std::string& name);

// Whether a model writing candidates for `task` should be told about library steps: the task holds a
// matrix product or a convolution (a PyTorch program that calls Linear, matmul, bmm, einsum, conv...;
// a spec tagged gemm, matmul or conv, or timed against a cuBLAS GEMM). Telling every model about them
// would cost every prompt its length for tasks they cannot help.
bool task_suits_library_steps(const Task& task);

// One line in the plan's row-major terms, for reports and prompts: "matmul d[512x1024] = relu(a[512x256]
// @ b^T[1024x256] + bias[1024]), algo 2" or "conv y[8x64x30x30] = conv2d(x[8x3x32x32], w[64x3x3x3],
// stride 1x1, padding 0x0), algo 0".
std::string describe_library_step(const ResolvedLibraryStep& step);

} // namespace kforge
