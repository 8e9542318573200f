// The spec of an imported PyTorch program, from the importer's facts. See import.hpp.
//
// What the spec decides beyond the facts, and why:
//   - every tensor dim that is not a plain symbol or a number also becomes a derived symbol
//     (`out_d2 = H - 2`), so a plan can name it;
//   - the roofline's FLOPs are the importer's per-shape counts (torch's FLOP counter), attached to
//     each shape; its bytes are the compulsory traffic (every tensor once); the peak follows the
//     program's floating dtype (fp32 has no tensor-core peak here: TF32 is not fp32);
//   - an fp32 program forbids reduced-precision types in candidates, as the bundled fp32 tasks do;
//   - the description says what to compute and the precision rules; the program itself is shown to
//     the model by the prompt (agents/prompt_sections.cpp).
#include "task/import.hpp"

#include <cctype>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/expr.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr const char* k_facts = "the importer's facts";

// The spec keeps the order a person writes it in (schema, name, ... args, shapes).
using OJson = nlohmann::ordered_json;

bool is_plain_dim(const std::string& dim, const std::set<std::string>& symbols)
{
    if (symbols.count(dim))
        return true;
    return !dim.empty() && dim.find_first_not_of("0123456789") == std::string::npos;
}

// The floating dtype that sets the precision rules: the widest-spread one among the tensors.
std::set<std::string> float_dtypes(const JsonReader& args)
{
    std::set<std::string> floats;
    for (const auto& arg : args.items()) {
        std::string dtype = arg.at("dtype").as_string();
        if (dtype == "f32" || dtype == "f64" || dtype == "bf16" || dtype == "f16")
            floats.insert(dtype);
    }
    return floats;
}

std::string main_float_dtype(const std::set<std::string>& floats)
{
    for (const char* dtype : {"f64", "f32", "bf16", "f16"})
        if (floats.count(dtype) && floats.size() == 1)
            return dtype;
    if (floats.count("f32"))
        return "f32";
    return floats.empty() ? "" : *floats.begin();
}

std::string peak_for(const std::string& dtype)
{
    if (dtype == "bf16")
        return "bf16_tc";
    if (dtype == "f16")
        return "fp16_tc";
    if (dtype == "f64")
        return "fp64";
    if (dtype == "f32")
        return "fp32";
    return "int";
}

// `reduced`: the program also has fp16 or bf16 tensors beside its fp32 ones (a cast to half on the
// way out, say), which a kernel can only read or write in those types.
std::string precision_rule(const std::string& dtype, bool reduced)
{
    if (dtype == "f32" && reduced)
        return "The program computes in fp32 and its fp16/bf16 tensors are conversions: compute in fp32 or "
               "better, converting to or from the reduced dtype only where the program does (loading and "
               "storing those tensors); accumulate in fp32 or fp64.";
    if (dtype == "f32")
        return "The program computes in fp32: compute in fp32 or better (no TF32, fp16 or bf16 arithmetic, "
               "including tensor-core TF32); accumulate in fp32 or fp64.";
    if (dtype == "f64")
        return "The program computes in fp64: compute in fp64.";
    if (dtype == "bf16" || dtype == "f16")
        return fmt::format("The program's tensors are {}: reduced-precision arithmetic and tensor cores are "
                           "allowed; accumulate in fp32.",
                           dtype);
    return "Integer results must be exact.";
}

std::string slot_text(const JsonReader& arg)
{
    std::string role = arg.at("role").as_string();
    if (role == "param")
        return "param " + arg.at("key").as_string();
    if (role == "input" || role == "output")
        return fmt::format("{} {}", role, arg.at("index").as_int());
    arg.at("role").fail(fmt::format("expected input, param or output, found '{}'", role));
}

// Shape entries with the symbols in the facts' order (then any other key), each with its FLOP count.
OJson shape_entries(const JsonReader& list, const JsonReader& facts, const std::vector<std::string>& order)
{
    OJson out = OJson::array();
    for (const auto& entry : list.items()) {
        OJson shape = OJson::object();
        for (const auto& name : order)
            if (entry.has(name))
                shape[name] = entry.at(name).as_int();
        for (const auto& key : entry.keys())
            if (!shape.contains(key))
                shape[key] = entry.at(key).as_int();
        if (auto flops = facts.find("flops"))
            for (const auto& counted : flops->items())
                if (counted.at("shape").json() == entry.json())
                    shape["flops"] = counted.at("flops").as_number();
        out.push_back(shape);
    }
    return out;
}

} // namespace

std::string task_name_from_stem(const std::string& stem)
{
    std::string name;
    for (char c : stem)
        name += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front())))
        name = "p_" + name;
    return name;
}

