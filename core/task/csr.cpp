// CSR generators: the links between the row-pointer and column-index arguments, and the sizes and
// requirements of the matrix at one shape. The generation itself (tasks/README.md, "CSR matrices")
// is the evaluator's; what is checked here is what makes that generation always possible: with
// G rows per group and at most ceil(NNZ/R) * G nonzeros per group bounded by the window W, every
// row fits its window, so sorted unique columns exist for every seed.
#include "core/task/csr.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

namespace kforge {
namespace {

// 128-bit intermediates, as the generation's own arithmetic uses (__extension__: GCC and Clang).
__extension__ typedef __int128 Int128;

constexpr int64_t k_max_group = 65536;
constexpr double k_max_sigma = 8;

int64_t largest_value(DType dtype)
{
    return dtype == DType::i32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
}

const ArgSpec* find_cols_partner(const Task& task, const std::string& row_ptr_name)
{
    for (const auto& arg : task.args)
        if (arg.is_tensor && arg.intent == Intent::in && arg.gen.dist == Generator::Dist::csr_cols &&
            arg.gen.of == row_ptr_name)
            return &arg;
    return nullptr;
}

} // namespace

void check_csr_links(const JsonReader& args, const Task& task)
{
    auto is_csr_input = [](const ArgSpec& arg, Generator::Dist dist) {
        return arg.is_tensor && arg.intent != Intent::out && arg.gen.dist == dist;
    };
    // Column tensors first: a wrong `of` explains a row pointer without its partner.
    for (size_t i = 0; i < task.args.size(); ++i) {
        const ArgSpec& arg = task.args[i];
        if (!is_csr_input(arg, Generator::Dist::csr_cols))
            continue;
        const ArgSpec* rows = task.find_arg(arg.gen.of);
        if (!rows || !is_csr_input(*rows, Generator::Dist::csr))
            args.at(i).at("gen").at("of").fail(
                fmt::format("'{}' is not an input tensor with {{\"dist\": \"csr\"}}", arg.gen.of));
    }
    for (size_t i = 0; i < task.args.size(); ++i) {
        const ArgSpec& arg = task.args[i];
        bool rows = is_csr_input(arg, Generator::Dist::csr);
        if (!rows && !is_csr_input(arg, Generator::Dist::csr_cols))
            continue;
        JsonReader entry = args.at(i);
        if (arg.intent != Intent::in)
            entry.at("intent").fail(fmt::format("'{}' is generated as a CSR structure; its intent must be 'in'",
                                                arg.name));
        if (arg.shape.size() != 1)
            entry.at("shape").fail(fmt::format("a CSR {} tensor is one-dimensional, found {} dimensions",
                                               rows ? "row-pointer" : "column-index", arg.shape.size()));
        if (!rows)
            continue;
        int partners = 0;
        for (const auto& other : task.args)
            partners += is_csr_input(other, Generator::Dist::csr_cols) && other.gen.of == arg.name;
        if (partners != 1)
            entry.at("gen").fail(fmt::format("the CSR row pointers '{}' need exactly one column-index tensor with "
                                             "{{\"dist\": \"csr_cols\", \"of\": \"{}\"}}, found {}",
                                             arg.name, arg.name, partners));
    }
}

CsrSizes csr_sizes(const Task& task, const ArgSpec& row_ptr_arg, const Shape& shape)
{
    const ArgSpec* cols_arg = find_cols_partner(task, row_ptr_arg.name);
    if (!row_ptr_arg.gen.csr || !cols_arg)
        throw ExprError(fmt::format("'{}' is not a complete CSR generator", row_ptr_arg.name));
    const CsrSpec& spec = *row_ptr_arg.gen.csr;
    ExprScope scope = task.scope_for(shape);
    CsrSizes sizes;
    sizes.rows = task.element_count(row_ptr_arg, shape) - 1;
    sizes.nnz = task.element_count(*cols_arg, shape);
    sizes.cols = spec.cols.eval_int(scope);
    sizes.sigma = spec.sigma.eval_real(scope);
    sizes.window = std::min(spec.band.eval_int(scope), sizes.cols);
    int64_t group = spec.group.eval_int(scope);
    if (sizes.rows >= 1 && sizes.nnz >= 1 && sizes.window >= 1) {
        Int128 fit = static_cast<Int128>(sizes.window - 1) * sizes.rows / sizes.nnz;
        sizes.group = static_cast<int64_t>(std::max<Int128>(1, std::min<Int128>(group, fit)));
    } else {
        sizes.group = group;
    }
    return sizes;
}

std::string check_csr_shape(const Task& task, const Shape& shape)
{
    for (const auto& arg : task.args) {
        if (!arg.is_tensor || arg.intent == Intent::out || arg.gen.dist != Generator::Dist::csr)
            continue;
        const ArgSpec* cols_arg = find_cols_partner(task, arg.name);
        const CsrSpec& spec = *arg.gen.csr;
        CsrSizes s = csr_sizes(task, arg, shape);
        std::string where = fmt::format("the CSR matrix of '{}' at {}", arg.name, shape.label);
        ExprScope scope = task.scope_for(shape);
        int64_t band = spec.band.eval_int(scope);
        int64_t group = spec.group.eval_int(scope);
        if (s.rows < 1)
            return fmt::format("{}: '{}' has {} elements; row pointers need R + 1 >= 2", where, arg.name,
                               s.rows + 1);
        if (s.cols < 1 || band < 1)
            return fmt::format("{}: cols ({}) and band ({}) must be at least 1", where, s.cols, band);
        if (group < 1 || group > k_max_group)
            return fmt::format("{}: group is {}, outside 1..{}", where, group, k_max_group);
        if (!(s.sigma >= 0 && s.sigma <= k_max_sigma))
            return fmt::format("{}: sigma is {}, outside 0..{}", where, s.sigma, k_max_sigma);
        int64_t densest = (s.nnz + s.rows - 1) / s.rows;
        if (densest > s.window)
            return fmt::format("{}: {} nonzeros over {} rows need rows of {} entries, but a row's window "
                               "holds only min(band, cols) = {} columns",
                               where, s.nnz, s.rows, densest, s.window);
        if (s.nnz > largest_value(arg.dtype))
            return fmt::format("{}: {} nonzeros do not fit the {} row pointers", where, s.nnz,
                               dtype_name(arg.dtype));
        if (s.cols - 1 > largest_value(cols_arg->dtype))
            return fmt::format("{}: column indices up to {} do not fit {} '{}'", where, s.cols - 1,
                               dtype_name(cols_arg->dtype), cols_arg->name);
    }
    return "";
}

} // namespace kforge
