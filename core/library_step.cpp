// Library steps: parsing, validation and resolution; see the header and docs/library-steps.md.
#include "core/library_step.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/plan.hpp"
#include "core/task.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

[[noreturn]] void step_fail(const std::string& message) { throw PlanError(message); }

constexpr std::string_view k_matmul_roles[] = {"a", "b", "c", "d", "bias", "workspace"};
constexpr std::string_view k_conv_roles[] = {"x", "w", "y", "workspace"};
constexpr std::string_view k_stride_roles[] = {"a", "b", "c", "d"};

bool is_output_role(std::string_view role) { return role == "d" || role == "y"; }

std::vector<Expr> parse_expr_list(const JsonReader& field)
{
    std::vector<Expr> out;
    if (field.is_number() || field.is_string()) {
        out.push_back(parse_plan_expr(field));
        return out;
    }
    if (field.size() < 1 || field.size() > 3)
        field.fail(fmt::format("expected 1 to 3 values (one per spatial dimension), found {}", field.size()));
    for (const auto& item : field.items())
        out.push_back(parse_plan_expr(item));
    return out;
}

const std::string* operand_name(const PlanLibraryStep& step, std::string_view role)
{
    for (const auto& operand : step.operands)
        if (operand.role == role)
            return &operand.name;
    return nullptr;
}

int64_t eval_step(const Expr& expr, const ExprScope& scope, const std::string& where, std::string_view field)
{
    try {
        return expr.eval_int(scope);
    } catch (const ExprError& e) {
        step_fail(fmt::format("{}: {} '{}': {}", where, field, expr.text(), e.what()));
    }
}

int64_t checked_mul(int64_t a, int64_t b, const std::string& where)
{
    int64_t out = 0;
    if (__builtin_mul_overflow(a, b, &out))
        step_fail(fmt::format("{}: the operand's extent overflows 64 bits", where));
    return out;
}

int64_t checked_add(int64_t a, int64_t b, const std::string& where)
{
    int64_t out = 0;
    if (__builtin_add_overflow(a, b, &out))
        step_fail(fmt::format("{}: the operand's extent overflows 64 bits", where));
    return out;
}

bool library_float(DType dtype) { return dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16; }

// The largest m, n, k and batch a matmul step takes: cuBLASLt's layouts hold 64-bit sizes, but its
// header warns that its kernels usually take only int32 ones, and its batch count is an int32.
constexpr int64_t k_max_matmul_size = INT32_MAX;

// The output size of a convolution along dimension `d` (PyTorch's formulas; docs/library-steps.md),
// every step checked: a stride or padding near 2^63 would otherwise wrap to a small size that fits
// the output's allocation, and the step would pass every check below.
int64_t conv_output_size(const ResolvedConv& rc, int d, const std::string& where)
{
    int64_t reach = 0, doubled_padding = 0, out = 0;
    bool overflow = __builtin_mul_overflow(rc.dilation[d], rc.kernel[d] - 1, &reach) ||
                    __builtin_add_overflow(reach, 1, &reach) || __builtin_mul_overflow(rc.padding[d], 2, &doubled_padding);
    if (rc.transposed) {
        // (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1
        overflow = overflow || __builtin_mul_overflow(rc.size[d] - 1, rc.stride[d], &out) ||
                   __builtin_sub_overflow(out, doubled_padding, &out) || __builtin_add_overflow(out, reach, &out) ||
                   __builtin_add_overflow(out, rc.output_padding[d], &out);
        if (overflow)
            step_fail(fmt::format("{}: dimension {}: the output size (size - 1) * stride - 2 * padding + dilation * "
                                  "(kernel - 1) + output_padding + 1 overflows 64 bits (size {}, stride {}, padding {}, "
                                  "dilation {}, kernel {}, output_padding {})",
                                  where, d, rc.size[d], rc.stride[d], rc.padding[d], rc.dilation[d], rc.kernel[d],
                                  rc.output_padding[d]));
    } else {
        // (size + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1
        int64_t padded = 0;
        overflow = overflow || __builtin_add_overflow(rc.size[d], doubled_padding, &padded);
        if (overflow)
            step_fail(fmt::format("{}: dimension {}: the output size (size + 2 * padding - dilation * (kernel - 1) - 1) "
                                  "/ stride + 1 overflows 64 bits (size {}, padding {}, dilation {}, kernel {})",
                                  where, d, rc.size[d], rc.padding[d], rc.dilation[d], rc.kernel[d]));
        out = padded < reach ? 0 : (padded - reach) / rc.stride[d] + 1;
    }
    if (out < 1)
        step_fail(fmt::format("{}: dimension {}: the output would be empty (size {}, kernel {}, dilation {}, padding "
                              "{}, stride {})",
                              where, d, rc.size[d], rc.kernel[d], rc.dilation[d], rc.padding[d], rc.stride[d]));
    return out;
}

