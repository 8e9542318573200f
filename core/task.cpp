// Task-spec parsing and validation. The parse is a straight walk down the JSON with JsonReader, so
// each field's error names its path; cross-field rules (names known, shapes within bounds,
// reference plan valid) run after the walk.
#include "core/task.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "core/plan_check.hpp"
#include "core/source.hpp"
#include "core/task/csr.hpp"
#include "core/task/parse.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/interrupt.hpp"
#include "util/limits.hpp"
#include "util/regex.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

using namespace task_parse;


std::vector<SymbolSpec> parse_symbols(const JsonReader& field,
                                      std::map<std::string, std::pair<Expr, JsonReader>>& derived)
{
    std::vector<SymbolSpec> symbols;
    for (const auto& name : field.keys()) {
        JsonReader entry = field.at(name);
        if (!is_identifier(name))
            entry.fail(fmt::format("symbol name '{}' is not an identifier", name));
        entry.allow_only({"min", "max", "multiple_of", "value", "doc"});
        if (auto value = entry.find("value")) {
            Expr expr = parse_expr(*value);
            require_integer_expr(*value, expr);
            derived.emplace(name, std::make_pair(std::move(expr), *value));
            continue;
        }
        SymbolSpec spec{name};
        spec.min = entry.get_int("min", 1);
        if (auto max = entry.find("max"))
            spec.max = max->as_int();
        spec.multiple_of = entry.get_int("multiple_of", 1);
        if (spec.min < 1)
            entry.at("min").fail(fmt::format("sizes must be at least 1, found min {}", spec.min));
        if (spec.max && *spec.max < spec.min)
            entry.at("max").fail(fmt::format("max {} is below min {}", *spec.max, spec.min));
        if (spec.multiple_of < 1)
            entry.at("multiple_of").fail("multiple_of must be at least 1");
        symbols.push_back(std::move(spec));
    }
    return symbols;
}

// Orders derived symbols so each comes after what it uses; a cycle is an error naming it.
std::vector<std::string> order_derived(const std::map<std::string, std::pair<Expr, JsonReader>>& derived,
                                       const std::set<std::string>& free_symbols)
{
    std::vector<std::string> order;
    std::map<std::string, int> state; // 0 new, 1 visiting, 2 done
    std::vector<std::string> stack;
    std::function<void(const std::string&)> visit = [&](const std::string& name) {
        auto& [expr, field] = derived.at(name);
        if (state[name] == 2)
            return;
        if (state[name] == 1) {
            auto from = std::find(stack.begin(), stack.end(), name);
            std::vector<std::string> cycle(from, stack.end());
            cycle.push_back(name);
            field.fail(fmt::format("symbols depend on each other in a cycle: {}", join(cycle, " -> ")));
        }
        state[name] = 1;
        stack.push_back(name);
        for (const auto& used : expr.names()) {
            if (derived.count(used))
                visit(used);
            else if (!free_symbols.count(used)) {
                std::vector<std::string> known(free_symbols.begin(), free_symbols.end());
                for (const auto& [other, unused] : derived)
                    known.push_back(other);
                field.fail(fmt::format("unknown symbol '{}' (known: {})", used, join(known, ", ")));
            }
        }
        stack.pop_back();
        state[name] = 2;
        order.push_back(name);
    };
    for (const auto& [name, unused] : derived)
        visit(name);
    return order;
}

std::vector<Shape> parse_shapes(const JsonReader& field, const std::vector<SymbolSpec>& symbols,
                                uint64_t seed_base)
{
    std::vector<Shape> shapes;
    std::vector<std::string> names;
    for (const auto& s : symbols)
        names.push_back(s.name);
    if (field.size() > k_max_shapes_per_list)
        field.fail(fmt::format("{} shapes; at most {} per list", field.size(), k_max_shapes_per_list));
    for (const auto& entry : field.items()) {
        Shape shape;
        std::vector<std::string> label_parts;
        for (const auto& key : entry.keys()) {
            if (key == "seed" || key == "label" || key == "flops")
                continue;
            if (std::find(names.begin(), names.end(), key) == names.end()) {
                std::string hint = closest_match(key, names);
                entry.at(key).fail(fmt::format("unknown symbol '{}'{} (known: {})", key,
                                               hint.empty() ? "" : fmt::format(", did you mean '{}'?", hint),
                                               join(names, ", ")));
            }
        }
        for (const auto& name : names) {
            if (!entry.has(name))
                entry.fail(fmt::format("missing a value for symbol '{}'", name));
            shape.sizes[name] = entry.at(name).as_int();
            label_parts.push_back(fmt::format("{}={}", name, shape.sizes[name]));
        }
        shape.seed = entry.has("seed") ? static_cast<uint64_t>(entry.at("seed").as_int())
                                       : seed_base + shapes.size();
        shape.label = entry.has("label") ? entry.at("label").as_string() : join(label_parts, ",");
        if (auto flops = entry.find("flops")) {
            shape.flops = flops->as_number();
            if (!(*shape.flops >= 0) || !std::isfinite(*shape.flops))
                flops->fail("expected a FLOP count (a finite number, at least 0)");
        }
        shapes.push_back(std::move(shape));
    }
    return shapes;
}

