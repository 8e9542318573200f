// Plan block extraction and syntactic parsing.
#include "core/plan.hpp"

#include <functional>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr std::string_view k_plan_marker = "kforge:plan";

// JsonReader reports bad input with Error; a plan's problems must become PlanError instead, so a
// candidate's bad plan is a verdict and never stops the run.
template <typename F>
auto as_plan_error(F&& body) -> decltype(body())
{
    try {
        return body();
    } catch (const Error& e) {
        throw PlanError(e.what());
    } catch (const ExprError& e) {
        throw PlanError(e.what());
    }
}

std::array<Expr, 3> parse_dim3(const JsonReader& field)
{
    if (field.is_number() || field.is_string()) {
        return {parse_plan_expr(field), Expr::constant(1), Expr::constant(1)};
    }
    size_t n = field.size();
    if (n < 1 || n > 3)
        field.fail(fmt::format("expected 1 to 3 dimensions, found {}", n));
    std::array<Expr, 3> dims{Expr::constant(1), Expr::constant(1), Expr::constant(1)};
    for (size_t i = 0; i < n; ++i)
        dims[i] = parse_plan_expr(field.at(i));
    return dims;
}

PlanArg parse_plan_arg(const JsonReader& field)
{
    PlanArg arg;
    if (field.is_object() && field.find("tensor_map")) {
        field.allow_only({"tensor_map", "box", "swizzle"});
        PlanTensorMap map;
        map.tensor = field.at("tensor_map").as_string();
        const JsonReader box = field.at("box");
        size_t rank = box.size();
        if (rank < 1 || rank > 5)
            box.fail(fmt::format("expected 1 to 5 box extents (one per dimension of the tensor), found {}", rank));
        for (size_t i = 0; i < rank; ++i)
            map.box.push_back(parse_plan_expr(box.at(i)));
        if (auto swizzle = field.find("swizzle")) {
            int64_t bytes = swizzle->as_int();
            if (bytes != 0 && bytes != 32 && bytes != 64 && bytes != 128)
                swizzle->fail(fmt::format("expected 0, 32, 64 or 128 (bytes), found {}", bytes));
            map.swizzle = static_cast<int>(bytes);
        }
        arg.text = fmt::format("tensor_map({})", map.tensor);
        arg.tensor_map = std::move(map);
        return arg;
    }
    if (field.is_object()) {
        field.allow_only({"value", "dtype"});
        arg.text = field.at("value").as_expr_text();
        arg.value = parse_plan_expr(field.at("value"));
        if (auto dtype_field = field.find("dtype")) {
            auto dtype = parse_dtype(dtype_field->as_string());
            if (!dtype || dtype_is_float(*dtype))
                dtype_field->fail(fmt::format("expected an integer type (i32, u32, i64, u64), found "
                                              "'{}'",
                                              dtype_field->as_string()));
            arg.dtype = *dtype;
        }
        return arg;
    }
    arg.text = field.as_expr_text();
    Expr parsed = parse_plan_expr(field);
    // A bare identifier names a buffer or scalar; anything else is an expression. Which names exist
    // is decided against the task by validate_plan.
    bool bare_name = !arg.text.empty() && parsed.names().size() == 1 && *parsed.names().begin() == trim(arg.text);
    if (!bare_name)
        arg.value = std::move(parsed);
    return arg;
}

} // namespace

Expr parse_plan_expr(const JsonReader& field)
{
    try {
        return Expr::parse(field.as_expr_text());
    } catch (const ExprError& e) {
        field.fail(e.what());
    }
}

std::optional<Json> extract_plan_json(std::string_view source)
{
    size_t marker = source.find(k_plan_marker);
    if (marker == std::string_view::npos)
        return std::nullopt;
    size_t open = source.rfind("/*", marker);
    size_t line_start = source.rfind('\n', marker);
    if (open == std::string_view::npos ||
        (line_start != std::string_view::npos && open < line_start && source.find("*/", open) < marker))
        throw PlanError("the 'kforge:plan' marker must sit inside a /* ... */ comment");
    size_t body = marker + k_plan_marker.size();
    size_t close = source.find("*/", body);
    if (close == std::string_view::npos)
        throw PlanError("the kforge:plan comment is never closed with */");
    std::string_view text = source.substr(body, close - body);
    if (source.find(k_plan_marker, close) != std::string_view::npos)
        throw PlanError("more than one kforge:plan block; keep exactly one");
    size_t line = 1;
    for (size_t i = 0; i < body; ++i)
        line += source[i] == '\n';
    JsonParseFailure failure;
    std::optional<Json> json = try_parse_json(text, failure);
    if (!json)
        throw PlanError(fmt::format("the kforge:plan block (starting on line {}) is not valid JSON: {}{}", line,
                                    failure.path.empty() ? "" : failure.path + ": ", failure.message));
    return json;
}

std::string format_plan_json(const Json& value)
{
    auto compact = [](const Json& item) {
        std::string text;
        std::function<void(const Json&)> write = [&](const Json& v) {
            if (v.is_object()) {
                text += '{';
                bool first = true;
                for (const auto& [key, sub] : v.items()) {
                    text += first ? "" : ", ";
                    first = false;
                    text += Json(key).dump(-1, ' ', false, Json::error_handler_t::replace) + ": ";
                    write(sub);
                }
                text += '}';
            } else if (v.is_array()) {
                text += '[';
                for (size_t i = 0; i < v.size(); ++i) {
                    text += i ? ", " : "";
                    write(v[i]);
                }
                text += ']';
            } else {
                text += v.dump(-1, ' ', false, Json::error_handler_t::replace);
            }
        };
        write(item);
        return text;
    };
    if (!value.is_object() || value.empty())
        return compact(value);
    std::vector<std::string> entries;
    for (const auto& [key, item] : value.items())
        entries.push_back(Json(key).dump(-1, ' ', false, Json::error_handler_t::replace) + ": " + compact(item));
    return "{ " + join(entries, ",\n  ") + " }";
}