void check_matmul_dtypes(const Task& task, const PlanLibraryStep& step, const std::string& where)
{
    auto dtype_of = [&](std::string_view role) -> std::optional<DType> {
        const std::string* name = operand_name(step, role);
        return name ? std::optional<DType>(library_operand_dtype(task, step, *name)) : std::nullopt;
    };
    DType a = *dtype_of("a"), b = *dtype_of("b"), d = *dtype_of("d");
    if (!library_float(a) || a != b)
        step_fail(fmt::format("{}: a and b are {} and {}; a matmul step takes f32, bf16 or f16 inputs, both the same",
                              where, dtype_name(a), dtype_name(b)));
    bool reduced = a != DType::f32;
    if (d != a && !(reduced && d == DType::f32))
        step_fail(fmt::format("{}: d is {} with {} inputs; the output is the inputs' type{}", where, dtype_name(d),
                              dtype_name(a), reduced ? " or f32" : ""));
    for (std::string_view role : {"c", "bias"})
        if (auto t = dtype_of(role); t && *t != d)
            step_fail(fmt::format("{}: {} is {}, but must be d's type ({})", where, role, dtype_name(*t), dtype_name(d)));
}

void check_conv_dtypes(const Task& task, const PlanLibraryStep& step, const std::string& where)
{
    DType x = library_operand_dtype(task, step, *operand_name(step, "x"));
    DType w = library_operand_dtype(task, step, *operand_name(step, "w"));
    DType y = library_operand_dtype(task, step, *operand_name(step, "y"));
    if (!library_float(x) || x != w || x != y)
        step_fail(fmt::format("{}: x, w and y are {}, {} and {}; a conv step takes f32, bf16 or f16, all the same",
                              where, dtype_name(x), dtype_name(w), dtype_name(y)));
}

} // namespace

DType library_operand_dtype(const Task& task, const PlanLibraryStep& step, const std::string& name)
{
    if (const ArgSpec* arg = task.find_arg(name))
        return arg->dtype;
    if (step.dtype)
        return *step.dtype;
    for (const auto& operand : step.operands)
        if (operand.role != "workspace")
            if (const ArgSpec* arg = task.find_arg(operand.name); arg && arg->is_tensor)
                return arg->dtype;
    return DType::f32;
}

std::string_view library_op_name(LibraryOp op) { return op == LibraryOp::matmul ? "matmul" : "conv"; }

std::string_view step_epilogue_name(StepEpilogue epilogue)
{
    switch (epilogue) {
    case StepEpilogue::relu: return "relu";
    case StepEpilogue::gelu_tanh: return "gelu_tanh";
    case StepEpilogue::none: break;
    }
    return "none";
}

namespace {

// The step's operands in its op's role order, each role it names; the required ones must be there.
template <size_t N>
void read_operands(const JsonReader& entry, const std::string_view (&roles)[N],
                   std::initializer_list<std::string_view> required, std::string_view op, PlanLibraryStep& step)
{
    for (std::string_view role : roles)
        if (auto field = entry.find(role))
            step.operands.push_back({std::string(role), field->as_string()});
    for (std::string_view role : required)
        if (!entry.has(role))
            entry.fail(fmt::format("a {} step needs \"{}\" (a tensor or scratch buffer)", op, role));
}

} // namespace

