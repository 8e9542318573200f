// ResolveWriter, the launches: scratch sizes and the scratch limit, then each kernel launch's
// repeat count, grid, block, shared memory and arguments, as resolve_plan() binds them.
#include <algorithm>

#include <fmt/format.h>

#include "export/resolve_writer.hpp"
#include "util/text.hpp"

namespace kforge {

void ResolveWriter::write_scratch()
{
    line("int64_t scratch_total = 0;");
    line("int64_t workspace_end = 0;");
    for (size_t s = 0; s < m_plan.scratch.size(); ++s) {
        const PlanScratch& scratch = m_plan.scratch[s];
        std::string where = fmt::format("scratch[{}] ({})", s, scratch.name);
        line("{");
        line(fmt::format("    const int64_t bytes = {};", cpp(scratch.bytes)));
        line("    if (e->failed) {");
        line(fmt::format("        snprintf(where, sizeof where, \"%s %s\", {}, at());",
                         c_string(where)));
        line("        return refuse(e, where);");
        line("    }");
        line("    if (bytes < 1)");
        line(fmt::format("        return refuse_with(\"%s: %lld bytes at %s; a scratch buffer "
                         "needs at least 1 byte\", {}, (long long)bytes, at());",
                         c_string(where)));
        line("    scratch_total = add(e, scratch_total, bytes);");
        line("    if (e->failed) return refuse_with(\"scratch: total size overflows\");");
        line(fmt::format("    const int64_t offset = multiply(e, ceil_divide(e, workspace_end, "
                         "INT64_C({0})), INT64_C({0}));",
                         k_scratch_alignment));
        line("    workspace_end = add(e, offset, bytes);");
        line("    if (e->failed) return refuse(e, \"scratch: the workspace size\");");
        line(fmt::format("    plan->scratch_bytes[{}] = bytes;", s));
        line(fmt::format("    plan->scratch_offset[{}] = offset;", s));
        line("}");
    }
    line("plan->workspace_bytes = workspace_end;");
    line("{");
    line(fmt::format("    const int64_t limit = {};", cpp(m_task.limits.max_scratch_bytes)));
    line("    if (e->failed) return refuse(e, \"limits.max_scratch_bytes\");");
    line("    if (scratch_total > limit)");
    line("        return refuse_with(\"scratch: %lld bytes in all at %s, over the task's limit "
         "of %lld bytes\", (long long)scratch_total, at(), (long long)limit);");
    line("}");
    line("int64_t total_launches = 0;");
}

// `label at <sizes>: <what>` for a launch's messages.
void ResolveWriter::refuse_at(const std::string& label, const std::string& format_tail,
                              const std::string& values)
{
    line(fmt::format("        return refuse_with(\"%s at %s: {}\", {}, at(){});", format_tail,
                     c_string(label), values.empty() ? "" : ", " + values));
}

void ResolveWriter::write_launch(size_t index)
{
    const PlanLaunch& launch = m_plan.launches[index];
    if (launch.library) {
        write_step(index);
        return;
    }
    std::string label = fmt::format("launches[{}] ({})", index, launch.kernel);
    line(fmt::format("{{ // {}", label));
    line(fmt::format("    const int64_t repeat = {};",
                     launch.repeat ? cpp(*launch.repeat) : "INT64_C(1)"));
    if (launch.repeat && expr_can_fail(*launch.repeat))
        fail_site(label, "repeat");
    line("    if (repeat < 0)");
    refuse_at(label, "repeat is %lld, which is negative", "(long long)repeat");
    line(fmt::format("    if (repeat > INT64_C({0}) || total_launches + repeat > INT64_C({0}))",
                     m_task.limits.max_launches));
    refuse_at(label,
              fmt::format("%llu launches in all, over the task's limit of {}",
                          m_task.limits.max_launches),
              "(unsigned long long)total_launches + (unsigned long long)repeat");
    line("    total_launches += repeat;");
    line("    int64_t grid[3];");
    line("    int64_t block[3];");
    for (int d = 0; d < 3; ++d) {
        write_dim(label, "grid", d, launch.grid[d], d == 0 ? k_max_grid_x : k_max_grid_yz);
        write_dim(label, "block", d, launch.block[d], d == 2 ? k_max_block_z : k_max_block_xy);
    }
    line(fmt::format("    if (block[0] * block[1] * block[2] > INT64_C({}))",
                     m_task.limits.max_threads_per_block));
    refuse_at(label,
              fmt::format("%lld threads per block, over the limit of {}",
                          m_task.limits.max_threads_per_block),
              "(long long)(block[0] * block[1] * block[2])");
    line(fmt::format("    const int64_t smem = {};", cpp(launch.smem)));
    if (expr_can_fail(launch.smem))
        fail_site(label, "smem");
    line(fmt::format("    if (smem < 0 || smem > INT64_C({}))", m_task.limits.max_dynamic_smem));
    refuse_at(label,
              fmt::format("dynamic shared memory %s = %lld bytes, outside 0..{}",
                          m_task.limits.max_dynamic_smem),
              c_string("'" + launch.smem.text() + "'") + ", (long long)smem");
    if (launch.swap) {
        line(fmt::format("    int64_t swap_first = {};",
                         plan_buffer_index(m_task, m_plan, launch.swap->first)));
        line(fmt::format("    int64_t swap_second = {};",
                         plan_buffer_index(m_task, m_plan, launch.swap->second)));
    }
    line("    for (int64_t iter = 0; iter < repeat; ++iter) {");
    line(fmt::format("        {}_launch* out = &plan->launches[plan->launch_count++];",
                     m_sig.function));
    line(fmt::format("        out->site = {};", index));
    line("        for (int d = 0; d < 3; ++d) {");
    line("            out->grid[d] = (uint32_t)grid[d];");
    line("            out->block[d] = (uint32_t)block[d];");
    line("        }");
    line("        out->smem = (uint32_t)smem;");
    for (size_t a = 0; a < launch.args.size(); ++a)
        write_arg(label, launch, a);
    for (size_t a = launch.args.size(); a < max_args(); ++a)
        line(fmt::format("        out->arg[{}] = 0;", a));
    if (launch.swap) {
        line("        const int64_t swapped = swap_first;");
        line("        swap_first = swap_second;");
        line("        swap_second = swapped;");
    }
    line("    }");
    line("}");
}

void ResolveWriter::fail_site(const std::string& label, const std::string& what)
{
    line("    if (e->failed) {");
    line(fmt::format("        snprintf(where, sizeof where, \"%s at %s: {}\", {}, at());", what,
                     c_string(label)));
    line("        return refuse(e, where);");
    line("    }");
}

void ResolveWriter::write_dim(const std::string& label, const char* kind, int d, const Expr& expr,
                              int64_t max)
{
    line(fmt::format("    {}[{}] = {};", kind, d, cpp(expr)));
    if (expr_can_fail(expr))
        fail_site(label, fmt::format("{}[{}]", kind, d));
    line(fmt::format("    if ({0}[{1}] < 1 || {0}[{1}] > INT64_C({2}))", kind, d, max));
    refuse_at(label, fmt::format("{}[{}] = %s = %lld, outside 1..{}", kind, d, max),
              c_string("'" + expr.text() + "'") + fmt::format(", (long long){}[{}]", kind, d));
}

// One argument of one iteration, as resolve_plan() binds it.
void ResolveWriter::write_arg(const std::string& label, const PlanLaunch& launch, size_t a)
{
    const PlanArg& arg = launch.args[a];
    std::string slot = fmt::format("out->arg[{}]", a);
    const ArgSpec* spec = arg.value ? nullptr : m_task.find_arg(arg.text);
    bool scratch = !arg.value && !spec &&
                   std::any_of(m_plan.scratch.begin(), m_plan.scratch.end(),
                               [&](const PlanScratch& s) { return s.name == arg.text; });
    if ((spec && spec->is_tensor) || scratch) {
        std::string index = std::to_string(plan_buffer_index(m_task, m_plan, arg.text));
        if (launch.swap && arg.text == launch.swap->first)
            index = "swap_first";
        else if (launch.swap && arg.text == launch.swap->second)
            index = "swap_second";
        line(fmt::format("        {} = {}; // {}", slot, index, arg.text));
        return;
    }
    if (spec && dtype_is_float(spec->dtype)) {
        line(fmt::format("        {} = 0; // {}: the caller's value", slot, arg.text));
        return;
    }
    // An integer: an expression argument, a task scalar, or a bare symbol, param or iter.
    DType dtype = arg.value ? arg.dtype : spec ? spec->dtype : DType::i32;
    const Expr value = arg.value ? *arg.value : spec ? spec->value : Expr::parse(arg.text);
    std::string where = fmt::format("args[{}]", a);
    line("        {");
    line(fmt::format("            const int64_t v = {};", cpp(value)));
    if (expr_can_fail(value)) {
        line("            if (e->failed) {");
        line(fmt::format("                snprintf(where, sizeof where, \"%s at %s: {}\", {}, "
                         "at());",
                         where, c_string(label)));
        line("                return refuse(e, where);");
        line("            }");
    }
    auto [low, high] = c_int_range(dtype);
    if (!low.empty()) {
        std::string test = "v < " + low + (high.empty() ? "" : " || v > " + high);
        line(fmt::format("            if ({})", test));
        line(fmt::format(
            "                return refuse_with(\"%s at %s: {}: the value %lld of '%s' does "
            "not fit in {}; pass it as {{\\\"value\\\": \\\"%s\\\", \\\"dtype\\\": "
            "\\\"i64\\\"}}\", {}, at(), (long long)v, {}, {});",
            where, dtype_name(dtype), c_string(label), c_string(arg.text), c_string(arg.text)));
    }
    line(fmt::format("            {} = v; // {}", slot, arg.text));
    line("        }");
}

} // namespace kforge
