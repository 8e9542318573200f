// What the export's host-code generators share (host_code.hpp): which symbols the generated code
// needs and where each one comes from, the checked int64 helpers it calls, and the translation of
// kforge's integer expressions into C++ over those helpers.
//
// The helpers reproduce util/expr.cpp's integer semantics exactly: int64 arithmetic in which
// overflow and division by zero are errors, C's truncating `/` and `%`, ceil_div rounding toward
// +infinity for every sign, comparisons and logic yielding 0 or 1. Every operand is evaluated (no
// short-circuit), as kforge's stack machine does, so an expression fails here exactly when it fails
// there. The checks are written without compiler builtins so any host compiler takes them.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "export/host_code.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

void collect_names(const Expr& expr, std::set<std::string>& out)
{
    for (const auto& name : expr.names())
        out.insert(name);
}

// The free symbol an expression is, when it is nothing but that symbol's name.
std::optional<std::string> bare_symbol(const Expr& expr, const Task& task)
{
    const auto& nodes = expr.nodes();
    if (nodes.size() != 1 || nodes[0].op != Expr::Op::name)
        return std::nullopt;
    for (const auto& symbol : task.symbols)
        if (symbol.name == nodes[0].name)
            return symbol.name;
    return std::nullopt;
}

void collect_step_names(const PlanLibraryStep& step, std::set<std::string>& out)
{
    collect_names(step.algo, out);
    if (step.op == LibraryOp::matmul) {
        const PlanMatmul& mm = step.matmul;
        for (const Expr* expr : {&mm.m, &mm.n, &mm.k, &mm.batch})
            collect_names(*expr, out);
        for (const auto& stride : mm.strides)
            if (stride)
                collect_names(*stride, out);
        return;
    }
    const PlanConv& cv = step.conv;
    for (const Expr* expr : {&cv.n, &cv.c, &cv.k, &cv.groups})
        collect_names(*expr, out);
    for (const auto* list : {&cv.size, &cv.kernel, &cv.stride, &cv.padding, &cv.dilation, &cv.output_padding})
        for (const auto& expr : *list)
            collect_names(expr, out);
}

// Every name the plan, the tensor shapes, the integer scalars and the scratch limit mention.
std::set<std::string> mentioned_names(const Task& task, const Plan& plan)
{
    std::set<std::string> names;
    for (const auto& scratch : plan.scratch)
        collect_names(scratch.bytes, names);
    for (const auto& launch : plan.launches) {
        if (launch.library) {
            collect_step_names(*launch.library, names);
            continue;
        }
        for (int d = 0; d < 3; ++d) {
            collect_names(launch.grid[d], names);
            collect_names(launch.block[d], names);
        }
        collect_names(launch.smem, names);
        if (launch.repeat)
            collect_names(*launch.repeat, names);
        for (const auto& arg : launch.args) {
            if (arg.value)
                collect_names(*arg.value, names);
            else if (!task.find_arg(arg.text))
                names.insert(arg.text); // a symbol, param, scratch or iter; the filter keeps symbols
        }
    }
    collect_names(task.limits.max_scratch_bytes, names);
    for (const auto& arg : task.args) {
        for (const auto& dim : arg.shape)
            collect_names(dim, names);
        if (!arg.is_tensor && !dtype_is_float(arg.dtype))
            collect_names(arg.value, names);
    }
    return names;
}

} // namespace

LauncherSignature describe_launcher(const Task& task, const Plan& plan)
{
    LauncherSignature sig;
    sig.function = "kforge_" + task.name;

    std::set<std::string> free_names;
    for (const auto& symbol : task.symbols)
        free_names.insert(symbol.name);
    std::set<std::string> needed;
    for (const auto& name : mentioned_names(task, plan))
        if (free_names.count(name) ||
            std::any_of(task.derived_symbols.begin(), task.derived_symbols.end(),
                        [&](const DerivedSymbol& d) { return d.name == name; }))
            needed.insert(name);
    // A derived symbol needs what it is computed from; later ones only use earlier ones.
    for (auto it = task.derived_symbols.rbegin(); it != task.derived_symbols.rend(); ++it)
        if (needed.count(it->name))
            collect_names(it->value, needed);
    for (const auto& derived : task.derived_symbols)
        if (needed.count(derived.name))
            sig.derived.push_back(derived);
    sig.symbols = needed;

    std::set<std::string> carried;
    std::set<std::string> arg_names;
    for (const auto& arg : task.args) {
        arg_names.insert(arg.name);
        if (arg.is_tensor || dtype_is_float(arg.dtype))
            continue;
        auto symbol = bare_symbol(arg.value, task);
        if (symbol && needed.count(*symbol) && carried.insert(*symbol).second)
            sig.sizes.push_back({arg.name, *symbol, arg.dtype, true});
    }
    for (const auto& symbol : task.symbols) {
        if (!needed.count(symbol.name)) {
            sig.unused_symbols.push_back(symbol.name);
        } else if (!carried.count(symbol.name)) {
            std::string name = arg_names.count(symbol.name) ? "size_" + symbol.name : symbol.name;
            sig.extra_sizes.push_back({name, symbol.name, DType::i64, false});
            sig.sizes.push_back(sig.extra_sizes.back());
        }
    }
    for (const auto& constraint : task.constraints) {
        auto names = constraint.names();
        if (!std::all_of(names.begin(), names.end(),
                         [&](const std::string& n) { return needed.count(n) > 0; }))
            sig.unchecked_constraints.push_back(constraint.text());
    }
    return sig;
}