void check_shape_list(const JsonReader& field, const Task& task, const std::vector<Shape>& shapes)
{
    for (size_t i = 0; i < shapes.size(); ++i) {
        std::string problem = check_shape(task, shapes[i]);
        if (!problem.empty())
            field.at(i).fail(problem);
    }
}

} // namespace

std::string ProgramSlot::text() const
{
    switch (kind) {
    case Kind::input: return fmt::format("input {}", index);
    case Kind::param: return "param " + key;
    case Kind::output: return fmt::format("output {}", index);
    case Kind::none: break;
    }
    return "";
}

std::string_view intent_name(Intent intent)
{
    switch (intent) {
    case Intent::in: return "in";
    case Intent::out: return "out";
    case Intent::inout: return "inout";
    }
    return "in";
}

std::string_view dist_name(Generator::Dist dist)
{
    switch (dist) {
    case Generator::Dist::uniform: return "uniform";
    case Generator::Dist::normal: return "normal";
    case Generator::Dist::randint: return "randint";
    case Generator::Dist::bytes: return "bytes";
    case Generator::Dist::constant: return "const";
    case Generator::Dist::arange: return "arange";
    case Generator::Dist::csr: return "csr";
    case Generator::Dist::csr_cols: return "csr_cols";
    }
    return "uniform";
}

const std::vector<std::string>& known_vendor_baselines()
{
    static const std::vector<std::string> k_names = {
        "cublas_sgemm", "cublas_gemm_bf16", "cublas_saxpy", "cublas_geam_transpose",
        "cub_reduce_sum", "cub_inclusive_scan", "cub_histogram_even", "cusparse_spmv_csr"};
    return k_names;
}

ReferenceKind spec_reference_kind(std::string_view spec_text)
{
    Json spec = Json::parse(spec_text, nullptr, false);
    if (spec.is_object() && spec.contains("reference") && spec["reference"].is_object() &&
        spec["reference"].contains("torch"))
        return ReferenceKind::torch;
    return ReferenceKind::cuda;
}

std::string_view reference_kind_name(ReferenceKind kind) { return kind == ReferenceKind::torch ? "torch" : "cuda"; }

std::string baseline_label(ReferenceKind kind, std::string_view subject)
{
    if (subject == "reference" && kind == ReferenceKind::torch)
        return "torch eager";
    if (subject == "torch_compile")
        return "torch.compile";
    return std::string(subject);
}

std::string baseline_label(std::string_view reference_kind, std::string_view subject)
{
    return baseline_label(reference_kind == "torch" ? ReferenceKind::torch : ReferenceKind::cuda, subject);
}

std::string_view vendor_baseline_library(std::string_view routine)
{
    if (routine == "torch_compile")
        return "PyTorch";
    const auto& known = known_vendor_baselines();
    if (std::find(known.begin(), known.end(), routine) == known.end())
        return "";
    if (routine.rfind("cublas_", 0) == 0)
        return "cuBLAS";
    if (routine.rfind("cusparse_", 0) == 0)
        return "cuSPARSE";
    return "CUB";
}

const ArgSpec* Task::find_arg(std::string_view arg_name) const
{
    for (const auto& arg : args)
        if (arg.name == arg_name)
            return &arg;
    return nullptr;
}

ExprScope Task::scope_for(const Shape& shape) const
{
    ExprScope scope;
    for (const auto& [symbol, value] : shape.sizes)
        scope.ints[symbol] = value;
    for (const auto& [constant, value] : constants)
        scope.reals[constant] = value;
    return scope;
}

int64_t Task::element_count(const ArgSpec& arg, const Shape& shape) const
{
    if (!arg.is_tensor)
        return 1;
    ExprScope scope = scope_for(shape);
    int64_t count = 1;
    for (const auto& dim : arg.shape) {
        int64_t d = dim.eval_int(scope);
        if (__builtin_mul_overflow(count, d, &count))
            throw ExprError(fmt::format("the element count of '{}' overflows 64 bits", arg.name));
    }
    return count;
}

