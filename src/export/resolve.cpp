// generate_resolve_code(): the exported plan's arithmetic as plain host C++.
//
// The generated kforge_<task>_resolve() walks the same steps, in the same order, as kforge's
// check_shape() (symbol bounds, constraints, tensor extents and element counts) and resolve_plan()
// (scratch sizes and the scratch limit, then each launch's repeat count, grid, block, threads,
// shared memory and arguments, repeats unrolled and swaps applied), so it refuses what kforge
// refuses with the same reason, and otherwise yields the same numbers. The CPU test compiles it with
// g++ and compares it with resolve_plan() on every test and bench shape of every bundled task.
//
// Scratch buffers are carved from one workspace, each at a 256-byte aligned offset (kforge gives
// every buffer a 256-byte aligned address); the workspace itself must be 256-byte aligned.
#include <algorithm>

#include <fmt/format.h>

#include "core/plan_check.hpp"
#include "export/host_code.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr int64_t k_scratch_alignment = 256;

} // namespace

int64_t plan_buffer_index(const Task& task, const Plan& plan, const std::string& name)
{
    for (size_t i = 0; i < task.args.size(); ++i)
        if (task.args[i].name == name)
            return static_cast<int64_t>(i);
    for (size_t s = 0; s < plan.scratch.size(); ++s)
        if (plan.scratch[s].name == name)
            return static_cast<int64_t>(task.args.size() + s);
    throw PlanError(fmt::format("internal: '{}' is not a buffer", name));
}

namespace {

class ResolveWriter
{
public:
    explicit ResolveWriter(const LauncherSource& source)
        : m_task(source.task), m_plan(source.plan), m_sig(source.signature)
    {
        for (const auto& [name, values] : m_plan.params)
            m_params.insert(name);
    }

    std::string write()
    {
        std::string detail = m_sig.function + "_detail";
        m_out += "// ---- host: the launch plan's arithmetic (no CUDA needed) ----\n";
        m_out += "#include <stdarg.h>\n#include <stddef.h>\n#include <stdint.h>\n#include "
                 "<stdio.h>\n\n";
        m_out += generate_helper_code(m_sig.function, detail);
        write_structs();
        m_out += fmt::format("\nnamespace {} {{\nnamespace {{\n\n", detail);
        m_out += fmt::format("// Where the public functions keep a plan: one per thread, no allocation per call.\n"
                             "{0}_plan* plan_storage()\n{{\n    static thread_local {0}_plan plan;\n"
                             "    return &plan;\n}}\n\n",
                             m_sig.function);
        write_resolve_body();
        m_out += fmt::format("\n}} // namespace\n}} // namespace {}\n", detail);
        write_public_functions(detail);
        return m_out;
    }

private:
    std::string cpp(const Expr& expr) const { return expr_to_cpp(expr, m_params); }

    void line(const std::string& text) { m_out += "    " + text + "\n"; }

    size_t max_args() const
    {
        size_t most = 1;
        for (const auto& launch : m_plan.launches)
            most = std::max(most, launch.library ? library_operand_roles(launch.library->op).size()
                                                 : launch.args.size());
        return most;
    }

    std::string site_name(size_t index) const
    {
        const PlanLaunch& launch = m_plan.launches[index];
        return launch.library ? std::string(library_op_name(launch.library->op)) : launch.kernel;
    }