std::string c_string(const std::string& text)
{
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\')
            out += '\\';
        if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out + "\"";
}

std::string c_type(DType dtype)
{
    return std::string(dtype_cuda_name(dtype));
}

std::optional<double> constant_value(const Task& task, const Expr& expr)
{
    ExprScope scope;
    for (const auto& [name, value] : task.constants)
        scope.reals[name] = value;
    for (const auto& name : expr.names())
        if (!scope.reals.count(name))
            return std::nullopt;
    try {
        return expr.eval_real(scope);
    } catch (const ExprError&) {
        return std::nullopt; // e.g. a division by zero: not a usable default
    }
}

std::pair<std::string, std::string> c_int_range(DType dtype)
{
    switch (dtype) {
    case DType::i8: return {"INT64_C(-128)", "INT64_C(127)"};
    case DType::u8: return {"INT64_C(0)", "INT64_C(255)"};
    case DType::i16: return {"INT64_C(-32768)", "INT64_C(32767)"};
    case DType::u16: return {"INT64_C(0)", "INT64_C(65535)"};
    case DType::i32: return {"INT64_C(-2147483648)", "INT64_C(2147483647)"};
    case DType::u32: return {"INT64_C(0)", "INT64_C(4294967295)"};
    case DType::u64: return {"INT64_C(0)", ""};
    default: return {"", ""};
    }
}

bool expr_can_fail(const Expr& expr)
{
    return std::any_of(expr.nodes().begin(), expr.nodes().end(), [](const Expr::Node& node) {
        switch (node.op) {
        case Expr::Op::add:
        case Expr::Op::sub:
        case Expr::Op::mul:
        case Expr::Op::div:
        case Expr::Op::mod:
        case Expr::Op::ceil_div:
        case Expr::Op::neg: return true;
        default: return false;
        }
    });
}

std::string expr_to_cpp(const Expr& expr, const std::set<std::string>& params)
{
    std::vector<std::string> stack;
    auto pop = [&] {
        std::string top = std::move(stack.back());
        stack.pop_back();
        return top;
    };
    for (const auto& node : expr.nodes()) {
        switch (node.op) {
        case Expr::Op::number: stack.push_back(fmt::format("INT64_C({})", node.integer)); break;
        case Expr::Op::name:
            if (params.count(node.name))
                stack.push_back(fmt::format("((int64_t)({}))", node.name));
            else if (node.name == "iter")
                stack.push_back("iter");
            else
                stack.push_back("sym_" + node.name);
            break;
        case Expr::Op::neg: stack.push_back(fmt::format("negate(e, {})", pop())); break;
        case Expr::Op::logical_not: stack.push_back(fmt::format("logical_not({})", pop())); break;
        case Expr::Op::min:
        case Expr::Op::max: {
            std::vector<std::string> args(node.arity);
            for (auto it = args.rbegin(); it != args.rend(); ++it)
                *it = pop();
            std::string acc = args[0];
            for (size_t i = 1; i < args.size(); ++i)
                acc = fmt::format("{}({}, {})", node.op == Expr::Op::min ? "min2" : "max2", acc,
                                  args[i]);
            stack.push_back(acc);
            break;
        }
        case Expr::Op::real_number:
        case Expr::Op::sqrt:
        case Expr::Op::abs:
        case Expr::Op::log2:
            throw PlanError(fmt::format("'{}' must be an integer expression", expr.text()));
        default: {
            static const std::map<Expr::Op, std::string> k_helpers = {
                {Expr::Op::add, "add"},           {Expr::Op::sub, "subtract"},
                {Expr::Op::mul, "multiply"},      {Expr::Op::div, "divide"},
                {Expr::Op::mod, "modulo"},        {Expr::Op::ceil_div, "ceil_divide"},
                {Expr::Op::eq, "is_eq"},          {Expr::Op::ne, "is_ne"},
                {Expr::Op::lt, "is_lt"},          {Expr::Op::le, "is_le"},
                {Expr::Op::gt, "is_gt"},          {Expr::Op::ge, "is_ge"},
                {Expr::Op::logical_and, "both"}, {Expr::Op::logical_or, "either"}};
            std::string b = pop();
            std::string a = pop();
            const std::string& helper = k_helpers.at(node.op);
            bool checked = node.op == Expr::Op::add || node.op == Expr::Op::sub ||
                           node.op == Expr::Op::mul || node.op == Expr::Op::div ||
                           node.op == Expr::Op::mod || node.op == Expr::Op::ceil_div;
            stack.push_back(checked ? fmt::format("{}(e, {}, {})", helper, a, b)
                                    : fmt::format("{}({}, {})", helper, a, b));
            break;
        }
        }
    }
    if (stack.size() != 1)
        throw PlanError(fmt::format("internal: '{}' did not translate", expr.text()));
    return stack.back();
}

