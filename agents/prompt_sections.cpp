// Rendering tasks, hardware facts and candidate results as prompt text; see prompt_sections.hpp.
#include "agents/prompt_sections.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "core/dtype.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr size_t k_max_message_chars = 6000;

std::string shape_text(const std::vector<Expr>& shape)
{
    std::vector<std::string> dims;
    for (const auto& dim : shape)
        dims.push_back(dim.text());
    return fmt::format("[{}]", join(dims, ", "));
}

std::string scalar_text(const Json& value)
{
    if (value.is_string())
        return value.get<std::string>();
    if (value.is_number_float())
        return fmt::format("{:.4g}", value.get<double>());
    return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void flatten(const Json& value, const std::string& prefix, std::vector<std::string>& lines, size_t max_lines)
{
    if (lines.size() >= max_lines)
        return;
    if (value.is_object()) {
        for (const auto& [key, item] : value.items())
            flatten(item, prefix.empty() ? key : prefix + "." + key, lines, max_lines);
        return;
    }
    std::string text = scalar_text(value);
    if (text.size() > 200) {
        text.resize(200); // not substr() + "...": GCC 12 misreads that as out of bounds (-Warray-bounds)
        text += "...";
    }
    lines.push_back(fmt::format("- {}: {}", prefix, text));
}

double json_number(const Json& object, const char* key)
{
    if (object.is_object() && object.contains(key) && object[key].is_number())
        return object[key].get<double>();
    return 0;
}

} // namespace

std::string describe_args(const Task& task)
{
    std::vector<std::string> lines;
    for (const auto& arg : task.args) {
        std::string cuda(dtype_cuda_name(arg.dtype));
        if (!arg.is_tensor) {
            lines.push_back(fmt::format("- {}: {} scalar = {} (`{} {}`)", arg.name, dtype_name(arg.dtype),
                                        arg.value.text(), cuda, arg.name));
            continue;
        }
        bool in = arg.intent == Intent::in;
        std::string role = in ? "input, must not be modified" : arg.intent == Intent::out ? "output" : "input and output";
        std::string line = fmt::format("- {}: {} tensor {}, row-major, {} (`{}{}* {}`)", arg.name, dtype_name(arg.dtype),
                                       shape_text(arg.shape), role, in ? "const " : "", cuda, arg.name);
        if (arg.from.kind != ProgramSlot::Kind::none)
            line += "; " + describe_program_slot(arg.from) + concrete_dims(task, arg);
        lines.push_back(line);
    }
    return join(lines, "\n");
}

std::string describe_program_slot(const ProgramSlot& slot)
{
    switch (slot.kind) {
    case ProgramSlot::Kind::input: return fmt::format("the program's input {} (get_inputs()[{}])", slot.index, slot.index);
    case ProgramSlot::Kind::param: return fmt::format("the model's `{}`", slot.key);
    case ProgramSlot::Kind::output:
        return slot.index == 0 ? "what forward() returns (its first output if a tuple)"
                               : fmt::format("forward()'s output {}", slot.index);
    case ProgramSlot::Kind::none: break;
    }
    return "";
}

std::string concrete_dims(const Task& task, const ArgSpec& arg)
{
    std::vector<std::string> parts;
    for (const auto& shape : task.bench) {
        try {
            ExprScope scope = task.scope_for(shape);
            std::vector<std::string> dims;
            for (const auto& dim : arg.shape)
                dims.push_back(std::to_string(dim.eval_int(scope)));
            parts.push_back(fmt::format("[{}]", join(dims, ", ")));
        } catch (const ExprError&) {
            return "";
        }
    }
    if (parts.empty())
        return "";
    return fmt::format(", {} at the bench shape{}", join(parts, " / "), parts.size() == 1 ? "" : "s");
}

std::string describe_symbols(const Task& task)
{
    std::vector<std::string> lines;
    for (const auto& symbol : task.symbols) {
        std::string range = symbol.max ? fmt::format("{} <= {} <= {}", symbol.min, symbol.name, *symbol.max)
                                       : fmt::format("{} >= {}", symbol.name, symbol.min);
        if (symbol.multiple_of > 1)
            range += fmt::format(", a multiple of {}", symbol.multiple_of);
        lines.push_back("- " + range);
    }
    for (const auto& constraint : task.constraints)
        lines.push_back("- " + constraint.text());
    return join(lines, "\n");
}

std::string describe_bench_shapes(const Task& task)
{
    std::vector<std::string> lines;
    for (const auto& shape : task.bench)
        lines.push_back("- " + shape.label);
    return join(lines, "\n");
}