PlanLibraryStep parse_library_step(const JsonReader& entry)
{
    PlanLibraryStep step;
    std::string op = entry.at("library").as_string();
    if (op == "matmul") {
        entry.allow_only({"library", "a", "b", "c", "d", "bias", "workspace", "m", "n", "k", "batch", "stride_a",
                          "stride_b", "stride_c", "stride_d", "transpose_a", "transpose_b", "alpha", "beta",
                          "epilogue", "dtype", "algo"});
        step.op = LibraryOp::matmul;
        read_operands(entry, k_matmul_roles, {"a", "b", "d"}, "matmul", step);
        PlanMatmul& mm = step.matmul;
        mm.m = parse_plan_expr(entry.at("m"));
        mm.n = parse_plan_expr(entry.at("n"));
        mm.k = parse_plan_expr(entry.at("k"));
        if (auto batch = entry.find("batch"))
            mm.batch = parse_plan_expr(*batch);
        for (size_t i = 0; i < 4; ++i)
            if (auto stride = entry.find(fmt::format("stride_{}", k_stride_roles[i])))
                mm.strides[i] = parse_plan_expr(*stride);
        mm.transpose_a = entry.get_bool("transpose_a", false);
        mm.transpose_b = entry.get_bool("transpose_b", false);
        mm.alpha = entry.get_number("alpha", 1.0);
        mm.beta = entry.get_number("beta", 0.0);
        std::string epilogue = entry.get_string("epilogue", "none");
        if (epilogue == "relu")
            mm.epilogue = StepEpilogue::relu;
        else if (epilogue == "gelu_tanh")
            mm.epilogue = StepEpilogue::gelu_tanh;
        else if (epilogue != "none")
            entry.at("epilogue").fail(fmt::format("expected none, relu or gelu_tanh (cuBLASLt's GELU is the tanh "
                                                  "approximation; exact GELU belongs in a kernel), found \"{}\"",
                                                  epilogue));
        if (mm.beta != 0 && !entry.has("c"))
            entry.fail("beta is not 0, so the step needs \"c\" (which may be d itself)");
    } else if (op == "conv") {
        entry.allow_only({"library", "x", "w", "y", "workspace", "n", "c", "k", "size", "kernel", "stride", "padding",
                          "dilation", "groups", "transposed", "output_padding", "layout", "dtype", "algo"});
        step.op = LibraryOp::conv;
        read_operands(entry, k_conv_roles, {"x", "w", "y"}, "conv", step);
        PlanConv& cv = step.conv;
        cv.n = parse_plan_expr(entry.at("n"));
        cv.c = parse_plan_expr(entry.at("c"));
        cv.k = parse_plan_expr(entry.at("k"));
        if (auto groups = entry.find("groups"))
            cv.groups = parse_plan_expr(*groups);
        cv.size = parse_expr_list(entry.at("size"));
        size_t dims = cv.size.size();
        auto per_dim = [&](std::string_view key, std::vector<Expr>& out, int64_t fallback, bool required) {
            if (auto field = entry.find(key)) {
                out = parse_expr_list(*field);
                if (out.size() == 1 && dims > 1)
                    out.assign(dims, out.front());
                if (out.size() != dims)
                    field->fail(fmt::format("expected {} values (one per entry of \"size\"), found {}", dims, out.size()));
            } else if (required) {
                entry.fail(fmt::format("a conv step needs \"{}\"", key));
            } else {
                out.assign(dims, Expr::constant(fallback));
            }
        };
        per_dim("kernel", cv.kernel, 1, true);
        per_dim("stride", cv.stride, 1, false);
        per_dim("padding", cv.padding, 0, false);
        per_dim("dilation", cv.dilation, 1, false);
        per_dim("output_padding", cv.output_padding, 0, false);
        cv.transposed = entry.get_bool("transposed", false);
        if (entry.has("output_padding") && !cv.transposed)
            entry.at("output_padding").fail("only a transposed conv has an output padding");
        std::string layout = entry.get_string("layout", "nchw");
        if (layout != "nchw" && layout != "nhwc")
            entry.at("layout").fail(fmt::format("expected nchw or nhwc, found \"{}\"", layout));
        cv.channels_last = layout == "nhwc";
    } else {
        entry.at("library").fail(fmt::format("expected matmul (cuBLASLt) or conv (cuDNN), found \"{}\"", op));
    }
    if (auto dtype = entry.find("dtype")) {
        auto parsed = parse_dtype(dtype->as_string());
        if (!parsed)
            dtype->fail(fmt::format("unknown dtype \"{}\"", dtype->as_string()));
        step.dtype = *parsed;
    }
    if (auto algo = entry.find("algo"))
        step.algo = parse_plan_expr(*algo);
    return step;
}

