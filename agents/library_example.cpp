// library_step_example(): see library_example.hpp. The task's shapes are expressions over its size
// symbols; a dimension that is a plain integer is written as a number, any other as a quoted
// expression, as a plan takes them.
#include "agents/library_example.hpp"

#include <fmt/format.h>

#include "core/dtype.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

const ArgSpec* find_arg(const Task& task, const auto& accept)
{
    for (const auto& arg : task.args)
        if (arg.is_tensor && accept(arg))
            return &arg;
    return nullptr;
}

bool is_weight(const ArgSpec& arg)
{
    return arg.intent == Intent::in && arg.from.kind == ProgramSlot::Kind::param;
}

// `2048` for a constant, `"batch_size * seq_len"` for an expression.
std::string plan_value(const std::string& text)
{
    bool number = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
    return number ? text : "\"" + text + "\"";
}

std::string product(const std::vector<Expr>& dims, size_t count)
{
    std::vector<std::string> parts;
    for (size_t i = 0; i < count; ++i) {
        std::string t = dims[i].text();
        bool simple = t.find_first_of("+-") == std::string::npos;
        parts.push_back(simple ? t : "(" + t + ")");
    }
    return parts.empty() ? "1" : join(parts, " * ");
}

std::string gemm_example(const Task& task, const ArgSpec& a, const ArgSpec& w, bool transpose_b, const ArgSpec* bias,
                         const ArgSpec& out)
{
    std::string k = w.shape[transpose_b ? 1 : 0].text();
    std::string n = w.shape[transpose_b ? 0 : 1].text();
    std::string m = product(a.shape, a.shape.size() - 1);
    std::string elems = m + " * " + (n.find_first_of("+-") == std::string::npos ? n : "(" + n + ")");
    (void)task;
    return fmt::format(
        "  For example, with this task's own tensors and sizes: {a} ([{m}, {k}]) times {w}{stored},\n"
        "  into scratch{with_bias}, then one kernel of yours from it to {out}:\n\n"
        "  \"params\":   {{\"ALGO\": [0, 1, 2, 3], \"BLOCK\": [256, 512]}},\n"
        "  \"scratch\":  [{{\"name\": \"t\", \"bytes\": \"{size} * {elems}\"}}, {{\"name\": \"ws\", \"bytes\": 33554432}}],\n"
        "  \"launches\": [{{\"library\": \"matmul\", \"a\": \"{a}\", \"b\": \"{w}\",{transpose} \"d\": \"t\",\n"
        "                \"m\": {mv}, \"n\": {nv}, \"k\": {kv},{bias_field}\n"
        "                \"workspace\": \"ws\", \"algo\": \"ALGO\"}},\n"
        "               {{\"kernel\": \"tail\", \"grid\": [\"ceil_div({elems}, BLOCK)\", 1, 1],\n"
        "                \"block\": [\"BLOCK\", 1, 1], \"args\": [\"t\", \"{out}\", \"{elems}\"]}}]\n",
        fmt::arg("a", a.name), fmt::arg("w", w.name), fmt::arg("m", m), fmt::arg("k", k), fmt::arg("out", out.name),
        fmt::arg("stored", transpose_b ? fmt::format(" (stored [{}, {}], as nn.Linear keeps it)", n, k) : ""),
        fmt::arg("with_bias", bias ? fmt::format(" with {} in the epilogue", bias->name) : ""),
        fmt::arg("size", dtype_size(a.dtype)), fmt::arg("elems", elems),
        fmt::arg("transpose", transpose_b ? " \"transpose_b\": true," : ""), fmt::arg("mv", plan_value(m)),
        fmt::arg("nv", plan_value(n)), fmt::arg("kv", plan_value(k)),
        fmt::arg("bias_field", bias ? fmt::format(" \"bias\": \"{}\",", bias->name) : ""));
}