std::string check_shape(const Task& task, const Shape& shape)
{
    for (const auto& symbol : task.symbols) {
        auto it = shape.sizes.find(symbol.name);
        if (it == shape.sizes.end())
            return fmt::format("no value for symbol '{}'", symbol.name);
        int64_t v = it->second;
        if (v < symbol.min)
            return fmt::format("{}={} is below its minimum {}", symbol.name, v, symbol.min);
        if (symbol.max && v > *symbol.max)
            return fmt::format("{}={} is above its maximum {}", symbol.name, v, *symbol.max);
        if (v % symbol.multiple_of != 0)
            return fmt::format("{}={} is not a multiple of {}", symbol.name, v, symbol.multiple_of);
    }
    ExprScope scope = task.scope_for(shape);
    try {
        for (const auto& constraint : task.constraints)
            if (constraint.eval_int(scope) == 0)
                return fmt::format("constraint '{}' does not hold for {}", constraint.text(), shape.label);
        for (const auto& arg : task.args) {
            if (!arg.is_tensor)
                continue;
            for (size_t d = 0; d < arg.shape.size(); ++d) {
                int64_t extent = arg.shape[d].eval_int(scope);
                if (extent < 1)
                    return fmt::format("dimension {} of '{}' ({}) is {} for {}; sizes must be at least 1",
                                       d, arg.name, arg.shape[d].text(), extent, shape.label);
            }
            task.element_count(arg, shape);
        }
        if (std::string problem = check_csr_shape(task, shape); !problem.empty())
            return problem;
    } catch (const ExprError& e) {
        return e.what();
    }
    return "";
}