void validate_library_step(const Task& task, const Plan& plan, const PlanLibraryStep& step,
                           const std::set<std::string>& int_names, const std::string& where)
{
    auto is_scratch = [&](const std::string& name) {
        return std::any_of(plan.scratch.begin(), plan.scratch.end(), [&](const PlanScratch& s) { return s.name == name; });
    };
    std::vector<std::string> known;
    for (const auto& arg : task.args)
        if (arg.is_tensor)
            known.push_back(arg.name);
    for (const auto& s : plan.scratch)
        known.push_back(s.name);
    bool any_scratch = false;
    for (const auto& operand : step.operands) {
        std::string operand_where = fmt::format("{}.{}", where, operand.role);
        const ArgSpec* arg = task.find_arg(operand.name);
        bool scratch = !arg && is_scratch(operand.name);
        any_scratch = any_scratch || (scratch && operand.role != "workspace");
        if (!scratch && !(arg && arg->is_tensor)) {
            std::string hint = closest_match(operand.name, known);
            step_fail(fmt::format("{}: '{}' is not a tensor argument or scratch buffer{} (tensors and scratch: {})",
                                  operand_where, operand.name, hint.empty() ? "" : fmt::format(", did you mean '{}'?", hint),
                                  join(known, ", ")));
        }
        if (operand.role == "workspace" && !scratch)
            step_fail(fmt::format("{}: '{}' must be a scratch buffer (the library writes its workspace)", operand_where,
                                  operand.name));
        if (is_output_role(operand.role) && arg && arg->intent == Intent::in)
            step_fail(fmt::format("{}: '{}' is an input of the task, which is never written", operand_where, operand.name));
    }
    // The output may not alias what the step reads (C, being added in place, may be the output).
    const std::string out_role = step.op == LibraryOp::matmul ? "d" : "y";
    const std::string& out = *operand_name(step, out_role);
    for (const auto& operand : step.operands)
        if (operand.role != out_role && operand.role != "c" && operand.name == out)
            step_fail(fmt::format("{}: {} and {} are both '{}'; the library cannot write what it reads in the same call",
                                  where, out_role, operand.role, out));
    if (const std::string* workspace = operand_name(step, "workspace"))
        for (const auto& operand : step.operands)
            if (operand.role != "workspace" && operand.name == *workspace)
                step_fail(fmt::format("{}: the workspace '{}' is also the step's {}", where, *workspace, operand.role));
    if (any_scratch && !step.dtype)
        for (const auto& operand : step.operands)
            if (operand.role != "workspace" && !task.find_arg(operand.name) &&
                std::none_of(step.operands.begin(), step.operands.end(), [&](const StepOperand& o) {
                    const ArgSpec* arg = task.find_arg(o.name);
                    return arg && arg->is_tensor;
                }))
                step_fail(fmt::format("{}: every operand is scratch, so the step needs \"dtype\"", where));

    auto require = [&](const Expr& expr, std::string_view field) {
        for (const auto& name : expr.names())
            if (!int_names.count(name))
                step_fail(fmt::format("{}.{}: unknown name '{}' in '{}' (symbols and params: {})", where, field, name,
                                      expr.text(), join(std::vector<std::string>(int_names.begin(), int_names.end()), ", ")));
        if (expr.needs_real())
            step_fail(fmt::format("{}.{}: '{}' must be an integer expression", where, field, expr.text()));
    };
    require(step.algo, "algo");
    if (step.op == LibraryOp::matmul) {
        const PlanMatmul& mm = step.matmul;
        require(mm.m, "m");
        require(mm.n, "n");
        require(mm.k, "k");
        require(mm.batch, "batch");
        for (size_t i = 0; i < 4; ++i)
            if (mm.strides[i])
                require(*mm.strides[i], fmt::format("stride_{}", k_stride_roles[i]));
        check_matmul_dtypes(task, step, where);
    } else {
        const PlanConv& cv = step.conv;
        require(cv.n, "n");
        require(cv.c, "c");
        require(cv.k, "k");
        require(cv.groups, "groups");
        for (const auto* list : {&cv.size, &cv.kernel, &cv.stride, &cv.padding, &cv.dilation, &cv.output_padding})
            for (const auto& expr : *list)
                require(expr, "size/kernel/stride/padding/dilation");
        check_conv_dtypes(task, step, where);
    }
}

const ResolvedOperand* ResolvedLibraryStep::operand(std::string_view role) const
{
    for (const auto& o : operands)
        if (o.role == role)
            return &o;
    return nullptr;
}