std::string describe_checks(const Task& task)
{
    std::vector<std::string> lines;
    for (const auto& arg : task.args) {
        if (!arg.check)
            continue;
        if (arg.check->metric == CheckSpec::Metric::exact)
            lines.push_back(fmt::format("- {}: must equal the reference exactly", arg.name));
        else
            lines.push_back(fmt::format("- {}: |got - expected| <= atol + rtol * |expected| elementwise, with "
                                        "atol = {} and rtol = {}",
                                        arg.name, arg.check->atol.text(), arg.check->rtol.text()));
    }
    return join(lines, "\n");
}

std::string describe_roofline(const Task& task, const Json& hardware)
{
    bool counted = std::any_of(task.bench.begin(), task.bench.end(), [](const Shape& s) { return s.flops.has_value(); });
    std::string flops_text = counted ? "counted per shape (below)" : task.roofline.flops.text();
    if (task.is_torch() && !counted)
        flops_text = "not counted";
    std::vector<std::string> lines{fmt::format("FLOPs = {}; bytes that must move = {} (peak: {})", flops_text,
                                               task.roofline.bytes.text(), task.roofline.peak)};
    double bandwidth = json_number(hardware, "memory_bandwidth_gbps") * 1e9;
    double flop_rate = json_number(hardware, "peak_fp32_tflops") * 1e12;
    for (const auto& shape : task.bench) {
        try {
            ExprScope scope = task.scope_for(shape);
            double flops = shape.flops ? *shape.flops : task.roofline.flops.eval_real(scope);
            double bytes = task.roofline.bytes.eval_real(scope);
            std::string line = fmt::format("- {}: {:.4g} GFLOP, {} moved", shape.label, flops / 1e9, format_bytes(bytes));
            double floor_s = 0;
            if (bandwidth > 0)
                floor_s = bytes / bandwidth;
            if (flop_rate > 0 && task.roofline.peak == "fp32")
                floor_s = std::max(floor_s, flops / flop_rate);
            if (floor_s > 0)
                line += fmt::format(": no kernel can take less than {} on this GPU", format_duration_ns(floor_s * 1e9));
            lines.push_back(line);
        } catch (const ExprError&) {
            // A roofline that cannot be evaluated for a shape is left out; the task check reports it.
        }
    }
    return join(lines, "\n");
}

std::string describe_default_plan(const Task& task)
{
    if (!task.default_plan)
        return "none: every candidate must carry its own kforge:plan block";
    return "```json\n" + format_plan_json(task.default_plan->json) + "\n```";
}

std::string describe_forbidden(const Task& task)
{
    std::vector<std::string> lines;
    for (const auto& pattern : task.forbid)
        lines.push_back(fmt::format("- `{}`: {}", pattern.regex, pattern.reason));
    return join(lines, "\n");
}

std::string describe_hardware(const Json& hardware)
{
    std::vector<std::string> lines;
    flatten(hardware, "", lines, 60);
    return join(lines, "\n");
}

std::string describe_status(const CandidateView& view)
{
    if (!view.verdict)
        return "not evaluated yet";
    std::string text(verdict_name(view.verdict->kind));
    if (view.fitness)
        text += fmt::format("; {:.3g}x the speed of the baseline (geometric mean over the bench shapes)", *view.fitness);
    return text;
}

std::string describe_times(const std::vector<ShapeTiming>& times)
{
    std::vector<std::string> lines;
    for (const auto& t : times) {
        std::string line = fmt::format("- {}: {}", t.shape_label, format_duration_ns(t.candidate_ns));
        if (t.reference_ns > 0 && t.candidate_ns > 0)
            line += fmt::format(" (baseline {}, {:.2f}x)", format_duration_ns(t.reference_ns), t.reference_ns / t.candidate_ns);
        lines.push_back(line);
    }
    return join(lines, "\n");
}

std::string describe_metrics(const Json& metrics, size_t max_lines)
{
    std::vector<std::string> lines;
    flatten(metrics, "", lines, max_lines);
    return join(lines, "\n");
}

std::string describe_descriptors(const Json& descriptors)
{
    std::vector<std::string> parts;
    if (descriptors.is_object())
        for (const auto& [key, value] : descriptors.items())
            parts.push_back(key + "=" + scalar_text(value));
    return join(parts, ", ");
}

std::string describe_message(const CandidateView& view)
{
    if (!view.verdict || view.verdict->message.empty())
        return "";
    return truncate_text(view.verdict->message, k_max_message_chars);
}

} // namespace kforge