OJson spec_from_facts(const Json& facts_json, const SpecFromFacts& options)
{
    JsonReader facts(facts_json, k_facts);
    JsonReader args = facts.at("args");
    std::set<std::string> symbols;
    OJson symbol_specs = OJson::object();
    std::vector<std::string> symbol_order;
    JsonReader module_vars = facts.at("module_vars");
    // Importers before tuple-element symbols wrote no "tuple_elements"; their symbols are all variables.
    std::optional<JsonReader> tuple_elements = facts.find("tuple_elements");
    for (const auto& symbol : facts.at("symbols").items()) {
        std::string name = symbol.as_string();
        symbols.insert(name);
        symbol_order.push_back(name);
        std::string value = module_vars.has(name) ? module_vars.at(name).json().dump() : "?";
        std::string doc = fmt::format("module variable {} ({} in the file)", name, value);
        if (tuple_elements && tuple_elements->has(name)) {
            JsonReader element = tuple_elements->at(name);
            doc = fmt::format("element {} of the module tuple {} ({} in the file)", element.at(size_t{1}).as_int(),
                              element.at(size_t{0}).as_string(), value);
        }
        symbol_specs[name] = OJson{{"min", 1}, {"doc", doc}};
    }
    if (symbols.empty())
        facts.at("symbols").fail("the program has no size symbols (no int module variable sets a forward input's "
                                 "shape); name them with --symbols");

    OJson spec_args = OJson::array();
    std::set<std::string> derived_names;
    for (const auto& arg : args.items()) {
        std::string name = arg.at("name").as_string();
        std::string kind = arg.get_string("kind", "tensor");
        std::string role = arg.at("role").as_string();
        OJson entry{{"name", name}, {"dtype", arg.at("dtype").as_string()}, {"from", slot_text(arg)}};
        if (kind == "scalar") {
            entry["value"] = arg.at("value").as_expr_text();
            spec_args.push_back(entry);
            continue;
        }
        OJson dims = OJson::array();
        size_t index = 0;
        for (const auto& dim : arg.at("dims").items()) {
            std::string text = dim.as_expr_text();
            dims.push_back(text);
            if (!is_plain_dim(text, symbols)) {
                std::string derived = fmt::format("{}_d{}", name, index);
                if (!symbols.count(derived) && derived_names.insert(derived).second)
                    symbol_specs[derived] = OJson{{"value", text}, {"doc", fmt::format("dim {} of '{}'", index, name)}};
            }
            ++index;
        }
        entry["shape"] = dims;
        if (arg.get_bool("zero_dim", false))
            entry["zero_dim"] = true;
        if (role == "param")
            entry["doc"] = "the model's state_dict entry " + arg.at("key").as_string();
        if (role == "output") {
            entry["intent"] = "out";
            JsonReader check = facts.at("checks").at(name);
            OJson spec_check = OJson::object();
            if (check.get_string("metric", "allclose") == "exact")
                spec_check["metric"] = "exact";
            else
                spec_check = OJson{{"atol", check.at("atol").as_expr_text()}, {"rtol", check.at("rtol").as_expr_text()}};
            entry["check"] = spec_check;
        }
        spec_args.push_back(entry);
    }

    JsonReader shapes = facts.at("shapes");
    OJson spec_shapes{{"tests", shape_entries(shapes.at("tests"), facts, symbol_order)},
                     {"bench", shape_entries(shapes.at("bench"), facts, symbol_order)}};
    if (auto held_out = shapes.find("held_out"))
        spec_shapes["held_out"] = shape_entries(*held_out, facts, symbol_order);

    std::set<std::string> floats = float_dtypes(args);
    std::string dtype = main_float_dtype(floats);
    // fp16/bf16 tensors beside fp32 ones: kernels must read or write those types, so the fp32 rule
    // cannot forbid them (it still says to compute in fp32; the tolerance measured on the program
    // holds them to it).
    bool reduced = floats.count("f16") || floats.count("bf16");
    std::string bytes = facts.at("bytes").as_expr_text();
    bool counted = facts.has("flops") && facts.at("flops").size() > 0;
    OJson roofline{{"flops", "0"},
                  {"bytes", bytes},
                  {"peak", peak_for(dtype)},
                  {"note", counted ? "FLOPs per shape from torch's FLOP counter (matmuls, convolutions, attention); "
                                     "bytes: every input, parameter and output once"
                                   : "bytes: every input, parameter and output once; FLOPs not counted (this "
                                     "PyTorch has no FLOP counter), so the floor is the memory traffic alone"}};

    // Compute-bound when the counted work outweighs the traffic by far at the first bench shape (an
    // H100 balances at about 20 fp32 FLOP per byte of DRAM traffic).
    std::string category = "memory";
    const OJson& first_bench = spec_shapes["bench"].front();
    if (first_bench.contains("flops")) {
        ExprScope scope;
        for (const auto& [key, value] : first_bench.items())
            if (key != "flops")
                scope.ints[key] = value.get<int64_t>();
        try {
            double traffic = Expr::parse(bytes).eval_real(scope);
            if (traffic > 0 && first_bench["flops"].get<double>() / traffic > 20)
                category = "compute";
        } catch (const ExprError& e) {
            facts.at("bytes").fail(fmt::format("cannot be evaluated at the bench shape: {}", e.what()));
        }
    }

    std::string source_name = std::filesystem::path(facts.at("problem").as_string()).filename().string();
    // How the model's mode (training, as KernelBench runs it) shows in its BatchNorm and dropout modules;
    // empty where no module's forward depends on it (facts of older importers have no "mode").
    std::string mode = facts.get_string("mode", "");
    OJson spec{{"schema", "kforge.task/1"},
              {"name", options.name},
              {"category", category},
              {"tags", OJson::array({"pytorch", "imported"})},
              {"description",
               fmt::format("Imported from the PyTorch program {} (KernelBench form). Compute what Model.forward "
                           "returns for the inputs get_inputs() makes, with the model built from "
                           "get_init_inputs(): its parameters, buffers and tensor attributes are the tensors "
                           "named after them (as state_dict names them). {}Every tensor is contiguous and "
                           "row-major in the dtype listed; outputs are checked against the program computed in "
                           "fp64 within the tolerances listed. {}",
                           source_name, mode.empty() ? "" : mode + " ", precision_rule(dtype, reduced))},
              {"symbols", symbol_specs},
              {"args", spec_args},
              {"reference", OJson{{"torch", options.reference_file}}},
              {"shapes", spec_shapes},
              {"roofline", roofline},
              {"limits", OJson{{"max_launches", 32}, {"max_scratch_bytes", fmt::format("({}) + 1073741824", bytes)}}}};
    if (dtype == "f32" && !reduced)
        spec["forbid"] = OJson::array(
            {OJson{{"pattern", "__half|__nv_bfloat16|half2|__float2half|__float2bfloat16|tf32"},
                  {"reason", "an fp32 program: reduced-precision arithmetic (fp16, bf16, TF32) is not allowed"}}});
    return spec;
}