ResolvedLibraryStep resolve_library_step(const Task& task, const PlanLibraryStep& step, const Shape& shape,
                                         const ExprScope& scope,
                                         const std::vector<std::pair<std::string, int64_t>>& scratch_bytes,
                                         const std::string& where)
{
    ResolvedLibraryStep out;
    out.op = step.op;
    out.algo = eval_step(step.algo, scope, where, "algo");
    if (out.algo < 0)
        step_fail(fmt::format("{}: algo is {}; it indexes the library's candidates from 0", where, out.algo));
    auto buffer_elements = [&](const StepOperand& operand, DType dtype, bool& scratch) -> int64_t {
        if (const ArgSpec* arg = task.find_arg(operand.name)) {
            scratch = false;
            return task.element_count(*arg, shape);
        }
        scratch = true;
        for (const auto& [name, bytes] : scratch_bytes)
            if (name == operand.name)
                return bytes / static_cast<int64_t>(dtype_size(dtype));
        step_fail(fmt::format("{}: scratch buffer '{}' is not in the plan", where, operand.name));
    };
    // The extent each role needs, filled in below; an operand the step would overrun is a plan error.
    auto add_operand = [&](std::string_view role, int64_t used) {
        const std::string* name = operand_name(step, role);
        if (!name)
            return;
        StepOperand operand{std::string(role), *name};
        ResolvedOperand r;
        r.role = operand.role;
        r.name = operand.name;
        r.dtype = role == "workspace" ? DType::u8 : library_operand_dtype(task, step, operand.name);
        r.available = buffer_elements(operand, r.dtype, r.scratch);
        r.written = is_output_role(role) || role == "workspace";
        r.used = role == "workspace" ? r.available : used;
        if (r.used > r.available)
            step_fail(fmt::format("{}: {} '{}' would be {} over {} elements, but it holds {}", where, role, r.name,
                                  r.written ? "written" : "read", r.used, r.available));
        if (role == "workspace")
            out.workspace_bytes = r.available;
        out.operands.push_back(std::move(r));
    };

    if (step.op == LibraryOp::matmul) {
        const PlanMatmul& mm = step.matmul;
        ResolvedMatmul& rm = out.matmul;
        rm.m = eval_step(mm.m, scope, where, "m");
        rm.n = eval_step(mm.n, scope, where, "n");
        rm.k = eval_step(mm.k, scope, where, "k");
        rm.batch = eval_step(mm.batch, scope, where, "batch");
        for (auto [value, field] : {std::pair{rm.m, "m"}, {rm.n, "n"}, {rm.k, "k"}, {rm.batch, "batch"}}) {
            if (value < 1)
                step_fail(fmt::format("{}: {} is {}; a matmul needs it at least 1", where, field, value));
            if (value > k_max_matmul_size)
                step_fail(fmt::format("{}: {} is {}, past {} (2^31 - 1), the largest size cuBLASLt's kernels take",
                                      where, field, value, k_max_matmul_size));
        }
        const int64_t sizes[4] = {checked_mul(rm.m, rm.k, where), checked_mul(rm.k, rm.n, where),
                                  checked_mul(rm.m, rm.n, where), checked_mul(rm.m, rm.n, where)};
        for (size_t i = 0; i < 4; ++i) {
            rm.strides[i] = mm.strides[i] ? eval_step(*mm.strides[i], scope, where, fmt::format("stride_{}", k_stride_roles[i]))
                                          : sizes[i];
            if (rm.strides[i] < 0)
                step_fail(fmt::format("{}: stride_{} is {}; strides are at least 0", where, k_stride_roles[i], rm.strides[i]));
        }
        // A shared input (stride 0) is read by every batch index; a shared output would be written by
        // all of them at once.
        if (rm.batch > 1 && rm.strides[3] < sizes[3])
            step_fail(fmt::format("{}: stride_d is {} with batch {}: the output matrices ({} x {} = {} elements each) "
                                  "would overlap",
                                  where, rm.strides[3], rm.batch, rm.m, rm.n, sizes[3]));
        rm.transpose_a = mm.transpose_a;
        rm.transpose_b = mm.transpose_b;
        rm.alpha = mm.alpha;
        rm.beta = mm.beta;
        rm.epilogue = mm.epilogue;
        rm.has_c = operand_name(step, "c") != nullptr;
        rm.has_bias = operand_name(step, "bias") != nullptr;
        auto extent = [&](size_t i) {
            return checked_add(checked_mul(rm.batch - 1, rm.strides[i], where), sizes[i], where);
        };
        add_operand("a", extent(0));
        add_operand("b", extent(1));
        add_operand("c", extent(2));
        add_operand("d", extent(3));
        add_operand("bias", rm.n);
        add_operand("workspace", 0);
        return out;
    }

    const PlanConv& cv = step.conv;
    ResolvedConv& rc = out.conv;
    rc.spatial_dims = static_cast<int>(cv.size.size());
    rc.n = eval_step(cv.n, scope, where, "n");
    rc.c = eval_step(cv.c, scope, where, "c");
    rc.k = eval_step(cv.k, scope, where, "k");
    rc.groups = eval_step(cv.groups, scope, where, "groups");
    for (auto [value, field] : {std::pair{rc.n, "n"}, {rc.c, "c"}, {rc.k, "k"}, {rc.groups, "groups"}})
        if (value < 1)
            step_fail(fmt::format("{}: {} is {}; a conv needs it at least 1", where, field, value));
    if (rc.c % rc.groups != 0 || rc.k % rc.groups != 0)
        step_fail(fmt::format("{}: groups = {} must divide both c = {} and k = {}", where, rc.groups, rc.c, rc.k));
    rc.transposed = cv.transposed;
    rc.channels_last = cv.channels_last;
    int64_t x_elements = checked_mul(rc.n, rc.c, where);
    int64_t y_elements = checked_mul(rc.n, rc.k, where);
    int64_t w_elements = checked_mul(rc.transposed ? rc.c : rc.k, (rc.transposed ? rc.k : rc.c) / rc.groups, where);
    for (int d = 0; d < rc.spatial_dims; ++d) {
        std::string dim = fmt::format("[{}]", d);
        rc.size[d] = eval_step(cv.size[d], scope, where, "size" + dim);
        rc.kernel[d] = eval_step(cv.kernel[d], scope, where, "kernel" + dim);
        rc.stride[d] = eval_step(cv.stride[d], scope, where, "stride" + dim);
        rc.padding[d] = eval_step(cv.padding[d], scope, where, "padding" + dim);
        rc.dilation[d] = eval_step(cv.dilation[d], scope, where, "dilation" + dim);
        rc.output_padding[d] = eval_step(cv.output_padding[d], scope, where, "output_padding" + dim);
        if (rc.size[d] < 1 || rc.kernel[d] < 1 || rc.stride[d] < 1 || rc.dilation[d] < 1 || rc.padding[d] < 0 ||
            rc.output_padding[d] < 0)
            step_fail(fmt::format("{}: dimension {}: size {}, kernel {}, stride {}, dilation {} must be at least 1 and "
                                  "padding {}, output_padding {} at least 0",
                                  where, d, rc.size[d], rc.kernel[d], rc.stride[d], rc.dilation[d], rc.padding[d],
                                  rc.output_padding[d]));
        if (rc.transposed && rc.output_padding[d] >= std::max(rc.stride[d], rc.dilation[d]))
            step_fail(fmt::format("{}: dimension {}: output_padding {} must be less than stride {} or dilation {}", where,
                                  d, rc.output_padding[d], rc.stride[d], rc.dilation[d]));
        rc.out[d] = conv_output_size(rc, d, where);
        x_elements = checked_mul(x_elements, rc.size[d], where);
        y_elements = checked_mul(y_elements, rc.out[d], where);
        w_elements = checked_mul(w_elements, rc.kernel[d], where);
    }
    add_operand("x", x_elements);
    add_operand("w", w_elements);
    add_operand("y", y_elements);
    add_operand("workspace", 0);
    return out;
}

