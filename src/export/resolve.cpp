// generate_resolve_code(): the exported plan's arithmetic as plain host C++.
//
// The generated kforge_<task>_resolve() walks the same steps, in the same order, as kforge's
// check_shape() (symbol bounds, constraints, tensor extents and element counts) and resolve_plan()
// (scratch sizes and the scratch limit, then each launch's repeat count, grid, block, threads,
// shared memory and arguments, repeats unrolled and swaps applied), so it refuses what kforge
// refuses with the same reason, and otherwise yields the same numbers. The CPU test compiles it
// with g++ and compares it with resolve_plan() on every test and bench shape of every bundled task.
//
// Scratch buffers are carved from one workspace, each at a 256-byte aligned offset (kforge gives
// every buffer a 256-byte aligned address); the workspace itself must be 256-byte aligned.
#include <algorithm>

#include <fmt/format.h>

#include "export/resolve_writer.hpp"
#include "util/text.hpp"

namespace kforge {

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

std::string ResolveWriter::write()
{
    std::string detail = m_sig.function + "_detail";
    m_out += "// ---- host: the launch plan's arithmetic (no CUDA needed) ----\n";
    m_out += "#include <stdarg.h>\n#include <stddef.h>\n#include <stdint.h>\n#include "
             "<stdio.h>\n\n";
    m_out += generate_helper_code(m_sig.function, detail);
    write_structs();
    m_out += fmt::format("\nnamespace {} {{\nnamespace {{\n\n", detail);
    m_out += fmt::format(
        "// Where the public functions keep a plan: one per thread, no allocation per call.\n"
        "{0}_plan* plan_storage()\n{{\n    static thread_local {0}_plan plan;\n"
        "    return &plan;\n}}\n\n",
        m_sig.function);
    write_resolve_body();
    m_out += fmt::format("\n}} // namespace\n}} // namespace {}\n", detail);
    write_public_functions(detail);
    return m_out;
}

size_t ResolveWriter::max_args() const
{
    size_t most = 1;
    for (const auto& launch : m_plan.launches)
        most = std::max(most, launch.library ? library_operand_roles(launch.library->op).size()
                                             : launch.args.size());
    return most;
}

std::string ResolveWriter::site_name(size_t index) const
{
    const PlanLaunch& launch = m_plan.launches[index];
    return launch.library ? std::string(library_op_name(launch.library->op)) : launch.kernel;
}

void ResolveWriter::write_structs()
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
        step_fields = fmt::format(
            "\n    int64_t algo;            // a library step: its index into the allowed "
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

std::string ResolveWriter::resolve_parameters() const
{
    std::vector<std::string> params;
    for (const auto& size : m_sig.sizes)
        params.push_back("int64_t sym_" + size.symbol);
    params.push_back(m_sig.function + "_plan* plan");
    return join(params, ", ");
}

void ResolveWriter::write_resolve_body()
{
    m_out += fmt::format("int resolve_plan({})\n{{\n", resolve_parameters());
    line("Eval state;");
    line("Eval* e = &state;");
    line("last_error_text()[0] = '\\0';");
    line("plan->launch_count = 0;");
    if (has_library_steps(m_plan))
        line(fmt::format(
            "int64_t tensor_elements[{}] = {{0}}; // per tensor argument (library steps' bounds)",
            m_task.args.size()));
    write_symbol_checks();
    write_context();
    for (const auto& derived : m_sig.derived) {
        line(fmt::format("const int64_t sym_{} = {};", derived.name, cpp(derived.value)));
        if (expr_can_fail(derived.value))
            fail_if_failed(
                fmt::format("derived symbol '{}' = '{}'", derived.name, derived.value.text()),
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
void ResolveWriter::fail_if_failed(const std::string& where, bool with_context)
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

void ResolveWriter::write_public_functions(const std::string& detail)
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

std::string generate_resolve_code(const LauncherSource& source)
{
    return ResolveWriter(source).write();
}

} // namespace kforge
