// ResolveWriter, the library steps: each step's sizes, operands and bounds, step by step as
// resolve_library_step() (core/library_step.cpp) computes them.
#include <algorithm>

#include <fmt/format.h>

#include "export/resolve_writer.hpp"
#include "util/text.hpp"

namespace kforge {

// `target = expr;`, refusing as kforge does when the evaluation fails.
void ResolveWriter::step_value(const std::string& label, const std::string& target,
                               const Expr& expr, const std::string& field)
{
    line(fmt::format("    {} = {};", target, cpp(expr)));
    if (expr_can_fail(expr))
        fail_site(label, replace_all(fmt::format("{} '{}'", field, expr.text()), "%", "%%"));
}

// `target = a op b` with the extent's overflow refused as kforge refuses it.
void ResolveWriter::step_extent(const std::string& label, const std::string& target,
                                const std::string& value)
{
    line(fmt::format("    {} = {};", target, value));
    line("    if (e->failed)");
    refuse_at(label, "the operand's extent overflows 64 bits", "");
}

// One operand: where it is in the buffer table, and that the step stays inside it.
void ResolveWriter::step_operand(const std::string& label, const PlanLibraryStep& step, size_t slot,
                                 const std::string& role, const std::string& used)
{
    const StepOperand* operand = nullptr;
    for (const auto& o : step.operands)
        if (o.role == role)
            operand = &o;
    if (!operand) {
        line(fmt::format("    out->arg[{}] = -1; // no {}", slot, role));
        return;
    }
    int64_t index = plan_buffer_index(m_task, m_plan, operand->name);
    std::string available;
    if (index < static_cast<int64_t>(m_task.args.size())) {
        available = fmt::format("tensor_elements[{}]", index);
    } else {
        DType dtype =
            role == "workspace" ? DType::u8 : library_operand_dtype(m_task, step, operand->name);
        available =
            fmt::format("plan->scratch_bytes[{}] / INT64_C({})",
                        index - static_cast<int64_t>(m_task.args.size()), dtype_size(dtype));
    }
    bool written = role == "d" || role == "y" || role == "workspace";
    line("    {");
    line(fmt::format("        const int64_t available = {};", available));
    line(fmt::format("        const int64_t used = {};", role == "workspace" ? "available" : used));
    line("        if (used > available)");
    line(fmt::format(
        "            return refuse_with(\"%s at %s: {} '{}' would be {} over %lld elements, but "
        "it holds %lld\", {}, at(), (long long)used, (long long)available);",
        role, operand->name, written ? "written" : "read", c_string(label)));
    if (role == "workspace")
        line("        out->workspace_bytes = available;");
    line("    }");
    line(fmt::format("    out->arg[{}] = {}; // {}", slot, index, operand->name));
}

void ResolveWriter::write_step(size_t index)
{
    const PlanLibraryStep& step = *m_plan.launches[index].library;
    std::string label = fmt::format("launches[{}] ({})", index, site_name(index));
    line(fmt::format("{{ // {}: a library step", label));
    line(fmt::format("    if (total_launches + 1 > INT64_C({}))", m_task.limits.max_launches));
    refuse_at(label,
              fmt::format("%llu launches in all, over the task's limit of {}",
                          m_task.limits.max_launches),
              "(unsigned long long)total_launches + 1ULL");
    line("    total_launches += 1;");
    line(
        fmt::format("    {}_launch* out = &plan->launches[plan->launch_count++];", m_sig.function));
    line(fmt::format("    out->site = {};", index));
    line("    for (int d = 0; d < 3; ++d)");
    line("        out->grid[d] = out->block[d] = 0;");
    line("    out->smem = 0;");
    for (size_t a = library_operand_roles(step.op).size(); a < max_args(); ++a)
        line(fmt::format("    out->arg[{}] = 0;", a));
    step_value(label, "out->algo", step.algo, "algo");
    line("    if (out->algo < 0)");
    refuse_at(label, "algo is %lld; it indexes the library's candidates from 0",
              "(long long)out->algo");
    line("    out->workspace_bytes = 0;");
    if (step.op == LibraryOp::matmul)
        write_matmul(label, step);
    else
        write_conv(label, step);
    line("}");
}

void ResolveWriter::write_matmul(const std::string& label, const PlanLibraryStep& step)
{
    const PlanMatmul& mm = step.matmul;
    line(fmt::format("    {}_matmul* mm = &out->matmul;", m_sig.function));
    line(fmt::format("    {}_conv* unused_conv = &out->conv;", m_sig.function));
    line("    *unused_conv = {};");
    const std::pair<const char*, const Expr*> dims[] = {
        {"m", &mm.m}, {"n", &mm.n}, {"k", &mm.k}, {"batch", &mm.batch}};
    for (const auto& [field, expr] : dims)
        step_value(label, fmt::format("mm->{}", field), *expr, field);
    for (const auto& [field, expr] : dims) {
        line(fmt::format("    if (mm->{} < 1)", field));
        refuse_at(label, fmt::format("{} is %lld; a matmul needs it at least 1", field),
                  fmt::format("(long long)mm->{}", field));
        line(fmt::format("    if (mm->{} > INT64_C(2147483647))", field));
        refuse_at(
            label,
            fmt::format(
                "{} is %lld, past 2147483647 (2^31 - 1), the largest size cuBLASLt's kernels take",
                field),
            fmt::format("(long long)mm->{}", field));
    }
    line("    int64_t sizes[4];");
    step_extent(label, "sizes[0]", "multiply(e, mm->m, mm->k)");
    step_extent(label, "sizes[1]", "multiply(e, mm->k, mm->n)");
    step_extent(label, "sizes[2]", "multiply(e, mm->m, mm->n)");
    line("    sizes[3] = sizes[2];");
    const char* roles[] = {"a", "b", "c", "d"};
    for (size_t i = 0; i < 4; ++i) {
        std::string field = fmt::format("stride_{}", roles[i]);
        if (mm.strides[i])
            step_value(label, fmt::format("mm->stride[{}]", i), *mm.strides[i], field);
        else
            line(fmt::format("    mm->stride[{0}] = sizes[{0}];", i));
        line(fmt::format("    if (mm->stride[{}] < 0)", i));
        refuse_at(label, field + " is %lld; strides are at least 0",
                  fmt::format("(long long)mm->stride[{}]", i));
    }
    line("    if (mm->batch > 1 && mm->stride[3] < sizes[3])");
    refuse_at(
        label,
        "stride_d is %lld with batch %lld: the output matrices (%lld elements each) would overlap",
        "(long long)mm->stride[3], (long long)mm->batch, (long long)sizes[3]");
    line("    int64_t extent = 0;");
    for (size_t i = 0; i < 4; ++i) {
        step_extent(
            label, "extent",
            fmt::format("add(e, multiply(e, mm->batch - 1, mm->stride[{0}]), sizes[{0}])", i));
        step_operand(label, step, i, roles[i], "extent");
    }
    step_operand(label, step, 4, "bias", "mm->n");
    step_operand(label, step, 5, "workspace", "");
}

void ResolveWriter::write_conv(const std::string& label, const PlanLibraryStep& step)
{
    const PlanConv& cv = step.conv;
    line(fmt::format("    {}_conv* cv = &out->conv;", m_sig.function));
    line(fmt::format("    {}_matmul* unused_matmul = &out->matmul;", m_sig.function));
    line("    *unused_matmul = {};");
    const std::pair<const char*, const Expr*> counts[] = {
        {"n", &cv.n}, {"c", &cv.c}, {"k", &cv.k}, {"groups", &cv.groups}};
    for (const auto& [field, expr] : counts)
        step_value(label, fmt::format("cv->{}", field), *expr, field);
    for (const auto& [field, expr] : counts) {
        line(fmt::format("    if (cv->{} < 1)", field));
        refuse_at(label, fmt::format("{} is %lld; a conv needs it at least 1", field),
                  fmt::format("(long long)cv->{}", field));
    }
    line("    if (cv->c % cv->groups != 0 || cv->k % cv->groups != 0)");
    refuse_at(label, "groups = %lld must divide both c = %lld and k = %lld",
              "(long long)cv->groups, (long long)cv->c, (long long)cv->k");
    line("    int64_t x_elements = 0, y_elements = 0, w_elements = 0;");
    step_extent(label, "x_elements", "multiply(e, cv->n, cv->c)");
    step_extent(label, "y_elements", "multiply(e, cv->n, cv->k)");
    step_extent(label, "w_elements",
                cv.transposed ? "multiply(e, cv->c, cv->k / cv->groups)"
                              : "multiply(e, cv->k, cv->c / cv->groups)");
    line("    for (int d = 0; d < 3; ++d) {");
    line("        cv->size[d] = cv->kernel[d] = cv->stride[d] = cv->dilation[d] = cv->out[d] = 1;");
    line("        cv->padding[d] = cv->output_padding[d] = 0;");
    line("    }");
    for (size_t d = 0; d < cv.size.size(); ++d) {
        const std::pair<const char*, const std::vector<Expr>*> fields[] = {
            {"size", &cv.size},         {"kernel", &cv.kernel},
            {"stride", &cv.stride},     {"padding", &cv.padding},
            {"dilation", &cv.dilation}, {"output_padding", &cv.output_padding}};
        for (const auto& [field, exprs] : fields)
            step_value(label, fmt::format("cv->{}[{}]", field, d), (*exprs)[d],
                       fmt::format("{}[{}]", field, d));
        line(fmt::format(
            "    if (cv->size[{0}] < 1 || cv->kernel[{0}] < 1 || cv->stride[{0}] < 1 || "
            "cv->dilation[{0}] < 1 || cv->padding[{0}] < 0 || cv->output_padding[{0}] < 0)",
            d));
        refuse_at(
            label,
            fmt::format("dimension {}: size %lld, kernel %lld, stride %lld, dilation %lld must be "
                        "at least 1 "
                        "and padding %lld, output_padding %lld at least 0",
                        d),
            fmt::format(
                "(long long)cv->size[{0}], (long long)cv->kernel[{0}], (long long)cv->stride[{0}], "
                "(long long)cv->dilation[{0}], (long long)cv->padding[{0}], "
                "(long long)cv->output_padding[{0}]",
                d));
        if (cv.transposed) {
            line(fmt::format(
                "    if (cv->output_padding[{0}] >= max2(cv->stride[{0}], cv->dilation[{0}]))", d));
            refuse_at(label,
                      fmt::format("dimension {}: output_padding %lld must be less than stride %lld "
                                  "or dilation %lld",
                                  d),
                      fmt::format("(long long)cv->output_padding[{0}], (long long)cv->stride[{0}], "
                                  "(long long)cv->dilation[{0}]",
                                  d));
        }
        line("    {");
        line(fmt::format("        const int64_t reach = add(e, multiply(e, cv->dilation[{0}], "
                         "cv->kernel[{0}] - 1), "
                         "INT64_C(1));",
                         d));
        // (size - 1) * stride - 2 * padding + reach - 1 + output_padding + 1, or
        // (size + 2 * padding - reach) / stride + 1, in checked arithmetic.
        if (cv.transposed)
            line(fmt::format(
                "        cv->out[{0}] = add(e, subtract(e, multiply(e, cv->size[{0}] - 1, "
                "cv->stride[{0}]), multiply(e, INT64_C(2), cv->padding[{0}])), "
                "add(e, reach - 1, cv->output_padding[{0}] + 1));",
                d));
        else
            line(fmt::format(
                "        cv->out[{0}] = add(e, divide(e, subtract(e, add(e, cv->size[{0}], "
                "multiply(e, INT64_C(2), cv->padding[{0}])), reach), cv->stride[{0}]), "
                "INT64_C(1));",
                d));
        line("        if (e->failed)");
        line(fmt::format("            return refuse_with(\"%s at %s: the operand's extent "
                         "overflows 64 bits\", {}, "
                         "at());",
                         c_string(label)));
        line(fmt::format(
            "        if ({}cv->out[{}] < 1)",
            cv.transposed ? "" : fmt::format("cv->size[{0}] + 2 * cv->padding[{0}] < reach || ", d),
            d));
        line(fmt::format(
            "            return refuse_with(\"%s at %s: dimension {0}: the output would be empty "
            "(size %lld, kernel %lld, dilation %lld, padding %lld, stride %lld)\", {1}, at(), "
            "(long long)cv->size[{0}], (long long)cv->kernel[{0}], (long long)cv->dilation[{0}], "
            "(long long)cv->padding[{0}], (long long)cv->stride[{0}]);",
            d, c_string(label)));
        line("    }");
        step_extent(label, "x_elements", fmt::format("multiply(e, x_elements, cv->size[{}])", d));
        step_extent(label, "y_elements", fmt::format("multiply(e, y_elements, cv->out[{}])", d));
        step_extent(label, "w_elements", fmt::format("multiply(e, w_elements, cv->kernel[{}])", d));
    }
    step_operand(label, step, 0, "x", "x_elements");
    step_operand(label, step, 1, "w", "w_elements");
    step_operand(label, step, 2, "y", "y_elements");
    step_operand(label, step, 3, "workspace", "");
}

} // namespace kforge