bool task_suits_library_steps(const Task& task)
{
    for (const auto& tag : task.tags)
        if (tag == "gemm" || tag == "matmul" || tag == "blas3" || tag == "conv" || tag == "convolution")
            return true;
    for (const auto& routine : task.vendor_baselines)
        if (routine.find("gemm") != std::string::npos)
            return true;
    if (!task.is_torch())
        return false;
    // The program's own calls: nn.Linear and F.linear, the matrix products, einsum, convolutions;
    // and their ATen spellings, which a region `kforge model extract` wrote uses
    // (`torch.ops.aten.addmm.default(`).
    static constexpr std::string_view k_calls[] = {"Linear(", "linear(", "matmul(", ".mm(", "torch.mm(", "bmm(",
                                                   "addmm(", "baddbmm(", "einsum(", "Conv1d(", "Conv2d(", "Conv3d(",
                                                   "ConvTranspose", "conv1d(", "conv2d(", "conv3d(", "conv_transpose",
                                                   " @ ", "aten.mm.", "aten.addmm.", "aten.bmm.", "aten.baddbmm.",
                                                   "aten.linear.", "aten.matmul.", "aten.einsum.", "aten.convolution.",
                                                   "aten._convolution.", "aten.conv"};
    const std::string& source = task.reference.source;
    return std::any_of(std::begin(k_calls), std::end(k_calls),
                       [&](std::string_view call) { return source.find(call) != std::string::npos; });
}