std::string generate_helper_code(const std::string& function, const std::string& detail)
{
    // Written once here and copied into every export, so users read one version of the rules.
    static const char* const k_helpers = R"cpp(
// The first failure of an evaluation, as text; after it every step is a no-op yielding 0.
struct Eval
{
    bool failed;
    char what[200];
    Eval() : failed(false) { what[0] = '\0'; }
};

inline void fail(Eval* e, const char* format, ...)
{
    if (e->failed)
        return;
    e->failed = true;
    va_list args;
    va_start(args, format);
    vsnprintf(e->what, sizeof e->what, format, args);
    va_end(args);
}

inline int64_t add(Eval* e, int64_t a, int64_t b)
{
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) {
        fail(e, "integer overflow in %lld + %lld", (long long)a, (long long)b);
        return 0;
    }
    return a + b;
}

inline int64_t subtract(Eval* e, int64_t a, int64_t b)
{
    if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b)) {
        fail(e, "integer overflow in %lld - %lld", (long long)a, (long long)b);
        return 0;
    }
    return a - b;
}

inline int64_t multiply(Eval* e, int64_t a, int64_t b)
{
    bool overflow = false;
    if (a > 0)
        overflow = b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a;
    else if (a < 0)
        overflow = b > 0 ? a < INT64_MIN / b : (b != 0 && a < INT64_MAX / b);
    if (overflow) {
        fail(e, "integer overflow in %lld * %lld", (long long)a, (long long)b);
        return 0;
    }
    return a * b;
}

inline int64_t negate(Eval* e, int64_t a)
{
    if (a == INT64_MIN) {
        fail(e, "integer overflow in unary -");
        return 0;
    }
    return -a;
}

// The checks every division shares; true when `a op b` may be computed.
inline bool can_divide(Eval* e, int64_t a, int64_t b, const char* op)
{
    if (b == 0) {
        fail(e, "division by zero (%lld %s 0)", (long long)a, op);
        return false;
    }
    if (a == INT64_MIN && b == -1) {
        fail(e, "integer overflow in division");
        return false;
    }
    return true;
}

inline int64_t divide(Eval* e, int64_t a, int64_t b) { return can_divide(e, a, b, "/") ? a / b : 0; }
inline int64_t modulo(Eval* e, int64_t a, int64_t b) { return can_divide(e, a, b, "%") ? a % b : 0; }

// Rounds toward +infinity for every sign combination.
inline int64_t ceil_divide(Eval* e, int64_t a, int64_t b)
{
    if (!can_divide(e, a, b, "ceil_div"))
        return 0;
    int64_t q = a / b;
    return (a % b != 0 && (a > 0) == (b > 0)) ? q + 1 : q;
}

inline int64_t min2(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max2(int64_t a, int64_t b) { return a > b ? a : b; }
inline int64_t logical_not(int64_t a) { return a == 0 ? 1 : 0; }
inline int64_t both(int64_t a, int64_t b) { return (a != 0 && b != 0) ? 1 : 0; }
inline int64_t either(int64_t a, int64_t b) { return (a != 0 || b != 0) ? 1 : 0; }
inline int64_t is_eq(int64_t a, int64_t b) { return a == b ? 1 : 0; }
inline int64_t is_ne(int64_t a, int64_t b) { return a != b ? 1 : 0; }
inline int64_t is_lt(int64_t a, int64_t b) { return a < b ? 1 : 0; }
inline int64_t is_le(int64_t a, int64_t b) { return a <= b ? 1 : 0; }
inline int64_t is_gt(int64_t a, int64_t b) { return a > b ? 1 : 0; }
inline int64_t is_ge(int64_t a, int64_t b) { return a >= b ? 1 : 0; }

// The reason the last call on this thread refused its sizes or failed ("" after a success).
inline char* last_error_text()
{
    static thread_local char text[512];
    return text;
}

// Records a refusal and returns -1.
inline int refuse_with(const char* format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(last_error_text(), 512, format, args);
    va_end(args);
    return -1;
}

// Records the evaluation's failure at `where` and returns -1.
inline int refuse(const Eval* e, const char* where)
{
    return refuse_with("%s: %s", where, e->what);
}
)cpp";
    // A named namespace of inline functions: nvcc warns about unreferenced functions in an
    // anonymous one, and two exports of one task share these identical definitions.
    return fmt::format("namespace {} {{\n{}\n}} // namespace {}\n\n"
                       "extern \"C\" const char* {}_last_error(void)\n{{\n    return {}::"
                       "last_error_text();\n}}\n",
                       detail, k_helpers, detail, function, detail);
}

} // namespace kforge