    void write_structs()
    {
        std::vector<std::string> sites;
        for (size_t i = 0; i < m_plan.launches.size(); ++i)
            sites.push_back(fmt::format("{} = {}{}", i, site_name(i),
                                        m_plan.launches[i].library ? " (library step)" : ""));
        const std::string& f = m_sig.function;
        std::string step_fields;
        if (has_library_steps(m_plan)) {
            m_out += fmt::format(R"cpp(
// A library step's numbers at these sizes, as kforge resolves them (docs/library-steps.md).
struct {0}_matmul
{{
    int64_t m, n, k, batch; // row-major: D[i] (m x n) = op(A[i]) (m x k) @ op(B[i]) (k x n)
    int64_t stride[4];      // a, b, c, d: elements between the matrices of a batch
}};

struct {0}_conv
{{
    int64_t n, c, k, groups; // batch, input and output channels, groups
    // Per spatial dimension; those past the step's own have size, kernel, stride, dilation and
    // out 1 and no padding.
    int64_t size[3], kernel[3], stride[3], padding[3], dilation[3], output_padding[3], out[3];
}};
)cpp",
                                 f);
            step_fields = fmt::format("\n    int64_t algo;            // a library step: its index into the allowed "
                                      "algorithms\n    int64_t workspace_bytes; // a library step: its workspace "
                                      "buffer's bytes (0: none)\n    {0}_matmul matmul;\n    {0}_conv conv;",
                                      f);
        }
        m_out += fmt::format(R"cpp(
// One launch of the resolved plan (repeats unrolled, swaps applied): a kernel or a library step.
struct {0}_launch
{{
    int32_t site;      // the plan's launch it comes from: {1}
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t smem;     // dynamic shared memory, bytes
    int64_t arg[{2}];  // per kernel argument: a buffer (the task's arguments by position, then the
                       // scratch buffers) or an integer value; 0 for floating-point scalars. A
                       // library step's operands in the library's order, -1 where it has none{7}
}};

// The plan for one set of sizes.
struct {0}_plan
{{
    int32_t launch_count;
    {0}_launch launches[{3}];
    int64_t scratch_bytes[{4}];
    int64_t scratch_offset[{4}]; // from the workspace's start, each a multiple of {5}
    int64_t workspace_bytes;
    int64_t value[{6}];          // integer scalar arguments as the task defines them
}};
)cpp",
                             f, join(sites, ", "), max_args(), m_task.limits.max_launches,
                             std::max<size_t>(1, m_plan.scratch.size()), k_scratch_alignment,
                             m_task.args.size(), step_fields);
    }

    std::string resolve_parameters() const
    {
        std::vector<std::string> params;
        for (const auto& size : m_sig.sizes)
            params.push_back("int64_t sym_" + size.symbol);
        params.push_back(m_sig.function + "_plan* plan");
        return join(params, ", ");
    }

    void write_resolve_body()
    {
        m_out += fmt::format("int resolve_plan({})\n{{\n", resolve_parameters());
        line("Eval state;");
        line("Eval* e = &state;");
        line("last_error_text()[0] = '\\0';");
        line("plan->launch_count = 0;");
        if (has_library_steps(m_plan))
            line(fmt::format("int64_t tensor_elements[{}] = {{0}}; // per tensor argument (library steps' bounds)",
                             m_task.args.size()));
        write_symbol_checks();
        write_context();
        for (const auto& derived : m_sig.derived) {
            line(fmt::format("const int64_t sym_{} = {};", derived.name, cpp(derived.value)));
            if (expr_can_fail(derived.value))
                fail_if_failed(fmt::format("derived symbol '{}' = '{}'", derived.name,
                                       derived.value.text()),
                           false);
        }
        write_constraints();
        write_tensor_extents();
        write_scalar_values();
        write_scratch();
        for (size_t i = 0; i < m_plan.launches.size(); ++i)
            write_launch(i);
        line("if (plan->launch_count == 0)");
        line("    return refuse_with(\"the plan launches no kernel at %s (every repeat is 0)\", "
             "at());");
        line("return 0;");
        m_out += "}\n";
    }

    // `if (e->failed) return refuse(e, "<where>[ at <sizes>]");`
    void fail_if_failed(const std::string& where, bool with_context)
    {
        if (with_context) {
            line("if (e->failed) {");
            line(fmt::format("    snprintf(where, sizeof where, \"%s at %s\", {}, at());",
                             c_string(where)));
            line("    return refuse(e, where);");
            line("}");
        } else {
            line(fmt::format("if (e->failed) return refuse(e, {});", c_string(where)));
        }
    }

    void write_symbol_checks()
    {
        for (const auto& symbol : m_task.symbols) {
            if (!m_sig.symbols.count(symbol.name))
                continue;
            std::string v = "sym_" + symbol.name;
            line(fmt::format("if ({} < INT64_C({}))", v, symbol.min));
            line(fmt::format("    return refuse_with(\"{}=%lld is below its minimum {}\", (long "
                             "long){});",
                             symbol.name, symbol.min, v));
            if (symbol.max) {
                line(fmt::format("if ({} > INT64_C({}))", v, *symbol.max));
                line(fmt::format("    return refuse_with(\"{}=%lld is above its maximum {}\", "
                                 "(long long){});",
                                 symbol.name, *symbol.max, v));
            }
            if (symbol.multiple_of > 1) {
                line(fmt::format("if ({} % INT64_C({}) != 0)", v, symbol.multiple_of));
                line(fmt::format("    return refuse_with(\"{}=%lld is not a multiple of {}\", "
                                 "(long long){});",
                                 symbol.name, symbol.multiple_of, v));
            }
        }
    }

    // `at`: "M=5,N=7 with BLOCK=128", the context kforge's messages carry.
    void write_context()
    {
        std::vector<std::string> formats;
        std::vector<std::string> values;
        for (const auto& size : m_sig.sizes) {
            formats.push_back(size.symbol + "=%lld");
            values.push_back("(long long)sym_" + size.symbol);
        }
        std::vector<std::string> params;
        for (const auto& name : m_params) {
            params.push_back(name + "=%lld");
            values.push_back(fmt::format("(long long)({})", name));
        }
        std::string format = join(formats, ",") + " with " +
                             (params.empty() ? std::string("(no params)") : join(params, " "));
        // Formatted only when a refusal needs it: a successful call pays nothing for messages.
        line("char at_text[256];");
        line("char where[512];");
        line("(void)where;");
        line("const auto at = [&]() -> const char* {");
        line(fmt::format("    snprintf(at_text, sizeof at_text, {}{});", c_string(format),
                         values.empty() ? "" : ", " + join(values, ", ")));
        line("    return at_text;");
        line("};");
    }

    void write_constraints()
    {
        for (const auto& constraint : m_task.constraints) {
            auto names = constraint.names();
            if (!std::all_of(names.begin(), names.end(),
                             [&](const std::string& n) { return m_sig.symbols.count(n) > 0; }))
                continue;
            line("{");
            line(fmt::format("    const int64_t holds = {};", cpp(constraint)));
            std::string quoted = c_string("'" + constraint.text() + "'");
            if (expr_can_fail(constraint))
                line(fmt::format("    if (e->failed) return refuse(e, {});",
                                 c_string("constraint '" + constraint.text() + "'")));
            line("    if (holds == 0)");
            line(fmt::format("        return refuse_with(\"constraint %s does not hold for %s\", "
                             "{}, at());",
                             quoted));
            line("}");
        }
    }

    void write_tensor_extents()
    {
        for (const auto& arg : m_task.args) {
            if (!arg.is_tensor)
                continue;
            line(fmt::format("{{ // {}", arg.name));
            line(fmt::format("    int64_t dims[{}];", std::max<size_t>(1, arg.shape.size())));
            for (size_t d = 0; d < arg.shape.size(); ++d) {
                line(fmt::format("    dims[{}] = {};", d, cpp(arg.shape[d])));
                if (expr_can_fail(arg.shape[d]))
                    line(fmt::format("    if (e->failed) return refuse(e, {});",
                                     c_string(fmt::format("dimension {} of '{}' ({})", d,
                                                          arg.name, arg.shape[d].text()))));
                line(fmt::format("    if (dims[{}] < 1)", d));
                line(fmt::format("        return refuse_with(\"dimension {} of '{}' (%s) is %lld "
                                 "for %s; sizes must be at least 1\", {}, (long long)dims[{}], "
                                 "at());",
                                 d, arg.name, c_string(arg.shape[d].text()), d));
            }
            line("    (void)dims;");
            line("    int64_t count = 1;");
            for (size_t d = 0; d < arg.shape.size(); ++d)
                line(fmt::format("    count = multiply(e, count, dims[{}]);", d));
            line("    (void)count;");
            if (has_library_steps(m_plan))
                line(fmt::format("    tensor_elements[{}] = count;", &arg - m_task.args.data()));
            line(fmt::format("    if (e->failed) return refuse_with(\"the element count of '{}' "
                             "overflows 64 bits\");",
                             arg.name));
            line("}");
        }
    }

    void write_scalar_values()
    {
        for (size_t i = 0; i < m_task.args.size(); ++i) {
            const ArgSpec& arg = m_task.args[i];
            if (arg.is_tensor || dtype_is_float(arg.dtype)) {
                line(fmt::format("plan->value[{}] = 0;", i));
                continue;
            }
            line(fmt::format("plan->value[{}] = {};", i, cpp(arg.value)));
            if (expr_can_fail(arg.value))
                fail_if_failed(fmt::format("argument '{}' = '{}'", arg.name, arg.value.text()), true);
        }
    }

    void write_scratch()
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
    void refuse_at(const std::string& label, const std::string& format_tail,
                   const std::string& values)
    {
        line(fmt::format("        return refuse_with(\"%s at %s: {}\", {}, at(){});", format_tail,
                         c_string(label), values.empty() ? "" : ", " + values));
    }

    void write_launch(size_t index)
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
            write_dim(label, "block", d, launch.block[d],
                      d == 2 ? k_max_block_z : k_max_block_xy);
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

    // ---- library steps: resolve_library_step() (core/library_step.cpp), step by step ----

    // `target = expr;`, refusing as kforge does when the evaluation fails.
    void step_value(const std::string& label, const std::string& target, const Expr& expr,
                    const std::string& field)
    {
        line(fmt::format("    {} = {};", target, cpp(expr)));
        if (expr_can_fail(expr))
            fail_site(label, replace_all(fmt::format("{} '{}'", field, expr.text()), "%", "%%"));
    }

    // `target = a op b` with the extent's overflow refused as kforge refuses it.
    void step_extent(const std::string& label, const std::string& target, const std::string& value)
    {
        line(fmt::format("    {} = {};", target, value));
        line("    if (e->failed)");
        refuse_at(label, "the operand's extent overflows 64 bits", "");
    }

    // One operand: where it is in the buffer table, and that the step stays inside it.
    void step_operand(const std::string& label, const PlanLibraryStep& step, size_t slot,
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
            DType dtype = role == "workspace" ? DType::u8 : library_operand_dtype(m_task, step, operand->name);
            available = fmt::format("plan->scratch_bytes[{}] / INT64_C({})",
                                    index - static_cast<int64_t>(m_task.args.size()), dtype_size(dtype));
        }
        bool written = role == "d" || role == "y" || role == "workspace";
        line("    {");
        line(fmt::format("        const int64_t available = {};", available));
        line(fmt::format("        const int64_t used = {};", role == "workspace" ? "available" : used));
        line("        if (used > available)");
        line(fmt::format("            return refuse_with(\"%s at %s: {} '{}' would be {} over %lld elements, but "
                         "it holds %lld\", {}, at(), (long long)used, (long long)available);",
                         role, operand->name, written ? "written" : "read", c_string(label)));
        if (role == "workspace")
            line("        out->workspace_bytes = available;");
        line("    }");
        line(fmt::format("    out->arg[{}] = {}; // {}", slot, index, operand->name));
    }

    void write_step(size_t index)
    {
        const PlanLibraryStep& step = *m_plan.launches[index].library;
        std::string label = fmt::format("launches[{}] ({})", index, site_name(index));
        line(fmt::format("{{ // {}: a library step", label));
        line(fmt::format("    if (total_launches + 1 > INT64_C({}))", m_task.limits.max_launches));
        refuse_at(label,
                  fmt::format("%llu launches in all, over the task's limit of {}", m_task.limits.max_launches),
                  "(unsigned long long)total_launches + 1ULL");
        line("    total_launches += 1;");
        line(fmt::format("    {}_launch* out = &plan->launches[plan->launch_count++];", m_sig.function));
        line(fmt::format("    out->site = {};", index));
        line("    for (int d = 0; d < 3; ++d)");
        line("        out->grid[d] = out->block[d] = 0;");
        line("    out->smem = 0;");
        for (size_t a = library_operand_roles(step.op).size(); a < max_args(); ++a)
            line(fmt::format("    out->arg[{}] = 0;", a));
        step_value(label, "out->algo", step.algo, "algo");
        line("    if (out->algo < 0)");
        refuse_at(label, "algo is %lld; it indexes the library's candidates from 0", "(long long)out->algo");
        line("    out->workspace_bytes = 0;");
        if (step.op == LibraryOp::matmul)
            write_matmul(label, step);
        else
            write_conv(label, step);
        line("}");
    }

    void write_matmul(const std::string& label, const PlanLibraryStep& step)
    {
        const PlanMatmul& mm = step.matmul;
        line(fmt::format("    {}_matmul* mm = &out->matmul;", m_sig.function));
        line(fmt::format("    {}_conv* unused_conv = &out->conv;", m_sig.function));
        line("    *unused_conv = {};");
        const std::pair<const char*, const Expr*> dims[] = {{"m", &mm.m}, {"n", &mm.n}, {"k", &mm.k},
                                                            {"batch", &mm.batch}};
        for (const auto& [field, expr] : dims)
            step_value(label, fmt::format("mm->{}", field), *expr, field);
        for (const auto& [field, expr] : dims) {
            line(fmt::format("    if (mm->{} < 1)", field));
            refuse_at(label, fmt::format("{} is %lld; a matmul needs it at least 1", field),
                      fmt::format("(long long)mm->{}", field));
            line(fmt::format("    if (mm->{} > INT64_C(2147483647))", field));
            refuse_at(label,
                      fmt::format("{} is %lld, past 2147483647 (2^31 - 1), the largest size cuBLASLt's kernels take",
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
            refuse_at(label, field + " is %lld; strides are at least 0", fmt::format("(long long)mm->stride[{}]", i));
        }
        line("    if (mm->batch > 1 && mm->stride[3] < sizes[3])");
        refuse_at(label, "stride_d is %lld with batch %lld: the output matrices (%lld elements each) would overlap",
                  "(long long)mm->stride[3], (long long)mm->batch, (long long)sizes[3]");
        line("    int64_t extent = 0;");
        for (size_t i = 0; i < 4; ++i) {
            step_extent(label, "extent",
                        fmt::format("add(e, multiply(e, mm->batch - 1, mm->stride[{0}]), sizes[{0}])", i));
            step_operand(label, step, i, roles[i], "extent");
        }
        step_operand(label, step, 4, "bias", "mm->n");
        step_operand(label, step, 5, "workspace", "");
    }

    void write_conv(const std::string& label, const PlanLibraryStep& step)
    {
        const PlanConv& cv = step.conv;
        line(fmt::format("    {}_conv* cv = &out->conv;", m_sig.function));
        line(fmt::format("    {}_matmul* unused_matmul = &out->matmul;", m_sig.function));
        line("    *unused_matmul = {};");
        const std::pair<const char*, const Expr*> counts[] = {{"n", &cv.n}, {"c", &cv.c}, {"k", &cv.k},
                                                              {"groups", &cv.groups}};
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
        step_extent(label, "w_elements", cv.transposed ? "multiply(e, cv->c, cv->k / cv->groups)"
                                                       : "multiply(e, cv->k, cv->c / cv->groups)");
        line("    for (int d = 0; d < 3; ++d) {");
        line("        cv->size[d] = cv->kernel[d] = cv->stride[d] = cv->dilation[d] = cv->out[d] = 1;");
        line("        cv->padding[d] = cv->output_padding[d] = 0;");
        line("    }");
        for (size_t d = 0; d < cv.size.size(); ++d) {
            const std::pair<const char*, const std::vector<Expr>*> fields[] = {
                {"size", &cv.size},       {"kernel", &cv.kernel},     {"stride", &cv.stride},
                {"padding", &cv.padding}, {"dilation", &cv.dilation}, {"output_padding", &cv.output_padding}};
            for (const auto& [field, exprs] : fields)
                step_value(label, fmt::format("cv->{}[{}]", field, d), (*exprs)[d], fmt::format("{}[{}]", field, d));
            line(fmt::format("    if (cv->size[{0}] < 1 || cv->kernel[{0}] < 1 || cv->stride[{0}] < 1 || "
                             "cv->dilation[{0}] < 1 || cv->padding[{0}] < 0 || cv->output_padding[{0}] < 0)",
                             d));
            refuse_at(label,
                      fmt::format("dimension {}: size %lld, kernel %lld, stride %lld, dilation %lld must be at least 1 "
                                  "and padding %lld, output_padding %lld at least 0",
                                  d),
                      fmt::format("(long long)cv->size[{0}], (long long)cv->kernel[{0}], (long long)cv->stride[{0}], "
                                  "(long long)cv->dilation[{0}], (long long)cv->padding[{0}], "
                                  "(long long)cv->output_padding[{0}]",
                                  d));
            if (cv.transposed) {
                line(fmt::format("    if (cv->output_padding[{0}] >= max2(cv->stride[{0}], cv->dilation[{0}]))", d));
                refuse_at(label,
                          fmt::format("dimension {}: output_padding %lld must be less than stride %lld or dilation %lld",
                                      d),
                          fmt::format("(long long)cv->output_padding[{0}], (long long)cv->stride[{0}], "
                                      "(long long)cv->dilation[{0}]",
                                      d));
            }
            line("    {");
            line(fmt::format("        const int64_t reach = add(e, multiply(e, cv->dilation[{0}], cv->kernel[{0}] - 1), "
                             "INT64_C(1));",
                             d));
            // (size - 1) * stride - 2 * padding + reach - 1 + output_padding + 1, or
            // (size + 2 * padding - reach) / stride + 1, in checked arithmetic.
            if (cv.transposed)
                line(fmt::format("        cv->out[{0}] = add(e, subtract(e, multiply(e, cv->size[{0}] - 1, "
                                 "cv->stride[{0}]), multiply(e, INT64_C(2), cv->padding[{0}])), "
                                 "add(e, reach - 1, cv->output_padding[{0}] + 1));",
                                 d));
            else
                line(fmt::format("        cv->out[{0}] = add(e, divide(e, subtract(e, add(e, cv->size[{0}], "
                                 "multiply(e, INT64_C(2), cv->padding[{0}])), reach), cv->stride[{0}]), INT64_C(1));",
                                 d));
            line("        if (e->failed)");
            line(fmt::format("            return refuse_with(\"%s at %s: the operand's extent overflows 64 bits\", {}, "
                             "at());",
                             c_string(label)));
            line(fmt::format("        if ({}cv->out[{}] < 1)",
                             cv.transposed ? "" : fmt::format("cv->size[{0}] + 2 * cv->padding[{0}] < reach || ", d),
                             d));
            line(fmt::format("            return refuse_with(\"%s at %s: dimension {0}: the output would be empty "
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

    void fail_site(const std::string& label, const std::string& what)
    {
        line("    if (e->failed) {");
        line(fmt::format("        snprintf(where, sizeof where, \"%s at %s: {}\", {}, at());", what,
                         c_string(label)));
        line("        return refuse(e, where);");
        line("    }");
    }

    void write_dim(const std::string& label, const char* kind, int d, const Expr& expr,
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
    void write_arg(const std::string& label, const PlanLaunch& launch, size_t a)
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
                where, dtype_name(dtype), c_string(label), c_string(arg.text),
                c_string(arg.text)));
        }
        line(fmt::format("            {} = v; // {}", slot, arg.text));
        line("        }");
    }

    void write_public_functions(const std::string& detail)
    {
        const std::string& f = m_sig.function;
        std::vector<std::string> names;
        for (const auto& size : m_sig.sizes)
            names.push_back("sym_" + size.symbol);
        names.push_back("plan");
        m_out += fmt::format(R"cpp(
// The plan for these sizes (what the launcher runs); 0, or -1 with the reason in {0}_last_error().
extern "C" int {0}_resolve({1})
{{
    return {2}::resolve_plan({3});
}}
)cpp",
                             f, resolve_parameters(), detail, join(names, ", "));

        std::vector<std::string> params;
        std::vector<std::string> conversions;
        std::vector<std::string> arguments;
        for (const auto& size : m_sig.sizes) {
            params.push_back(fmt::format("{} {}", c_type(size.dtype), size.name));
            arguments.push_back(fmt::format("(int64_t){}", size.name));
            if (size.dtype == DType::u64)
                conversions.push_back(fmt::format(
                    "    if ({0} > (uint64_t)INT64_MAX) {{\n        {1}::refuse_with(\"{0}=%llu "
                    "is too large\", (unsigned long long){0});\n        return SIZE_MAX;\n    }}\n",
                    size.name, detail));
        }
        arguments.push_back("plan");
        m_out += fmt::format(R"cpp(
// The bytes of workspace kforge_{0}() needs for these sizes (0 when the plan has no scratch);
// SIZE_MAX when the sizes are refused, with the reason in {1}_last_error().
extern "C" size_t {1}_workspace_bytes({2})
{{
{3}    {1}_plan* plan = {4}::plan_storage();
    if ({1}_resolve({5}) != 0)
        return SIZE_MAX;
    return (size_t)plan->workspace_bytes;
}}
)cpp",
                             m_task.name, f, join(params, ", "), join(conversions, ""), detail,
                             join(arguments, ", "));
    }

    const Task& m_task;
    const Plan& m_plan;
    const LauncherSignature& m_sig;
    std::set<std::string> m_params;
    std::string m_out;
};

} // namespace

std::string generate_resolve_code(const LauncherSource& source)
{
    return ResolveWriter(source).write();
}

} // namespace kforge