std::string describe_library_step(const ResolvedLibraryStep& step)
{
    auto dims = [](std::initializer_list<int64_t> values) {
        std::vector<std::string> parts;
        for (int64_t v : values)
            parts.push_back(std::to_string(v));
        return join(parts, "x");
    };
    auto name = [&](std::string_view role) {
        const ResolvedOperand* o = step.operand(role);
        return o ? o->name : std::string();
    };
    std::string text;
    if (step.op == LibraryOp::matmul) {
        const ResolvedMatmul& mm = step.matmul;
        std::string batch = mm.batch > 1 ? fmt::format("{}x", mm.batch) : "";
        // A transposed operand shows as stored, then ^T: "b[1024x256]^T" is a 256 x 1024 op(B).
        auto matrix = [&](std::string_view role, int64_t rows, int64_t cols, bool transposed) {
            return transposed ? fmt::format("{}[{}{}]^T", name(role), batch, dims({cols, rows}))
                              : fmt::format("{}[{}{}]", name(role), batch, dims({rows, cols}));
        };
        std::string product = fmt::format("{}{} @ {}", mm.alpha != 1 ? fmt::format("{:g} * ", mm.alpha) : "",
                                          matrix("a", mm.m, mm.k, mm.transpose_a), matrix("b", mm.k, mm.n, mm.transpose_b));
        std::string sum = product;
        if (mm.has_c)
            sum += fmt::format(" + {}{}[{}{}]", mm.beta != 1 ? fmt::format("{:g} * ", mm.beta) : "", name("c"), batch,
                               dims({mm.m, mm.n}));
        if (mm.has_bias)
            sum += fmt::format(" + {}[{}]", name("bias"), mm.n);
        if (mm.epilogue != StepEpilogue::none)
            sum = fmt::format("{}({})", step_epilogue_name(mm.epilogue), sum);
        text = fmt::format("matmul {}[{}{}] = {}", name("d"), batch, dims({mm.m, mm.n}), sum);
    } else {
        const ResolvedConv& cv = step.conv;
        std::vector<std::string> size, out, kernel, stride, padding, dilation;
        for (int d = 0; d < cv.spatial_dims; ++d) {
            size.push_back(std::to_string(cv.size[d]));
            out.push_back(std::to_string(cv.out[d]));
            kernel.push_back(std::to_string(cv.kernel[d]));
            stride.push_back(std::to_string(cv.stride[d]));
            padding.push_back(std::to_string(cv.padding[d]));
            dilation.push_back(std::to_string(cv.dilation[d]));
        }
        auto tensor = [&](int64_t channels, const std::vector<std::string>& spatial) {
            return cv.channels_last ? fmt::format("{}x{}x{}", cv.n, join(spatial, "x"), channels)
                                    : fmt::format("{}x{}x{}", cv.n, channels, join(spatial, "x"));
        };
        text = fmt::format("conv {}[{}] = conv{}d{}({}[{}], {}[{}x{}x{}], stride {}, padding {}, dilation {}{}{})",
                           name("y"), tensor(cv.k, out), cv.spatial_dims, cv.transposed ? "_transpose" : "", name("x"),
                           tensor(cv.c, size), name("w"), cv.transposed ? cv.c : cv.k,
                           (cv.transposed ? cv.k : cv.c) / cv.groups, join(kernel, "x"), join(stride, "x"),
                           join(padding, "x"), join(dilation, "x"),
                           cv.groups > 1 ? fmt::format(", groups {}", cv.groups) : "",
                           cv.channels_last ? ", channels last" : "");
    }
    text += fmt::format(", algo {}", step.algo);
    if (step.workspace_bytes > 0)
        text += fmt::format(", workspace {} ({} bytes)", name("workspace"), step.workspace_bytes);
    return text;
}

} // namespace kforge
