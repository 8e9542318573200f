// Per-shape checks of a task's numbers (see task/parse.hpp): every expression the evaluator will
// compute on a shape is computed here first, on every shape of every list, so that a spec whose
// roofline divides by zero, whose tolerance is NaN or negative, whose planted value falls outside
// its tensor or whose default plan launches a negative block is refused at `task check` with the
// field and the shape named, instead of failing (or worse, silently passing) on a GPU later.
//
// Tolerances may use `max_abs_ref` and `sum_abs_<input>`, which only the GPU knows. They are
// evaluated here with stand-ins that keep the arithmetic honest: max_abs_ref = 1 and sum_abs_x =
// the element count of x (as if every |x| were 1), so `1 / (N - N)` or `sqrt(-1)` fail here as
// they would there.
#include <cmath>

#include <fmt/format.h>

#include "core/plan_check.hpp"
#include "core/task/parse.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"

namespace kforge::task_parse {
namespace {

struct NamedShape {
    const Shape* shape;
    std::string where; // "tests[3] (M=1,N=7)"
};

std::vector<NamedShape> every_shape(const Task& task)
{
    std::vector<NamedShape> out;
    auto add = [&](std::string_view list, const std::vector<Shape>& shapes) {
        for (size_t i = 0; i < shapes.size(); ++i)
            out.push_back({&shapes[i], fmt::format("shapes.{}[{}] ({})", list, i, shapes[i].label)});
    };
    add("tests", task.tests);
    add("bench", task.bench);
    add("held_out", task.held_out);
    add("stress", task.stress);
    return out;
}

void honour_interrupt()
{
    if (interrupt_requested())
        fail(ErrorKind::interrupted, "interrupted while checking the task spec");
}

// A real expression on one shape: finite and at least `at_least`; fails at `field` otherwise.
double require_real(const JsonReader& field, const Expr& expr, const ExprScope& scope, const NamedShape& shape,
                    std::string_view what)
{
    double value = 0;
    try {
        value = expr.eval_real(scope);
    } catch (const ExprError& e) {
        field.fail(fmt::format("{} cannot be computed on {}: {}", what, shape.where, e.what()));
    }
    if (!std::isfinite(value) || value < 0)
        field.fail(fmt::format("{} '{}' is {} on {}; it must be a finite number, at least 0", what, expr.text(),
                               value, shape.where));
    return value;
}

ExprScope tolerance_scope(const Task& task, const Shape& shape)
{
    ExprScope scope = task.scope_for(shape);
    scope.reals["max_abs_ref"] = 1.0;
    for (const auto& arg : task.args)
        if (arg.is_tensor && arg.intent != Intent::out)
            scope.reals["sum_abs_" + arg.name] = static_cast<double>(task.element_count(arg, shape));
    return scope;
}

void check_arg_numbers(const JsonReader& entry, const ArgSpec& arg, const Task& task, const NamedShape& shape)
{
    ExprScope scope = task.scope_for(*shape.shape);
    if (!arg.is_tensor) {
        try {
            if (dtype_is_float(arg.dtype)) {
                double v = arg.value.eval_real(scope);
                if (!std::isfinite(v))
                    entry.at("value").fail(fmt::format("'{}' is {} on {}", arg.value.text(), v, shape.where));
            } else {
                arg.value.eval_int(scope);
            }
        } catch (const ExprError& e) {
            entry.at("value").fail(fmt::format("cannot be computed on {}: {}", shape.where, e.what()));
        }
        return;
    }
    int64_t count = task.element_count(arg, *shape.shape);
    if (arg.intent != Intent::out && entry.has("gen")) {
        JsonReader gen = entry.at("gen");
        for (size_t p = 0; p < arg.gen.plants.size(); ++p) {
            JsonReader at = gen.at("plants").at(p).at("at");
            int64_t index = 0;
            try {
                index = arg.gen.plants[p].at.eval_int(scope);
            } catch (const ExprError& e) {
                at.fail(fmt::format("cannot be computed on {}: {}", shape.where, e.what()));
            }
            if (index < 0 || index >= count)
                at.fail(fmt::format("'{}' = {} on {}, outside '{}' (elements 0 to {})", arg.gen.plants[p].at.text(), index,
                                    shape.where, arg.name, count - 1));
        }
        if (arg.gen.hot_fraction) {
            double share = require_real(gen.at("hot_fraction"), *arg.gen.hot_fraction, scope, shape, "hot_fraction");
            if (share > 1)
                gen.at("hot_fraction").fail(fmt::format("'{}' is {} on {}; a share is at most 1",
                                                        arg.gen.hot_fraction->text(), share, shape.where));
        }
    }
    if (arg.check && arg.check->metric == CheckSpec::Metric::allclose) {
        ExprScope check_scope = tolerance_scope(task, *shape.shape);
        JsonReader check = entry.at("check");
        require_real(check.at("atol"), arg.check->atol, check_scope, shape, "atol");
        require_real(check.at("rtol"), arg.check->rtol, check_scope, shape, "rtol");
    }
}

} // namespace

void check_task_numbers(const JsonReader& root, const Task& task)
{
    std::vector<NamedShape> shapes = every_shape(task);
    JsonReader args = root.at("args");
    JsonReader roofline = root.at("roofline");
    for (const auto& shape : shapes) {
        honour_interrupt();
        ExprScope scope = task.scope_for(*shape.shape);
        require_real(roofline.at("flops"), task.roofline.flops, scope, shape, "flops");
        require_real(roofline.at("bytes"), task.roofline.bytes, scope, shape, "bytes");
        for (size_t i = 0; i < task.args.size(); ++i)
            check_arg_numbers(args.at(i), task.args[i], task, shape);
    }
}

void check_default_plan(const JsonReader& field, const Task& task, const Plan& plan)
{
    // The kernels it names are the candidate's business; everything else must fit the task.
    std::vector<std::string> kernels = launched_kernels(plan);
    try {
        validate_plan(task, plan, kernels);
        std::vector<ParamPoint> points = enumerate_param_points(plan, static_cast<size_t>(task.limits.max_param_points));
        for (const auto& shape : every_shape(task)) {
            honour_interrupt();
            for (const auto& point : points)
                resolve_plan(task, plan, *shape.shape, point);
        }
    } catch (const PlanError& e) {
        field.fail(e.what());
    }
}

} // namespace kforge::task_parse