Task parse_task(const std::string& spec_text, const std::string& file_label,
                const std::filesystem::path& base_dir)
{
    Json json = parse_json_text(spec_text, file_label);
    JsonReader root(json, file_label);
    if (!root.is_object())
        root.fail(fmt::format("a task spec is a JSON object, found {}", json_type_name(json)));
    root.allow_only({"schema", "name", "category", "tags", "description", "symbols", "constraints",
                     "constants", "args", "reference", "default_plan", "seeds", "shapes", "roofline",
                     "baseline", "forbid", "limits"});

    Task task;
    task.spec_text = spec_text;
    std::string schema = root.at("schema").as_string();
    if (schema != k_task_schema)
        root.at("schema").fail(fmt::format("expected \"{}\", found \"{}\"", k_task_schema, schema));
    task.name = root.at("name").as_string();
    if (!is_identifier(task.name))
        root.at("name").fail("a task name is an identifier (letters, digits, _)");
    task.category = root.get_string("category", "memory");
    if (task.category != "memory" && task.category != "compute" && task.category != "irregular")
        root.at("category").fail(fmt::format("expected memory, compute or irregular, found '{}'", task.category));
    if (auto tags = root.find("tags"))
        for (const auto& tag : tags->items())
            task.tags.push_back(tag.as_string());
    task.description = root.at("description").as_string();

    // Symbols: free ones are bound by each shape; derived ones are computed from others.
    std::map<std::string, std::pair<Expr, JsonReader>> derived;
    task.symbols = parse_symbols(root.at("symbols"), derived);
    if (task.symbols.empty())
        root.at("symbols").fail("a task needs at least one free size symbol");
    std::set<std::string> symbol_names;
    for (const auto& s : task.symbols)
        symbol_names.insert(s.name);
    std::vector<std::string> derived_order = order_derived(derived, symbol_names);
    for (const auto& name : derived_order)
        task.derived_symbols.push_back({name, derived.at(name).first});
    for (const auto& [name, unused] : derived)
        symbol_names.insert(name);

    if (auto constants = root.find("constants")) {
        for (const auto& name : constants->keys()) {
            if (!is_identifier(name) || symbol_names.count(name))
                constants->at(name).fail(fmt::format("constant '{}' must be an identifier that is not a symbol", name));
            task.constants[name] = constants->at(name).as_number();
        }
    }
    std::set<std::string> scalar_names = symbol_names;
    for (const auto& [name, value] : task.constants)
        scalar_names.insert(name);

    if (auto constraints = root.find("constraints")) {
        for (const auto& entry : constraints->items()) {
            Expr expr = parse_expr(entry);
            require_integer_expr(entry, expr);
            require_names(entry, expr, symbol_names, "symbol");
            task.constraints.push_back(std::move(expr));
        }
    }

    // The reference: a CUDA kernel file, or {"torch": "problem.py"} (docs/torch-tasks.md).
    JsonReader reference = root.at("reference");
    if (reference.is_object()) {
        reference.allow_only({"torch"});
        task.reference_kind = ReferenceKind::torch;
    }

    // Arguments, in kernel-parameter order. Names come first, because a check may use
    // sum_abs_<input> of any input tensor.
    JsonReader args = root.at("args");
    if (args.size() == 0)
        args.fail("a task needs at least one argument");
    std::set<std::string> check_names = scalar_names;
    check_names.insert("max_abs_ref");
    std::set<std::string> arg_names;
    for (const auto& entry : args.items()) {
        std::string name = entry.at("name").as_string();
        if (!is_identifier(name))
            entry.at("name").fail(fmt::format("'{}' is not an identifier", name));
        if (!arg_names.insert(name).second)
            entry.at("name").fail(fmt::format("argument '{}' is declared twice", name));
        check_names.insert("sum_abs_" + name);
    }
    for (const auto& entry : args.items())
        task.args.push_back(parse_arg_spec(entry, symbol_names, scalar_names, check_names, task.constants,
                                           task.reference_kind));
    bool has_output = std::any_of(task.args.begin(), task.args.end(),
                                  [](const ArgSpec& a) { return a.is_tensor && a.intent != Intent::in; });
    if (!has_output)
        args.fail("a task needs at least one out or inout tensor");
    check_csr_links(args, task);
    if (task.is_torch())
        check_program_slots(args, task);

    // Derived symbols: shapes bind free symbols; derived values are computed into each shape.
    auto bind_derived = [&](std::vector<Shape>& shapes, const JsonReader& field) {
        for (size_t i = 0; i < shapes.size(); ++i) {
            for (const auto& name : derived_order) {
                ExprScope scope = task.scope_for(shapes[i]);
                try {
                    shapes[i].sizes[name] = derived.at(name).first.eval_int(scope);
                } catch (const ExprError& e) {
                    field.at(i).fail(fmt::format("derived symbol '{}': {}", name, e.what()));
                }
            }
        }
    };
    JsonReader shapes = root.at("shapes");
    shapes.allow_only({"tests", "bench", "held_out", "stress"});
    auto load_list = [&](std::string_view key, std::vector<Shape>& out, uint64_t seed_base, bool required) {
        auto field = shapes.find(key);
        if (!field) {
            if (required)
                shapes.fail(fmt::format("missing required field '{}'", key));
            return;
        }
        out = parse_shapes(*field, task.symbols, seed_base);
        if (required && out.empty())
            field->fail("needs at least one shape");
        bind_derived(out, *field);
        check_shape_list(*field, task, out);
    };
    load_list("tests", task.tests, 1000, true);
    load_list("bench", task.bench, 2000, true);
    load_list("held_out", task.held_out, 3000, false);
    load_list("stress", task.stress, 4000, false);

    JsonReader roofline = root.at("roofline");
    roofline.allow_only({"flops", "bytes", "peak", "may_exceed", "note"});
    task.roofline.flops = parse_expr(roofline.at("flops"));
    task.roofline.bytes = parse_expr(roofline.at("bytes"));
    require_names(roofline.at("flops"), task.roofline.flops, scalar_names, "symbol");
    require_names(roofline.at("bytes"), task.roofline.bytes, scalar_names, "symbol");
    task.roofline.peak = roofline.get_string("peak", "fp32");
    static const std::set<std::string> k_peaks = {"fp32", "fp64", "fp16_tc", "bf16_tc", "tf32_tc", "int", "none"};
    if (!k_peaks.count(task.roofline.peak))
        roofline.at("peak").fail(fmt::format("unknown peak '{}' (known: fp32, fp64, fp16_tc, bf16_tc, "
                                             "tf32_tc, int, none)",
                                             task.roofline.peak));
    task.roofline.may_exceed = roofline.get_bool("may_exceed", false);

    if (auto baseline = root.find("baseline")) {
        baseline->allow_only({"vendor"});
        if (auto vendor = baseline->find("vendor")) {
            const auto& known = known_vendor_baselines();
            for (const auto& entry : vendor->items()) {
                std::string name = entry.as_string();
                if (std::find(known.begin(), known.end(), name) == known.end())
                    entry.fail(fmt::format("unknown vendor baseline '{}' (known: {})", name, join(known, ", ")));
                task.vendor_baselines.push_back(name);
            }
        }
    }

    if (auto forbid = root.find("forbid")) {
        for (const auto& entry : forbid->items()) {
            entry.allow_only({"pattern", "reason"});
            ForbiddenPattern pattern{entry.at("pattern").as_string(), entry.at("reason").as_string()};
            std::string problem;
            if (!Regex::compile(pattern.regex, problem))
                entry.at("pattern").fail(fmt::format("not a valid RE2 regular expression: {} (tasks/README.md, "
                                                     "\"forbid\")",
                                                     problem));
            task.forbid.push_back(std::move(pattern));
        }
    }

    if (auto limits = root.find("limits")) {
        limits->allow_only({"max_launches", "max_threads_per_block", "max_dynamic_smem",
                            "max_scratch_bytes", "max_param_points"});
        task.limits.max_launches = limits->get_int("max_launches", task.limits.max_launches);
        task.limits.max_threads_per_block = limits->get_int("max_threads_per_block", task.limits.max_threads_per_block);
        task.limits.max_dynamic_smem = limits->get_int("max_dynamic_smem", task.limits.max_dynamic_smem);
        task.limits.max_param_points = limits->get_int("max_param_points", task.limits.max_param_points);
        if (auto scratch = limits->find("max_scratch_bytes")) {
            task.limits.max_scratch_bytes = parse_expr(*scratch);
            require_integer_expr(*scratch, task.limits.max_scratch_bytes);
            require_names(*scratch, task.limits.max_scratch_bytes, symbol_names, "symbol");
        }
        if (task.limits.max_launches < 1 || task.limits.max_launches > k_max_launches_limit)
            limits->at("max_launches").fail(fmt::format("expected 1 to {}", k_max_launches_limit));
        if (task.limits.max_threads_per_block < 1 || task.limits.max_threads_per_block > 1024)
            limits->at("max_threads_per_block").fail("expected 1 to 1024");
        if (task.limits.max_param_points < 1 || task.limits.max_param_points > k_max_param_points_limit)
            limits->at("max_param_points").fail(fmt::format("expected 1 to {}", k_max_param_points_limit));
        if (task.limits.max_dynamic_smem < 0 || task.limits.max_dynamic_smem > (int64_t{1} << 32) - 1)
            limits->at("max_dynamic_smem").fail("expected 0 to 4294967295 bytes");
    }

    if (auto plan = root.find("default_plan")) {
        try {
            task.default_plan = parse_plan(plan->json(), fmt::format("{}: default_plan", file_label));
        } catch (const PlanError& e) {
            fail_input("{}", e.what());
        }
        check_default_plan(*plan, task, *task.default_plan);
    }
    check_task_numbers(root, task);

    // The reference and the seeds must fit the task like any candidate.
    auto validate_kernel = [&](const JsonReader& field, const KernelFile& file) {
        try {
            validate_plan(task, file.plan, find_kernel_names(file.source));
            for (const auto& shapes_list : {&task.tests, &task.bench, &task.held_out, &task.stress})
                for (const auto& shape : *shapes_list) {
                    if (interrupt_requested())
                        fail(ErrorKind::interrupted, "interrupted while checking the task spec");
                    for (const auto& point : enumerate_param_points(file.plan, 1))
                        resolve_plan(task, file.plan, shape, point);
                }
        } catch (const PlanError& e) {
            field.fail(fmt::format("{}: {}", file.path.string(), e.what()));
        }
    };
    if (task.is_torch()) {
        task.reference = read_spec_file(reference.at("torch"), base_dir, "PyTorch program");
    } else {
        task.reference = load_kernel_file(reference, base_dir, task.default_plan, "reference");
        validate_kernel(reference, task.reference);
        // The reference is kforge's ground truth, computed by its own kernels; library steps are for
        // candidates (and seeds), whose results the reference then checks.
        for (const auto& launch : task.reference.plan.launches)
            if (launch.library)
                reference.fail(fmt::format("{}: the reference's plan has a library step ({}); a reference runs "
                                           "kernels only",
                                           task.reference.path.string(), library_op_name(launch.library->op)));
    }
    if (auto seeds = root.find("seeds")) {
        for (const auto& entry : seeds->items()) {
            task.seeds.push_back(load_kernel_file(entry, base_dir, task.default_plan, "seed"));
            validate_kernel(entry, task.seeds.back());
        }
    }

    Hasher hasher;
    hasher.add(spec_text).add(task.reference.source);
    for (const auto& seed : task.seeds)
        hasher.add(seed.source);
    task.spec_hash = hasher.hex();
    return task;
}

Task load_task(const std::filesystem::path& spec_path)
{
    std::string text = read_file(spec_path, k_max_spec_bytes, "task spec");
    Task task = parse_task(text, spec_path.string(), spec_path.parent_path());
    task.spec_path = spec_path;
    return task;
}

} // namespace kforge
