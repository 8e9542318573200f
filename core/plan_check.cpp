// Plan validation and resolution; see the header.
#include "core/plan_check.hpp"

#include <algorithm>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "util/text.hpp"

namespace kforge {
namespace {

constexpr std::string_view k_iter = "iter";

[[noreturn]] void plan_fail(const std::string& message) { throw PlanError(message); }

std::set<std::string> size_names(const Task& task)
{
    std::set<std::string> names;
    // Free symbols and derived ones are both bound in every shape; read them off the first test.
    for (const auto& [name, value] : task.tests.front().sizes)
        names.insert(name);
    return names;
}

std::string launch_label(const Plan& plan, size_t index)
{
    const PlanLaunch& launch = plan.launches[index];
    return fmt::format("launches[{}] ({})", index,
                       launch.library ? std::string(library_op_name(launch.library->op)) : launch.kernel);
}

void require_known(const Expr& expr, const std::set<std::string>& known, const std::string& where)
{
    for (const auto& name : expr.names()) {
        if (known.count(name))
            continue;
        std::vector<std::string> list(known.begin(), known.end());
        std::string hint = closest_match(name, list);
        plan_fail(fmt::format("{}: unknown name '{}' in '{}'{} (known: {})", where, name, expr.text(),
                              hint.empty() ? "" : fmt::format(", did you mean '{}'?", hint), join(list, ", ")));
    }
    if (expr.needs_real())
        plan_fail(fmt::format("{}: '{}' must be an integer expression", where, expr.text()));
}

int64_t eval_checked(const Expr& expr, const ExprScope& scope, const std::string& where)
{
    try {
        return expr.eval_int(scope);
    } catch (const ExprError& e) {
        plan_fail(fmt::format("{}: {}", where, e.what()));
    }
}

// A tensor map names an input or output tensor (not scratch: its shape is not known), has one box
// extent per dimension over known names, and an element type the TMA unit copies.
void validate_tensor_map(const Task& task, const PlanLaunch& launch, const PlanTensorMap& map,
                         const std::set<std::string>& names, const std::string& where)
{
    const ArgSpec* spec = task.find_arg(map.tensor);
    if (!spec || !spec->is_tensor)
        plan_fail(fmt::format("{}: tensor_map '{}' must name a tensor argument of the task", where, map.tensor));
    if (map.box.size() != spec->shape.size())
        plan_fail(fmt::format("{}: tensor_map '{}' has {} box extents, but the tensor has {} dimensions", where,
                              map.tensor, map.box.size(), spec->shape.size()));
    if (spec->shape.size() > 5)
        plan_fail(fmt::format("{}: tensor_map '{}': TMA handles at most 5 dimensions", where, map.tensor));
    if (!tensor_map_dtype_supported(spec->dtype))
        plan_fail(fmt::format("{}: tensor_map '{}': TMA cannot copy {} elements", where, map.tensor,
                              dtype_name(spec->dtype)));
    if (launch.swap && (launch.swap->first == map.tensor || launch.swap->second == map.tensor))
        plan_fail(fmt::format("{}: tensor_map '{}' of a swapped buffer is not supported", where, map.tensor));
    for (size_t d = 0; d < map.box.size(); ++d)
        require_known(map.box[d], names, fmt::format("{}.box[{}]", where, d));
}

// The numbers of one tensor map at one shape, checked against what cuTensorMapEncodeTiled accepts,
// so a bad box is a plan error naming the argument rather than a driver error at launch.
void resolve_tensor_map(const Task& task, const PlanTensorMap& map, const ExprScope& scope,
                        const std::string& where, ResolvedArg& out)
{
    const ArgSpec* spec = task.find_arg(map.tensor);
    const size_t rank = spec->shape.size();
    const int64_t element = static_cast<int64_t>(dtype_size(spec->dtype));
    out.kind = ResolvedArg::Kind::tensor_map;
    out.name = map.tensor;
    out.dtype = spec->dtype;
    out.map_swizzle = map.swizzle;
    uint64_t stride = static_cast<uint64_t>(element);
    for (size_t i = 0; i < rank; ++i) {
        const size_t d = rank - 1 - i; // innermost first
        int64_t extent = eval_checked(spec->shape[d], scope, fmt::format("{}: shape of '{}'", where, map.tensor));
        int64_t box = eval_checked(map.box[d], scope, fmt::format("{}: box[{}]", where, d));
        if (box < 1 || box > 256)
            plan_fail(fmt::format("{}: tensor_map '{}' box[{}] = {}, outside 1..256", where, map.tensor, d, box));
        if (extent > (int64_t{1} << 32))
            plan_fail(fmt::format("{}: tensor_map '{}': extent {} of dimension {} is over 2^32", where, map.tensor,
                                  extent, d));
        if (i > 0) {
            if (stride % 16 != 0 || stride >= (uint64_t{1} << 40))
                plan_fail(fmt::format("{}: tensor_map '{}': the stride of dimension {} is {} bytes; TMA needs a "
                                      "multiple of 16 below 2^40",
                                      where, map.tensor, d, stride));
            out.map_strides.push_back(stride);
        }
        out.map_dims.push_back(static_cast<uint64_t>(extent));
        out.map_box.push_back(static_cast<uint32_t>(box));
        stride *= static_cast<uint64_t>(extent);
    }
    const int64_t inner_bytes = int64_t{out.map_box[0]} * element;
    if (inner_bytes % 16 != 0)
        plan_fail(fmt::format("{}: tensor_map '{}': the innermost box is {} bytes; TMA needs a multiple of 16",
                              where, map.tensor, inner_bytes));
    if (map.swizzle > 0 && inner_bytes > map.swizzle)
        plan_fail(fmt::format("{}: tensor_map '{}': the innermost box is {} bytes, over the {}-byte swizzle span",
                              where, map.tensor, inner_bytes, map.swizzle));
}

} // namespace

bool tensor_map_dtype_supported(DType dtype)
{
    switch (dtype) {
    case DType::u8:
    case DType::u16:
    case DType::u32:
    case DType::i32:
    case DType::u64:
    case DType::i64:
    case DType::f16:
    case DType::bf16:
    case DType::f32:
    case DType::f64: return true;
    default: return false;
    }
}

Plan source_plan(const Task& task, std::string_view source)
{
    if (auto json = extract_plan_json(source))
        return parse_plan(*json, "plan");
    if (task.default_plan)
        return *task.default_plan;
    throw PlanError("the source has no kforge:plan block and the task has no default plan");
}

std::vector<std::string> launched_kernels(const Plan& plan)
{
    std::vector<std::string> kernels;
    for (const auto& launch : plan.launches)
        if (!launch.library && std::find(kernels.begin(), kernels.end(), launch.kernel) == kernels.end())
            kernels.push_back(launch.kernel);
    return kernels;
}

void validate_plan(const Task& task, const Plan& plan, const std::vector<std::string>& kernel_names)
{
    std::set<std::string> sizes = size_names(task);
    std::set<std::string> buffers;
    std::set<std::string> scalars;
    for (const auto& arg : task.args)
        (arg.is_tensor ? buffers : scalars).insert(arg.name);

    for (const auto& [name, values] : plan.params) {
        if (sizes.count(name) || buffers.count(name) || scalars.count(name) || task.constants.count(name))
            plan_fail(fmt::format("params: '{}' already names a symbol or argument of the task", name));
        if (name == k_iter)
            plan_fail("params: 'iter' is reserved for the loop index of repeated launches");
    }
    std::set<std::string> int_names = sizes;
    for (const auto& [name, values] : plan.params)
        int_names.insert(name);

    std::set<std::string> scratch_names;
    for (size_t i = 0; i < plan.scratch.size(); ++i) {
        const auto& s = plan.scratch[i];
        std::string where = fmt::format("scratch[{}] ({})", i, s.name);
        if (s.name.empty() || buffers.count(s.name) || scalars.count(s.name) || int_names.count(s.name) ||
            !scratch_names.insert(s.name).second)
            plan_fail(fmt::format("{}: the name must be new (not an argument, symbol, param or other scratch)", where));
        require_known(s.bytes, int_names, where + ".bytes");
    }

    if (plan.launches.empty())
        plan_fail("launches: a plan needs at least one launch");
    for (size_t i = 0; i < plan.launches.size(); ++i) {
        const auto& launch = plan.launches[i];
        std::string where = launch_label(plan, i);
        if (launch.library) {
            validate_library_step(task, plan, *launch.library, int_names, where);
            continue;
        }
        if (std::find(kernel_names.begin(), kernel_names.end(), launch.kernel) == kernel_names.end()) {
            std::string hint = closest_match(launch.kernel, kernel_names);
            plan_fail(fmt::format("{}: the source has no __global__ function '{}'{} (kernels found: {})", where,
                                  launch.kernel, hint.empty() ? "" : fmt::format(", did you mean '{}'?", hint),
                                  kernel_names.empty() ? "none" : join(kernel_names, ", ")));
        }
        std::set<std::string> launch_ints = int_names;
        if (launch.repeat) {
            require_known(*launch.repeat, int_names, where + ".repeat");
            launch_ints.insert(std::string(k_iter));
        }
        for (int d = 0; d < 3; ++d) {
            require_known(launch.grid[d], int_names, fmt::format("{}.grid[{}]", where, d));
            require_known(launch.block[d], int_names, fmt::format("{}.block[{}]", where, d));
        }
        require_known(launch.smem, int_names, where + ".smem");
        for (size_t a = 0; a < launch.args.size(); ++a) {
            const auto& arg = launch.args[a];
            std::string arg_where = fmt::format("{}.args[{}]", where, a);
            if (arg.value) {
                require_known(*arg.value, launch_ints, arg_where);
                continue;
            }
            if (arg.tensor_map) {
                validate_tensor_map(task, launch, *arg.tensor_map, launch_ints, arg_where);
                continue;
            }
            const std::string& name = arg.text;
            if (buffers.count(name) || scratch_names.count(name) || scalars.count(name))
                continue;
            if (int_names.count(name) || name == k_iter)
                continue; // a size symbol or param passed by value as i32
            std::vector<std::string> known(buffers.begin(), buffers.end());
            known.insert(known.end(), scratch_names.begin(), scratch_names.end());
            known.insert(known.end(), scalars.begin(), scalars.end());
            std::string hint = closest_match(name, known);
            plan_fail(fmt::format("{}: '{}' is not an argument, scratch buffer, symbol or param{} (arguments: {})",
                                  arg_where, name, hint.empty() ? "" : fmt::format(", did you mean '{}'?", hint),
                                  join(known, ", ")));
        }
        if (launch.swap) {
            for (const auto& name : {launch.swap->first, launch.swap->second}) {
                const ArgSpec* arg = task.find_arg(name);
                bool writable_tensor = arg && arg->is_tensor && arg->intent != Intent::in;
                if (!writable_tensor && !scratch_names.count(name))
                    plan_fail(fmt::format("{}.swap: '{}' must be an output tensor or a scratch buffer "
                                          "(inputs are never written)",
                                          where, name));
            }
        }
    }
}

ResolvedPlan resolve_plan(const Task& task, const Plan& plan, const Shape& shape, const ParamPoint& point)
{
    for (const auto& [name, values] : plan.params)
        if (!point.count(name))
            plan_fail(fmt::format("no value chosen for param '{}'", name));
    ExprScope scope = task.scope_for(shape);
    for (const auto& [name, value] : point)
        scope.ints[name] = value;
    std::string context = fmt::format("at {} with {}", shape.label, describe_param_point(point));

    ResolvedPlan resolved;
    int64_t scratch_total = 0;
    for (size_t i = 0; i < plan.scratch.size(); ++i) {
        const auto& s = plan.scratch[i];
        int64_t bytes = eval_checked(s.bytes, scope, fmt::format("scratch[{}] ({}) {}", i, s.name, context));
        if (bytes < 1)
            plan_fail(fmt::format("scratch[{}] ({}): {} bytes {}; a scratch buffer needs at least 1 byte", i,
                                  s.name, bytes, context));
        if (__builtin_add_overflow(scratch_total, bytes, &scratch_total))
            plan_fail("scratch: total size overflows");
        resolved.scratch.push_back({s.name, bytes});
    }
    int64_t scratch_limit = eval_checked(task.limits.max_scratch_bytes, scope, "limits.max_scratch_bytes");
    if (scratch_total > scratch_limit)
        plan_fail(fmt::format("scratch: {} bytes in all {}, over the task's limit of {} bytes", scratch_total,
                              context, scratch_limit));

    std::vector<std::pair<std::string, int64_t>> scratch_bytes;
    for (const auto& s : resolved.scratch)
        scratch_bytes.emplace_back(s.name, s.bytes);
    int64_t total_launches = 0;
    for (size_t i = 0; i < plan.launches.size(); ++i) {
        const auto& launch = plan.launches[i];
        std::string where = fmt::format("{} {}", launch_label(plan, i), context);
        if (launch.library) {
            if (++total_launches > task.limits.max_launches)
                plan_fail(fmt::format("{}: {} launches in all, over the task's limit of {}", where, total_launches,
                                      task.limits.max_launches));
            ResolvedLaunch step;
            step.library = resolve_library_step(task, *launch.library, shape, scope, scratch_bytes, where);
            resolved.launches.push_back(std::move(step));
            continue;
        }
        int64_t repeat = launch.repeat ? eval_checked(*launch.repeat, scope, where + ": repeat") : 1;
        if (repeat < 0)
            plan_fail(fmt::format("{}: repeat is {}, which is negative", where, repeat));
        if (repeat > task.limits.max_launches || total_launches + repeat > task.limits.max_launches)
            plan_fail(fmt::format("{}: {} launches in all, over the task's limit of {}", where,
                                  total_launches + repeat, task.limits.max_launches));
        total_launches += repeat;

        ResolvedLaunch base;
        base.kernel = launch.kernel;
        int64_t threads = 1;
        for (int d = 0; d < 3; ++d) {
            int64_t g = eval_checked(launch.grid[d], scope, fmt::format("{}: grid[{}]", where, d));
            int64_t b = eval_checked(launch.block[d], scope, fmt::format("{}: block[{}]", where, d));
            int64_t g_max = d == 0 ? k_max_grid_x : k_max_grid_yz;
            int64_t b_max = d == 2 ? k_max_block_z : k_max_block_xy;
            if (g < 1 || g > g_max)
                plan_fail(fmt::format("{}: grid[{}] = '{}' = {}, outside 1..{}", where, d, launch.grid[d].text(), g, g_max));
            if (b < 1 || b > b_max)
                plan_fail(fmt::format("{}: block[{}] = '{}' = {}, outside 1..{}", where, d, launch.block[d].text(), b, b_max));
            base.grid[d] = static_cast<uint32_t>(g);
            base.block[d] = static_cast<uint32_t>(b);
            threads *= b;
        }
        if (threads > task.limits.max_threads_per_block)
            plan_fail(fmt::format("{}: {} threads per block, over the limit of {}", where, threads,
                                  task.limits.max_threads_per_block));
        int64_t smem = eval_checked(launch.smem, scope, where + ": smem");
        if (smem < 0 || smem > task.limits.max_dynamic_smem)
            plan_fail(fmt::format("{}: dynamic shared memory '{}' = {} bytes, outside 0..{}", where, launch.smem.text(),
                                  smem, task.limits.max_dynamic_smem));
        base.smem = static_cast<uint32_t>(smem);

        std::pair<std::string, std::string> binding; // current names of the swapped pair
        if (launch.swap)
            binding = *launch.swap;
        for (int64_t iter = 0; iter < repeat; ++iter) {
            ExprScope iter_scope = scope;
            iter_scope.ints[std::string(k_iter)] = iter;
            ResolvedLaunch one = base;
            for (size_t a = 0; a < launch.args.size(); ++a) {
                const auto& arg = launch.args[a];
                std::string arg_where = fmt::format("{}: args[{}]", where, a);
                ResolvedArg out;
                if (arg.tensor_map) {
                    resolve_tensor_map(task, *arg.tensor_map, iter_scope, arg_where, out);
                    one.args.push_back(std::move(out));
                    continue;
                }
                if (arg.value) {
                    out.kind = ResolvedArg::Kind::scalar;
                    out.name = arg.text;
                    out.dtype = arg.dtype;
                    out.int_value = eval_checked(*arg.value, iter_scope, arg_where);
                } else if (const ArgSpec* spec = task.find_arg(arg.text)) {
                    out.name = arg.text;
                    out.dtype = spec->dtype;
                    if (spec->is_tensor) {
                        out.kind = ResolvedArg::Kind::tensor;
                    } else {
                        out.kind = ResolvedArg::Kind::scalar;
                        try {
                            if (dtype_is_float(spec->dtype))
                                out.real_value = spec->value.eval_real(scope);
                            else
                                out.int_value = spec->value.eval_int(scope);
                        } catch (const ExprError& e) {
                            plan_fail(fmt::format("{}: {}", arg_where, e.what()));
                        }
                    }
                } else if (std::any_of(plan.scratch.begin(), plan.scratch.end(),
                                       [&](const PlanScratch& s) { return s.name == arg.text; })) {
                    out.kind = ResolvedArg::Kind::scratch;
                    out.name = arg.text;
                    out.dtype = DType::u8;
                } else {
                    out.kind = ResolvedArg::Kind::scalar;
                    out.name = arg.text;
                    out.dtype = DType::i32;
                    out.int_value = eval_checked(Expr::parse(arg.text), iter_scope, arg_where);
                }
                if (launch.swap && out.kind != ResolvedArg::Kind::scalar) {
                    if (arg.text == launch.swap->first)
                        out.name = binding.first;
                    else if (arg.text == launch.swap->second)
                        out.name = binding.second;
                    if (out.name != arg.text) {
                        const ArgSpec* spec = task.find_arg(out.name);
                        out.kind = spec ? ResolvedArg::Kind::tensor : ResolvedArg::Kind::scratch;
                    }
                }
                if (out.kind == ResolvedArg::Kind::scalar && !dtype_is_float(out.dtype)) {
                    // The value must fit the type the kernel receives.
                    int64_t v = out.int_value;
                    bool fits = true;
                    switch (out.dtype) {
                    case DType::i32: fits = v >= INT32_MIN && v <= INT32_MAX; break;
                    case DType::u32: fits = v >= 0 && v <= UINT32_MAX; break;
                    case DType::u64: fits = v >= 0; break;
                    case DType::i8: fits = v >= INT8_MIN && v <= INT8_MAX; break;
                    case DType::u8: fits = v >= 0 && v <= UINT8_MAX; break;
                    case DType::i16: fits = v >= INT16_MIN && v <= INT16_MAX; break;
                    case DType::u16: fits = v >= 0 && v <= UINT16_MAX; break;
                    default: break;
                    }
                    if (!fits)
                        plan_fail(fmt::format("{}: the value {} of '{}' does not fit in {}; pass it as "
                                              "{{\"value\": \"{}\", \"dtype\": \"i64\"}}",
                                              arg_where, v, arg.text, dtype_name(out.dtype), arg.text));
                }
                one.args.push_back(std::move(out));
            }
            resolved.launches.push_back(std::move(one));
            if (launch.swap)
                std::swap(binding.first, binding.second);
        }
    }
    if (resolved.launches.empty())
        plan_fail(fmt::format("the plan launches no kernel {} (every repeat is 0)", context));
    return resolved;
}

std::vector<unsigned char> scalar_bytes(const ResolvedArg& arg)
{
    std::vector<unsigned char> bytes(dtype_size(arg.dtype));
    auto put = [&](auto value) { std::memcpy(bytes.data(), &value, sizeof value); };
    switch (arg.dtype) {
    case DType::f32: put(static_cast<float>(arg.real_value)); break;
    case DType::f64: put(arg.real_value); break;
    case DType::f16:
    case DType::bf16: {
        // Round-to-nearest-even conversion from float, done by hand: host code has no CUDA types.
        float f = static_cast<float>(arg.real_value);
        uint32_t u;
        std::memcpy(&u, &f, 4);
        uint16_t h;
        if (arg.dtype == DType::bf16) {
            h = static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
        } else {
            // IEEE half: handles normal range; scalars in specs are small constants such as eps.
            uint32_t sign = (u >> 16) & 0x8000;
            int32_t exp = static_cast<int32_t>((u >> 23) & 0xff) - 127 + 15;
            uint32_t mant = u & 0x7fffff;
            if (exp <= 0)
                h = static_cast<uint16_t>(sign);
            else if (exp >= 31)
                h = static_cast<uint16_t>(sign | 0x7c00);
            else
                h = static_cast<uint16_t>(sign | (static_cast<uint32_t>(exp) << 10) | ((mant + 0x1000) >> 13));
        }
        put(h);
        break;
    }
    case DType::i8: put(static_cast<int8_t>(arg.int_value)); break;
    case DType::u8: put(static_cast<uint8_t>(arg.int_value)); break;
    case DType::i16: put(static_cast<int16_t>(arg.int_value)); break;
    case DType::u16: put(static_cast<uint16_t>(arg.int_value)); break;
    case DType::i32: put(static_cast<int32_t>(arg.int_value)); break;
    case DType::u32: put(static_cast<uint32_t>(arg.int_value)); break;
    case DType::i64: put(arg.int_value); break;
    case DType::u64: put(static_cast<uint64_t>(arg.int_value)); break;
    }
    return bytes;
}

} // namespace kforge