std::string replace_plan_block(std::string_view source, const Json& plan)
{
    std::string block = fmt::format("/* {}\n{}\n*/", k_plan_marker, format_plan_json(plan));
    size_t marker = source.find(k_plan_marker);
    if (marker == std::string_view::npos)
        return fmt::format("{}\n{}", block, source);
    extract_plan_json(source); // validates the existing block's shape
    size_t open = source.rfind("/*", marker);
    size_t close = source.find("*/", marker);
    return fmt::format("{}{}{}", source.substr(0, open), block, source.substr(close + 2));
}

Plan parse_plan(const Json& json, std::string_view where)
{
    return as_plan_error([&] {
        JsonReader root(json, std::string(where));
        root.allow_only({"params", "scratch", "launches", "notes"});
        Plan plan;
        plan.json = json;

        if (auto params = root.find("params")) {
            auto names = params->keys();
            if (names.size() > k_max_plan_params)
                params->fail(fmt::format("at most {} params, found {}", k_max_plan_params, names.size()));
            for (const auto& name : names) {
                JsonReader values = params->at(name);
                if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
                    values.fail(fmt::format("param name '{}' is not an identifier", name));
                std::vector<int64_t> list;
                if (values.is_number()) {
                    list.push_back(values.as_int());
                } else {
                    if (values.size() == 0)
                        values.fail("a param needs at least one value");
                    if (values.size() > k_max_param_values)
                        values.fail(fmt::format("at most {} values per param", k_max_param_values));
                    for (const auto& v : values.items())
                        list.push_back(v.as_int());
                }
                plan.params[name] = std::move(list);
            }
        }

        if (auto scratch = root.find("scratch")) {
            for (const auto& entry : scratch->items()) {
                entry.allow_only({"name", "bytes"});
                PlanScratch s{entry.at("name").as_string(), parse_plan_expr(entry.at("bytes"))};
                plan.scratch.push_back(std::move(s));
            }
        }

        JsonReader launches = root.at("launches");
        if (launches.size() == 0)
            launches.fail("a plan needs at least one launch");
        if (launches.size() > k_max_plan_launches)
            launches.fail(fmt::format("at most {} launches, found {} (a launch may 'repeat')", k_max_plan_launches,
                                      launches.size()));
        for (const auto& entry : launches.items()) {
            if (entry.is_object() && entry.has("library")) {
                PlanLaunch step;
                step.library = parse_library_step(entry);
                plan.launches.push_back(std::move(step));
                continue;
            }
            entry.allow_only({"kernel", "grid", "block", "smem", "args", "repeat", "swap"});
            PlanLaunch launch;
            launch.kernel = entry.at("kernel").as_string();
            launch.grid = parse_dim3(entry.at("grid"));
            launch.block = parse_dim3(entry.at("block"));
            launch.smem = entry.has("smem") ? parse_plan_expr(entry.at("smem")) : Expr::constant(0);
            JsonReader args = entry.at("args");
            if (args.size() > k_max_launch_args)
                args.fail(fmt::format("at most {} arguments, found {}", k_max_launch_args, args.size()));
            for (const auto& arg : args.items())
                launch.args.push_back(parse_plan_arg(arg));
            if (auto repeat = entry.find("repeat"))
                launch.repeat = parse_plan_expr(*repeat);
            if (auto swap = entry.find("swap")) {
                if (swap->size() != 2)
                    swap->fail("expected two buffer names to exchange after each iteration");
                launch.swap = {swap->at(0).as_string(), swap->at(1).as_string()};
                if (!launch.repeat)
                    swap->fail("'swap' needs 'repeat'");
            }
            plan.launches.push_back(std::move(launch));
        }
        return plan;
    });
}

size_t count_param_points(const Plan& plan)
{
    // At most k_max_param_values ^ k_max_plan_params = 2^48 for a parsed plan; saturates beyond.
    size_t total = 1;
    for (const auto& [name, values] : plan.params)
        if (__builtin_mul_overflow(total, values.size(), &total))
            return SIZE_MAX;
    return total;
}

std::vector<ParamPoint> enumerate_param_points(const Plan& plan, size_t cap)
{
    // An odometer over the value lists, the last param turning fastest, stopped after `cap` points:
    // never more than `cap` points exist, however large the full product.
    std::vector<ParamPoint> points;
    for (const auto& [name, values] : plan.params)
        if (values.empty())
            return points;
    std::vector<size_t> digit(plan.params.size(), 0);
    while (points.size() < cap) {
        ParamPoint point;
        size_t i = 0;
        for (const auto& [name, values] : plan.params)
            point[name] = values[digit[i++]];
        points.push_back(std::move(point));
        size_t position = digit.size();
        auto param = plan.params.rbegin();
        for (; position > 0; --position, ++param) {
            if (++digit[position - 1] < param->second.size())
                break;
            digit[position - 1] = 0;
        }
        if (position == 0)
            break; // every combination has been produced
    }
    return points;
}

std::string describe_param_point(const ParamPoint& point)
{
    std::vector<std::string> parts;
    for (const auto& [name, value] : point)
        parts.push_back(fmt::format("{}={}", name, value));
    return parts.empty() ? "(no params)" : join(parts, " ");
}

} // namespace kforge
