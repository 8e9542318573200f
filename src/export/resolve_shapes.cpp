// ResolveWriter, the sizes: the generated resolve_plan() checks symbol bounds, derived symbols'
// context, constraints, tensor extents and scalar arguments as check_shape() does.
#include <algorithm>

#include <fmt/format.h>

#include "export/resolve_writer.hpp"
#include "util/text.hpp"

namespace kforge {

void ResolveWriter::write_symbol_checks()
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
void ResolveWriter::write_context()
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

void ResolveWriter::write_constraints()
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

void ResolveWriter::write_tensor_extents()
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
                                 c_string(fmt::format("dimension {} of '{}' ({})", d, arg.name,
                                                      arg.shape[d].text()))));
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

void ResolveWriter::write_scalar_values()
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

} // namespace kforge
