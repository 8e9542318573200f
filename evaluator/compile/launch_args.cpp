// check_launch_arguments(): the plan's arguments against the CUBIN's parameter lists (see the
// header for why). The sizes follow resolve_plan()'s typing of each argument exactly, so what is
// checked here is what the GPU worker will pass.
#include "evaluator/compile/launch_args.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "evaluator/compile/cubin_info.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

std::string describe_sizes(const std::vector<uint32_t>& sizes)
{
    std::vector<std::string> parts;
    for (uint32_t size : sizes)
        parts.push_back(fmt::format("{} B", size));
    return parts.empty() ? "none" : join(parts, ", ");
}

std::string describe_argument(const Task& task, const Plan& plan, const PlanArg& arg)
{
    if (arg.tensor_map)
        return fmt::format("a tensor map of '{}' (a 128-byte CUtensorMap by value)", arg.tensor_map->tensor);
    if (arg.value)
        return fmt::format("the expression '{}' as {}", arg.text, dtype_name(arg.dtype));
    if (const ArgSpec* spec = task.find_arg(arg.text))
        return spec->is_tensor ? fmt::format("tensor '{}' as a pointer", arg.text)
                               : fmt::format("scalar '{}' as {}", arg.text, dtype_name(spec->dtype));
    if (std::any_of(plan.scratch.begin(), plan.scratch.end(), [&](const PlanScratch& s) { return s.name == arg.text; }))
        return fmt::format("scratch buffer '{}' as a pointer", arg.text);
    return fmt::format("'{}' as i32", arg.text);
}

} // namespace

size_t launch_argument_bytes(const Task& task, const Plan& plan, const PlanArg& arg)
{
    if (arg.tensor_map)
        return k_tensor_map_bytes;
    if (arg.value)
        return dtype_size(arg.dtype);
    if (const ArgSpec* spec = task.find_arg(arg.text))
        return spec->is_tensor ? sizeof(uint64_t) : dtype_size(spec->dtype);
    if (std::any_of(plan.scratch.begin(), plan.scratch.end(), [&](const PlanScratch& s) { return s.name == arg.text; }))
        return sizeof(uint64_t);
    return dtype_size(DType::i32); // a size symbol, a param or `iter`, passed by value
}

std::string check_launch_arguments(const Task& task, const Plan& plan, const CompileResult& compiled)
{
    if (!compiled.ok || compiled.cubin.empty())
        return "";
    std::map<std::string, std::vector<uint32_t>> params = read_cubin_params(compiled.cubin);
    for (size_t i = 0; i < plan.launches.size(); ++i) {
        const PlanLaunch& launch = plan.launches[i];
        if (launch.library)
            continue; // the library's call, not a kernel of the source (core/library_step.hpp)
        auto lowered = compiled.lowered_names.find(launch.kernel);
        std::string symbol = lowered == compiled.lowered_names.end() ? launch.kernel : lowered->second;
        auto found = params.find(symbol);
        if (found == params.end())
            continue;
        const std::vector<uint32_t>& sizes = found->second;
        std::string where = fmt::format("launches[{}] ({})", i, launch.kernel);
        if (launch.args.size() != sizes.size())
            return fmt::format("{}: the plan passes {} argument{}, but kernel '{}' takes {} parameter{} ({}); list one "
                               "argument per kernel parameter, in order",
                               where, launch.args.size(), launch.args.size() == 1 ? "" : "s", launch.kernel,
                               sizes.size(), sizes.size() == 1 ? "" : "s", describe_sizes(sizes));
        for (size_t a = 0; a < sizes.size(); ++a) {
            size_t bytes = launch_argument_bytes(task, plan, launch.args[a]);
            if (bytes == sizes[a])
                continue;
            std::string hint = sizes[a] == 8 && bytes == 4
                                   ? fmt::format("; pass {{\"value\": \"{}\", \"dtype\": \"i64\"}} for a 64-bit integer",
                                                 launch.args[a].text)
                                   : "";
            return fmt::format("{}.args[{}]: the plan passes {} ({} bytes), but parameter {} of kernel '{}' is {} "
                               "bytes (its parameters: {}){}",
                               where, a, describe_argument(task, plan, launch.args[a]), bytes, a, launch.kernel,
                               sizes[a], describe_sizes(sizes), hint);
        }
    }
    return "";
}

} // namespace kforge
