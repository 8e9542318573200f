// Parsing a task's args (see task/parse.hpp): tensors and scalars, the generators that fill
// inputs (CSR structure included) and the checks that judge outputs, each error at its JSON path.
#include <algorithm>

#include <fmt/format.h>

#include "core/task/csr.hpp"
#include "core/task/parse.hpp"
#include "util/text.hpp"

namespace kforge::task_parse {

bool is_identifier(std::string_view name)
{
    if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
        return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
}

Expr parse_expr(const JsonReader& field)
{
    try {
        return Expr::parse(field.as_expr_text());
    } catch (const ExprError& e) {
        field.fail(e.what());
    }
}

// Fails at `field` when `expr` mentions a name outside `known`.
void require_names(const JsonReader& field, const Expr& expr, const std::set<std::string>& known,
                   std::string_view what)
{
    for (const auto& name : expr.names()) {
        if (known.count(name))
            continue;
        std::vector<std::string> list(known.begin(), known.end());
        std::string hint = closest_match(name, list);
        field.fail(fmt::format("unknown {} '{}'{} (known: {})", what, name,
                               hint.empty() ? "" : fmt::format(", did you mean '{}'?", hint),
                               list.empty() ? "none" : join(list, ", ")));
    }
}

void require_integer_expr(const JsonReader& field, const Expr& expr)
{
    if (expr.needs_real())
        field.fail(fmt::format("'{}' must be an integer expression (no decimals, sqrt, abs or log2)",
                               expr.text()));
}

namespace {

// The CSR fields of a generator (see CsrSpec): only with their distribution, integer tensors only.
void parse_csr_fields(const JsonReader& field, Generator& gen, const std::set<std::string>& symbols,
                      DType dtype)
{
    bool is_csr = gen.dist == Generator::Dist::csr;
    for (std::string_view key : {"cols", "sigma", "band", "group"})
        if (!is_csr && field.has(key))
            field.at(key).fail(fmt::format("'{}' applies to the 'csr' distribution only", key));
    if (gen.dist != Generator::Dist::csr_cols && field.has("of"))
        field.at("of").fail("'of' applies to the 'csr_cols' distribution only");
    if (!is_csr && gen.dist != Generator::Dist::csr_cols)
        return;
    if (dtype != DType::i32 && dtype != DType::i64)
        field.at("dist").fail(fmt::format("'{}' fills i32 or i64 tensors, found {}", dist_name(gen.dist),
                                          dtype_name(dtype)));
    if (field.has("plants"))
        field.at("plants").fail("a CSR structure takes no plants");
    if (!is_csr) {
        gen.of = field.at("of").as_string();
        return;
    }
    auto expr_field = [&](std::string_view key, std::string_view fallback, bool integer) {
        Expr expr = field.has(key) ? parse_expr(field.at(key)) : Expr::parse(fallback);
        if (field.has(key)) {
            if (integer)
                require_integer_expr(field.at(key), expr);
            require_names(field.at(key), expr, symbols, "symbol");
        }
        return expr;
    };
    CsrSpec csr;
    csr.cols = parse_expr(field.at("cols"));
    require_integer_expr(field.at("cols"), csr.cols);
    require_names(field.at("cols"), csr.cols, symbols, "symbol");
    csr.sigma = expr_field("sigma", "0", false);
    csr.band = field.has("band") ? expr_field("band", "", true) : csr.cols;
    csr.group = expr_field("group", "4096", true);
    gen.csr = std::move(csr);
}

Generator parse_generator(const JsonReader& field, const std::set<std::string>& symbols, DType dtype)
{
    Generator gen;
    field.allow_only({"dist", "low", "high", "mean", "std", "value", "hot_fraction", "plants", "cols",
                      "sigma", "band", "group", "of"});
    std::string dist = field.at("dist").as_string();
    static const std::vector<std::pair<std::string, Generator::Dist>> k_dists = {
        {"uniform", Generator::Dist::uniform}, {"normal", Generator::Dist::normal},
        {"randint", Generator::Dist::randint}, {"bytes", Generator::Dist::bytes},
        {"const", Generator::Dist::constant},  {"arange", Generator::Dist::arange},
        {"csr", Generator::Dist::csr},         {"csr_cols", Generator::Dist::csr_cols}};
    auto it = std::find_if(k_dists.begin(), k_dists.end(), [&](auto& d) { return d.first == dist; });
    if (it == k_dists.end())
        field.at("dist").fail(fmt::format("unknown distribution '{}' (known: uniform, normal, randint, "
                                          "bytes, const, arange, csr, csr_cols)",
                                          dist));
    gen.dist = it->second;
    parse_csr_fields(field, gen, symbols, dtype);
    gen.low = field.get_number("low", gen.dist == Generator::Dist::randint ? 0 : -1);
    gen.high = field.get_number("high", gen.dist == Generator::Dist::randint ? 100 : 1);
    gen.mean = field.get_number("mean", 0);
    gen.std = field.get_number("std", 1);
    gen.value = field.get_number("value", 0);
    if ((gen.dist == Generator::Dist::uniform || gen.dist == Generator::Dist::randint) && !(gen.low < gen.high))
        field.fail(fmt::format("needs low < high, found low {} and high {}", gen.low, gen.high));
    if (gen.dist == Generator::Dist::normal && !(gen.std > 0))
        field.at("std").fail("std must be positive");
    if (gen.dist == Generator::Dist::bytes && dtype != DType::u8 && dtype != DType::i8)
        field.at("dist").fail("'bytes' fills u8 or i8 tensors only");
    if (gen.dist == Generator::Dist::randint && dtype_is_float(dtype))
        field.at("dist").fail("'randint' fills integer tensors; use 'uniform' for floats");
    if (auto hot = field.find("hot_fraction")) {
        if (gen.dist != Generator::Dist::bytes)
            hot->fail("'hot_fraction' applies to the 'bytes' distribution only");
        gen.hot_fraction = parse_expr(*hot);
        require_names(*hot, *gen.hot_fraction, symbols, "symbol");
    }
    if (auto plants = field.find("plants")) {
        for (const auto& entry : plants->items()) {
            entry.allow_only({"at", "value"});
            Plant plant{parse_expr(entry.at("at")), entry.at("value").as_number()};
            require_integer_expr(entry.at("at"), plant.at);
            require_names(entry.at("at"), plant.at, symbols, "symbol");
            gen.plants.push_back(std::move(plant));
        }
    }
    return gen;
}

CheckSpec parse_check(const JsonReader& field, const std::set<std::string>& known)
{
    field.allow_only({"metric", "atol", "rtol"});
    CheckSpec check;
    std::string metric = field.get_string("metric", "allclose");
    if (metric == "exact") {
        check.metric = CheckSpec::Metric::exact;
        if (field.has("atol") || field.has("rtol"))
            field.fail("an 'exact' check takes no atol or rtol");
        check.atol = Expr::constant(0);
        check.rtol = Expr::constant(0);
        return check;
    }
    if (metric != "allclose")
        field.at("metric").fail(fmt::format("unknown metric '{}' (known: allclose, exact)", metric));
    check.atol = parse_expr(field.at("atol"));
    check.rtol = parse_expr(field.at("rtol"));
    require_names(field.at("atol"), check.atol, known, "name");
    require_names(field.at("rtol"), check.rtol, known, "name");
    return check;
}

ProgramSlot parse_slot(const JsonReader& field)
{
    std::string text = field.as_string();
    auto space = text.find(' ');
    std::string kind = text.substr(0, space);
    std::string rest = space == std::string::npos ? "" : text.substr(space + 1);
    ProgramSlot slot;
    if (kind == "param" && !rest.empty()) {
        slot.kind = ProgramSlot::Kind::param;
        slot.key = rest;
        return slot;
    }
    if ((kind == "input" || kind == "output") && !rest.empty() &&
        rest.find_first_not_of("0123456789") == std::string::npos && rest.size() <= 6) {
        slot.kind = kind == "input" ? ProgramSlot::Kind::input : ProgramSlot::Kind::output;
        slot.index = std::stoll(rest);
        return slot;
    }
    field.fail(fmt::format("expected \"input N\", \"param KEY\" or \"output N\", found '{}'", text));
}

} // namespace

ArgSpec parse_arg_spec(const JsonReader& entry, const std::set<std::string>& symbol_names,
                       const std::set<std::string>& scalar_names, const std::set<std::string>& check_names,
                       const std::map<std::string, double, std::less<>>& constants, ReferenceKind reference)
{
    entry.allow_only({"name", "kind", "dtype", "shape", "intent", "gen", "check", "value", "doc", "from", "zero_dim"});
    bool program = reference == ReferenceKind::torch;
    if (auto from = entry.find("from")) {
        if (!program)
            from->fail("'from' ties an argument to a PyTorch program; this task's reference is a CUDA kernel");
    }
    ArgSpec arg;
    arg.name = entry.at("name").as_string();
    std::string kind = entry.get_string("kind", entry.has("shape") ? "tensor" : "scalar");
    if (kind != "tensor" && kind != "scalar")
        entry.at("kind").fail(fmt::format("expected tensor or scalar, found '{}'", kind));
    arg.is_tensor = kind == "tensor";
    std::string dtype = entry.at("dtype").as_string();
    auto parsed_dtype = parse_dtype(dtype);
    if (!parsed_dtype)
        entry.at("dtype").fail(fmt::format("unknown dtype '{}' (known: {})", dtype, dtype_names()));
    arg.dtype = *parsed_dtype;

    if (auto from = entry.find("from"))
        arg.from = parse_slot(*from);

    if (!arg.is_tensor) {
        if (entry.has("shape") || entry.has("gen") || entry.has("check") || entry.has("intent"))
            entry.fail("a scalar takes only name, dtype and value");
        if (arg.from.kind != ProgramSlot::Kind::none && arg.from.kind != ProgramSlot::Kind::input)
            entry.at("from").fail("a scalar can only be one of forward()'s inputs (\"input N\")");
        JsonReader value = entry.at("value");
        arg.value = parse_expr(value);
        require_names(value, arg.value, scalar_names, "symbol or constant");
        if (!dtype_is_float(arg.dtype))
            require_integer_expr(value, arg.value);
        return arg;
    }

    if (symbol_names.count(arg.name) || constants.count(arg.name))
        entry.at("name").fail(fmt::format("tensor '{}' has the name of a symbol or constant", arg.name));
    JsonReader shape = entry.at("shape");
    if (shape.size() == 0)
        shape.fail("a tensor needs at least one dimension");
    for (const auto& dim : shape.items()) {
        Expr expr = parse_expr(dim);
        require_integer_expr(dim, expr);
        require_names(dim, expr, symbol_names, "symbol");
        arg.shape.push_back(std::move(expr));
    }
    if (auto zero_dim = entry.find("zero_dim")) {
        arg.zero_dim = zero_dim->as_bool();
        if (arg.zero_dim && !program)
            zero_dim->fail("'zero_dim' describes a PyTorch program's 0-dim tensor; this task's reference is a "
                           "CUDA kernel");
        auto one = [](const Expr& dim) {
            return dim.nodes().size() == 1 && dim.nodes()[0].op == Expr::Op::number && dim.nodes()[0].integer == 1;
        };
        if (arg.zero_dim && (arg.shape.size() != 1 || !one(arg.shape[0])))
            zero_dim->fail("a 0-dim tensor holds one element: its shape must be [1]");
    }
    std::string intent = entry.get_string("intent", "in");
    if (intent == "in")
        arg.intent = Intent::in;
    else if (intent == "out")
        arg.intent = Intent::out;
    else if (intent == "inout")
        arg.intent = Intent::inout;
    else
        entry.at("intent").fail(fmt::format("expected in, out or inout, found '{}'", intent));
    if (entry.has("value"))
        entry.at("value").fail("a tensor takes 'gen', not 'value'");

    if (program) {
        if (arg.from.kind == ProgramSlot::Kind::none)
            entry.fail(fmt::format("tensor '{}' needs 'from' (\"input N\", \"param KEY\" or \"output N\"): "
                                   "the task's reference is a PyTorch program, which makes every tensor",
                                   arg.name));
        if (entry.has("gen"))
            entry.at("gen").fail("the PyTorch program makes this tensor; it takes no 'gen'");
        if (arg.intent == Intent::inout)
            entry.at("intent").fail("a PyTorch program's tensors are inputs or outputs, not inout");
        bool output = arg.from.kind == ProgramSlot::Kind::output;
        if (output != (arg.intent == Intent::out))
            entry.at(entry.has("intent") ? "intent" : "from")
                .fail(fmt::format("'{}' is {} but its intent is {}", arg.from.text(),
                                  output ? "an output of the program" : "made by the program before the forward",
                                  intent_name(arg.intent)));
    } else if (arg.intent == Intent::out) {
        if (entry.has("gen"))
            entry.at("gen").fail("an output tensor is written by the kernel; it takes no 'gen'");
    } else if (auto gen = entry.find("gen")) {
        arg.gen = parse_generator(*gen, symbol_names, arg.dtype);
    } else if (!dtype_is_float(arg.dtype)) {
        arg.gen.dist = Generator::Dist::randint;
        arg.gen.low = 0;
        arg.gen.high = 100;
    }

    if (arg.intent == Intent::in) {
        if (entry.has("check"))
            entry.at("check").fail("an input tensor is not checked; 'check' belongs on out/inout");
        return arg;
    }
    if (!entry.has("check"))
        entry.fail(fmt::format("output '{}' needs a 'check' (e.g. {{\"atol\": 1e-5, \"rtol\": 1e-5}} "
                               "or {{\"metric\": \"exact\"}})",
                               arg.name));
    arg.check = parse_check(entry.at("check"), check_names);
    if (!dtype_is_float(arg.dtype) && arg.check->metric != CheckSpec::Metric::exact)
        entry.at("check").fail("integer outputs are checked with {\"metric\": \"exact\"}");
    return arg;
}

void check_program_slots(const JsonReader& args, const Task& task)
{
    std::vector<std::set<int64_t>> seen(2);
    std::set<std::string> keys;
    for (size_t i = 0; i < task.args.size(); ++i) {
        const ProgramSlot& slot = task.args[i].from;
        if (slot.kind == ProgramSlot::Kind::param && !keys.insert(slot.key).second)
            args.at(i).at("from").fail(fmt::format("'{}' is named twice", slot.text()));
        if (slot.kind == ProgramSlot::Kind::input || slot.kind == ProgramSlot::Kind::output) {
            auto& set = seen[slot.kind == ProgramSlot::Kind::output];
            if (!set.insert(slot.index).second)
                args.at(i).at("from").fail(fmt::format("'{}' is named twice", slot.text()));
        }
    }
    for (int output = 0; output < 2; ++output) {
        const auto& set = seen[static_cast<size_t>(output)];
        for (int64_t n = 0; n < static_cast<int64_t>(set.size()); ++n)
            if (!set.count(n))
                args.fail(fmt::format("no argument is the program's {} {} (every {} from 0 on needs one)",
                                      output ? "output" : "input", n, output ? "output" : "input"));
    }
    if (seen[1].empty())
        args.fail("no argument is one of the program's outputs (\"from\": \"output 0\")");
}

} // namespace kforge::task_parse