std::vector<std::string> describe_facts(const Json& facts_json)
{
    JsonReader facts(facts_json, k_facts);
    std::vector<std::string> lines;
    std::vector<std::string> symbols;
    for (const auto& s : facts.at("symbols").items())
        symbols.push_back(s.as_string());
    lines.push_back(fmt::format("size symbols: {} ({})", join(symbols, ", "),
                                facts.get_string("symbol_rule", "chosen by --symbols")));
    auto shape_text = [](const JsonReader& shape) {
        std::vector<std::string> parts;
        for (const auto& key : shape.keys())
            parts.push_back(fmt::format("{}={}", key, shape.at(key).as_int()));
        return join(parts, ",");
    };
    JsonReader shapes = facts.at("shapes");
    for (const char* set : {"bench", "tests", "held_out"}) {
        auto list = shapes.find(set);
        if (!list)
            continue;
        std::vector<std::string> texts;
        for (const auto& shape : list->items())
            texts.push_back(shape_text(shape));
        lines.push_back(fmt::format("{} shapes: {}", std::string_view(set) == "held_out" ? "held-out" : set,
                                    join(texts, "; ")));
    }
    for (const auto& arg : facts.at("args").items()) {
        std::string where = slot_text(arg);
        if (arg.get_string("kind", "tensor") == "scalar") {
            lines.push_back(fmt::format("arg {}: {} scalar = {} ({})", arg.at("name").as_string(),
                                        arg.at("dtype").as_string(), arg.at("value").as_expr_text(), where));
            continue;
        }
        std::vector<std::string> dims;
        for (const auto& dim : arg.at("dims").items())
            dims.push_back(dim.as_expr_text());
        lines.push_back(fmt::format("arg {}: {} [{}] ({})", arg.at("name").as_string(), arg.at("dtype").as_string(),
                                    join(dims, ", "), where));
    }
    JsonReader checks = facts.at("checks");
    for (const auto& name : checks.keys()) {
        JsonReader check = checks.at(name);
        if (check.get_string("metric", "allclose") == "exact") {
            lines.push_back(fmt::format("check {}: exact", name));
            continue;
        }
        std::string measured;
        if (auto m = check.find("measured"))
            measured = fmt::format(" (measured at {}: max |own dtype - fp64| {:.3g}, max |fp64| {:.3g})",
                                   m->has("shape") ? shape_text(m->at("shape")) : "?",
                                   m->get_number("max_abs_err", 0), m->get_number("max_abs_ref", 0));
        lines.push_back(fmt::format("check {}: atol {}, rtol {}{}", name, check.at("atol").as_expr_text(),
                                    check.at("rtol").as_expr_text(), measured));
    }
    bool counted = facts.has("flops") && facts.at("flops").size() > 0;
    lines.push_back(fmt::format("roofline: bytes {}; FLOPs {}", facts.at("bytes").as_expr_text(),
                                counted ? "per shape from torch's FLOP counter" : "not counted (no FLOP counter)"));
    if (auto notes = facts.find("notes"))
        for (const auto& note : notes->items())
            lines.push_back("note: " + note.as_string());
    return lines;
}

} // namespace kforge