std::string conv_example(const ArgSpec& x, const ArgSpec& w, const ArgSpec& out)
{
    size_t spatial = w.shape.size() - 2;
    std::vector<std::string> size, kernel, ones, zeros;
    for (size_t i = 0; i < spatial; ++i) {
        size.push_back(plan_value(x.shape[2 + i].text()));
        kernel.push_back(plan_value(w.shape[2 + i].text()));
        ones.push_back("1");
        zeros.push_back("0");
    }
    return fmt::format(
        "  For example, with this task's own tensors and sizes: {w} over {x} into {y} (stride, padding and\n"
        "  the rest as the program's convolution has them), then a kernel of yours over {y} in place:\n\n"
        "  \"params\":   {{\"ALGO\": [0, 1, 2, 3]}},\n"
        "  \"scratch\":  [{{\"name\": \"ws\", \"bytes\": 33554432}}],\n"
        "  \"launches\": [{{\"library\": \"conv\", \"x\": \"{x}\", \"w\": \"{w}\", \"y\": \"{y}\", \"n\": {n}, \"c\": {c}, "
        "\"k\": {k},\n                \"size\": [{size}], \"kernel\": [{kernel}], \"stride\": [{ones}], \"padding\": "
        "[{zeros}],\n                \"dilation\": [{ones}], \"groups\": 1, \"layout\": \"nchw\", \"workspace\": \"ws\", "
        "\"algo\": \"ALGO\"}}, ...]\n",
        fmt::arg("x", x.name), fmt::arg("w", w.name), fmt::arg("y", out.name), fmt::arg("n", plan_value(x.shape[0].text())),
        fmt::arg("c", plan_value(x.shape[1].text())), fmt::arg("k", plan_value(w.shape[0].text())),
        fmt::arg("size", join(size, ", ")), fmt::arg("kernel", join(kernel, ", ")), fmt::arg("ones", join(ones, ", ")),
        fmt::arg("zeros", join(zeros, ", ")));
}

constexpr const char* k_generic =
    "  For example (the names are an example's: use your task's own tensors and sizes), a linear layer\n"
    "  x [batch, in_features] times weight [out_features, in_features] with its bias, into scratch, then\n"
    "  one kernel of yours for everything after it:\n\n"
    "  \"params\":   {\"ALGO\": [0, 1, 2, 3], \"BLOCK\": [256, 512]},\n"
    "  \"scratch\":  [{\"name\": \"t\", \"bytes\": \"4 * batch * out_features\"}, {\"name\": \"ws\", \"bytes\": 33554432}],\n"
    "  \"launches\": [{\"library\": \"matmul\", \"a\": \"x\", \"b\": \"weight\", \"transpose_b\": true, \"d\": \"t\",\n"
    "                \"m\": \"batch\", \"n\": \"out_features\", \"k\": \"in_features\", \"bias\": \"bias\",\n"
    "                \"workspace\": \"ws\", \"algo\": \"ALGO\"},\n"
    "               {\"kernel\": \"tail\", \"grid\": [\"ceil_div(batch * out_features, BLOCK)\", 1, 1],\n"
    "                \"block\": [\"BLOCK\", 1, 1], \"args\": [\"t\", \"out\", \"batch\", \"out_features\"]}]\n";

} // namespace

std::string library_step_example(const Task& task)
{
    const ArgSpec* out = find_arg(task, [](const ArgSpec& a) { return a.intent == Intent::out; });
    if (!out)
        return k_generic;
    // A conv: a weight of rank 3 to 5 whose input channels match an input's dimension 1.
    if (const ArgSpec* w = find_arg(task, [](const ArgSpec& a) { return is_weight(a) && a.shape.size() >= 3 && a.shape.size() <= 5; }))
        if (const ArgSpec* x = find_arg(task, [&](const ArgSpec& a) {
                return a.intent == Intent::in && &a != w && a.shape.size() == w->shape.size() &&
                       a.shape[1].text() == w->shape[1].text();
            }))
            return conv_example(*x, *w, *out);
    // A GEMM: a 2-D weight (a parameter; else a second 2-D input) and an input whose last dim is one of its dims.
    const ArgSpec* w = find_arg(task, [](const ArgSpec& a) { return is_weight(a) && a.shape.size() == 2; });
    if (!w) {
        const ArgSpec* first = find_arg(task, [](const ArgSpec& a) { return a.intent == Intent::in && a.shape.size() == 2; });
        if (first)
            w = find_arg(task, [&](const ArgSpec& a) { return a.intent == Intent::in && a.shape.size() == 2 && &a != first; });
    }
    if (!w)
        return k_generic;
    for (bool transpose_b : {true, false}) {
        const std::string k = w->shape[transpose_b ? 1 : 0].text();
        const ArgSpec* a = find_arg(task, [&](const ArgSpec& arg) {
            return arg.intent == Intent::in && &arg != w && !arg.shape.empty() && arg.shape.back().text() == k;
        });
        if (!a)
            continue;
        const std::string n = w->shape[transpose_b ? 0 : 1].text();
        const ArgSpec* bias = find_arg(task, [&](const ArgSpec& arg) {
            return is_weight(arg) && arg.shape.size() == 1 && arg.shape[0].text() == n && &arg != w;
        });
        return gemm_example(task, *a, *w, transpose_b, bias, *out);
    }
    return k_generic;
}

} // namespace kforge
