// generate_torch_op(): the exported plan as the PyTorch operator kforge::<task>.
//
// The operator is a thin layer over the launcher (launcher.cpp). It checks each input
// tensor (CUDA, one device, the task's dtype, rank and contiguity), reads the size symbols off the
// tensors' shapes where a dimension is a bare symbol, checks every other dimension against the
// task's shape expressions, allocates the outputs and the workspace with PyTorch's caching
// allocator and runs the launcher on the current stream. `out` arguments are returned; `inout`
// ones are mutated in place and declared so (Tensor(a!)). Scalars that are sizes come from the
// shapes; a size no input tensor shows (jacobi's T) and floating-point scalars (eps, alpha, with
// the task's value as default) are the operator's arguments.
//
// Library steps run inside the launcher, which calls cuBLASLt and cuDNN itself (library_code.cpp),
// the libraries PyTorch already links. ATen's at::addmm or at::convolution would be shorter to
// write but choose their own algorithms (and, for fp32, follow torch's TF32 flags), so the operator
// would no longer run what kforge measured; the launcher's calls pick the same algorithm kforge
// timed and never use TF32 for fp32, whatever torch.backends says. The loader links them.
//
// Registration uses TORCH_LIBRARY_FRAGMENT, so several exports (softmax, layernorm, ...) can live
// in one process under the one `kforge` namespace.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "export/host_code.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

struct TorchType
{
    const char* scalar_type; // at::kFloat
    const char* name;        // torch.float32
};

TorchType torch_type(DType dtype)
{
    switch (dtype) {
    case DType::f16: return {"at::kHalf", "torch.float16"};
    case DType::bf16: return {"at::kBFloat16", "torch.bfloat16"};
    case DType::f32: return {"at::kFloat", "torch.float32"};
    case DType::f64: return {"at::kDouble", "torch.float64"};
    case DType::i8: return {"at::kChar", "torch.int8"};
    case DType::u8: return {"at::kByte", "torch.uint8"};
    case DType::i16: return {"at::kShort", "torch.int16"};
    case DType::u16: return {"at::kUInt16", "torch.uint16"};
    case DType::i32: return {"at::kInt", "torch.int32"};
    case DType::u32: return {"at::kUInt32", "torch.uint32"};
    case DType::i64: return {"at::kLong", "torch.int64"};
    case DType::u64: return {"at::kUInt64", "torch.uint64"};
    }
    return {"", ""};
}

// "[M, N]"
std::string shape_text(const ArgSpec& arg)
{
    std::vector<std::string> dims;
    for (const auto& dim : arg.shape)
        dims.push_back(dim.text());
    return "[" + join(dims, ", ") + "]";
}

std::string format_default(double value)
{
    std::string text = fmt::format("{}", value);
    if (text.find_first_of(".eEn") == std::string::npos)
        text += ".0";
    return text;
}

// The operator's interface: which tensors come in, which scalars are its arguments, what it
// returns, and where each free symbol comes from.
class TorchOp
{
public:
    explicit TorchOp(const LauncherSource& source)
        : m_task(source.task), m_sig(source.signature), m_op("kforge::" + source.task.name)
    {
        for (const auto& arg : m_task.args)
            if (arg.is_tensor && arg.intent == Intent::out)
                ++m_outputs;
        for (const auto& launch : source.plan.launches)
            if (launch.library)
                for (const auto& operand : launch.library->operands)
                    m_step_operands.insert(operand.name);
        bind_symbols();
    }

    std::string schema() const
    {
        std::vector<std::string> params;
        char alias = 'a';
        for (const auto& arg : m_task.args)
            if (arg.is_tensor && arg.intent != Intent::out)
                params.push_back(arg.intent == Intent::inout
                                     ? fmt::format("Tensor({}!) {}", alias++, arg.name)
                                     : "Tensor " + arg.name);
        for (const auto& name : m_int_args)
            params.push_back("int " + name);
        for (const auto& [name, fallback] : real_args())
            params.push_back(fallback.empty() ? "float " + name
                                              : fmt::format("float {}={}", name, fallback));
        std::vector<std::string> returns;
        for (const auto& arg : m_task.args)
            if (arg.is_tensor && arg.intent == Intent::out)
                returns.push_back("Tensor");
        std::string result = returns.size() == 1 ? "Tensor" : "(" + join(returns, ", ") + ")";
        return fmt::format("{}({}) -> {}", m_task.name, join(params, ", "), result);
    }

    std::string code() const
    {
        std::string detail = m_sig.function + "_detail";
        std::string out = fmt::format("// ---- host: the PyTorch operator {} ----\n", m_op);
        out += fmt::format("namespace {} {{\nnamespace {{\n\n// {}\n{} torch_op({})\n{{\n", detail,
                           schema(), return_type(), cpp_parameters());
        out += "    Eval kf_state;\n    Eval* e = &kf_state;\n    (void)e;\n";
        write_tensor_checks(out);
        write_symbols(out);
        write_dimension_checks(out);
        write_launch(out);
        out += fmt::format("}}\n\n}} // namespace\n}} // namespace {}\n\n", detail);
        out += fmt::format("TORCH_LIBRARY_FRAGMENT(kforge, m)\n{{\n    m.def({});\n}}\n\n",
                           c_string(schema()));
        out += fmt::format("TORCH_LIBRARY_IMPL(kforge, CUDA, m)\n{{\n    m.impl({}, &{}::torch_op);"
                           "\n}}\n",
                           c_string(m_task.name), detail);
        return out;
    }

    // The operator's arguments in schema order as Python expressions over `inputs` (what forward
    // received) and `state` (the model's state_dict), for ModelNew.forward (imported tasks).
    std::vector<std::string> python_arguments() const
    {
        std::vector<std::string> out;
        auto from_program = [](const ArgSpec& arg) -> std::string {
            switch (arg.from.kind) {
            case ProgramSlot::Kind::input: return fmt::format("inputs[{}]", arg.from.index);
            case ProgramSlot::Kind::param: return fmt::format("state[{}]", c_string(arg.from.key));
            default: return "";
            }
        };
        for (const auto& arg : m_task.args)
            if (arg.is_tensor && arg.intent != Intent::out)
                out.push_back(fmt::format("_contiguous({})", from_program(arg)));
        for (const auto& name : m_int_args)
            out.push_back(fmt::format("int(_PROBLEM.{})", name)); // a size no tensor shows: the file's value
        for (const auto& [name, fallback] : real_args()) {
            const ArgSpec* arg = m_task.find_arg(name);
            std::string value = arg && arg->from.kind == ProgramSlot::Kind::input ? from_program(*arg) : fallback;
            out.push_back(fmt::format("float({})", value));
        }
        return out;
    }

private:
    // Float scalars and their defaults ("" when the value depends on the sizes).
    std::vector<std::pair<std::string, std::string>> real_args() const
    {
        std::vector<std::pair<std::string, std::string>> required, defaulted;
        for (const auto& arg : m_task.args) {
            if (arg.is_tensor || !dtype_is_float(arg.dtype))
                continue;
            if (auto value = constant_value(m_task, arg.value))
                defaulted.push_back({arg.name, format_default(*value)});
            else
                required.push_back({arg.name, ""});
        }
        required.insert(required.end(), defaulted.begin(), defaulted.end());
        return required;
    }

    std::string return_type() const
    {
        if (m_outputs == 0)
            return "void";
        if (m_outputs == 1)
            return "at::Tensor";
        std::vector<std::string> types(m_outputs, "at::Tensor");
        return "std::tuple<" + join(types, ", ") + ">";
    }

    std::string cpp_parameters() const
    {
        std::vector<std::string> params;
        for (const auto& arg : m_task.args)
            if (arg.is_tensor && arg.intent != Intent::out)
                params.push_back("const at::Tensor& " + arg.name);
        for (const auto& name : m_int_args)
            params.push_back("int64_t " + name);
        for (const auto& [name, fallback] : real_args())
            params.push_back("double " + name);
        return join(params, ", ");
    }

    // A dimension of the form `S`, `S + c`, `c + S` or `S - c`: the symbol and c (negated for -).
    static std::optional<std::pair<std::string, int64_t>> symbol_plus_constant(const Expr& dim)
    {
        const auto& n = dim.nodes();
        if (n.size() == 1 && n[0].op == Expr::Op::name)
            return std::pair{n[0].name, int64_t{0}};
        if (n.size() != 3 || (n[2].op != Expr::Op::add && n[2].op != Expr::Op::sub))
            return std::nullopt;
        if (n[0].op == Expr::Op::name && n[1].op == Expr::Op::number)
            return std::pair{n[0].name, n[2].op == Expr::Op::add ? n[1].integer : -n[1].integer};
        if (n[2].op == Expr::Op::add && n[0].op == Expr::Op::number && n[1].op == Expr::Op::name)
            return std::pair{n[1].name, n[0].integer};
        return std::nullopt;
    }

    // Free symbols from dimensions of input tensors that are a bare symbol (N) or a symbol plus
    // a constant (row_ptr's R + 1), bare ones first; the rest from int arguments.
    void bind_symbols()
    {
        for (bool bare_only : {true, false})
            for (const auto& arg : m_task.args) {
                if (!arg.is_tensor || arg.intent == Intent::out)
                    continue;
                if (m_first_input.empty())
                    m_first_input = arg.name;
                if (arg.zero_dim) // its one dimension is the constant 1, and the tensor has no size(0)
                    continue;
                for (size_t d = 0; d < arg.shape.size(); ++d) {
                    auto term = symbol_plus_constant(arg.shape[d]);
                    if (!term || (bare_only && term->second != 0) || !is_free_size(term->first) ||
                        m_source.count(term->first))
                        continue;
                    std::string size = fmt::format("{}.size({})", arg.name, d);
                    m_source[term->first] =
                        term->second == 0 ? size
                                          : fmt::format("({} - ({}))", size, term->second);
                }
            }
        for (const auto& size : m_sig.sizes)
            if (!m_source.count(size.symbol)) {
                m_source[size.symbol] = size.name;
                m_int_args.push_back(size.name);
            }
    }

    bool is_free_size(const std::string& name) const
    {
        return std::any_of(m_sig.sizes.begin(), m_sig.sizes.end(),
                           [&](const SizeParam& s) { return s.symbol == name; });
    }

    void write_tensor_checks(std::string& out) const
    {
        for (const auto& arg : m_task.args) {
            if (!arg.is_tensor || arg.intent == Intent::out)
                continue;
            TorchType type = torch_type(arg.dtype);
            const std::string& t = arg.name;
            out += fmt::format("    TORCH_CHECK({0}.is_cuda(), \"{1}: {0} must be a CUDA tensor, "
                               "got one on \", {0}.device());\n",
                               t, m_op);
            if (t != m_first_input)
                out += fmt::format("    TORCH_CHECK({0}.device() == {2}.device(), \"{1}: {0} is on "
                                   "\", {0}.device(), \" but {2} on \", {2}.device());\n",
                                   t, m_op, m_first_input);
            out += fmt::format("    TORCH_CHECK({0}.scalar_type() == {2}, \"{1}: {0} must be {3} "
                               "(the task's {4}), got \", {0}.scalar_type());\n",
                               t, m_op, type.scalar_type, type.name, dtype_name(arg.dtype));
            if (arg.zero_dim)
                out += fmt::format("    TORCH_CHECK({0}.dim() == 0, \"{1}: {0} must be a 0-dim tensor (as "
                                   "the program's), got shape \", {0}.sizes());\n",
                                   t, m_op);
            else
                out += fmt::format("    TORCH_CHECK({0}.dim() == {2}, \"{1}: {0} must have {2} "
                                   "dimension{3} {4}, got shape \", {0}.sizes());\n",
                                   t, m_op, arg.shape.size(), arg.shape.size() == 1 ? "" : "s",
                                   shape_text(arg));
            out += fmt::format("    TORCH_CHECK({0}.is_contiguous(), \"{1}: {0} must be contiguous "
                               "(row-major, as the kernel reads it); pass {0}.contiguous()\");\n",
                               t, m_op);
        }
    }

    void write_symbols(std::string& out) const
    {
        for (const auto& size : m_sig.sizes)
            out += fmt::format("    const int64_t sym_{} = {};\n", size.symbol,
                               m_source.at(size.symbol));
        for (const auto& derived : m_sig.derived)
            write_value(out, "sym_" + derived.name, derived.value,
                        "derived symbol " + derived.name);
    }

    // `const int64_t name = <expr>;`, and the check of its evaluation where it can fail.
    void write_value(std::string& out, const std::string& name, const Expr& expr,
                     const std::string& what) const
    {
        out += fmt::format("    const int64_t {} = {};\n", name, expr_to_cpp(expr, {}));
        if (expr_can_fail(expr))
            out += fmt::format("    TORCH_CHECK(!e->failed, \"{}: {} = '{}': \", e->what);\n", m_op,
                               what, expr.text());
    }

    // Where the symbols of `expr` came from: "N from x.size(1)".
    std::string origins(const Expr& expr) const
    {
        std::vector<std::string> parts;
        for (const auto& name : expr.names())
            if (auto it = m_source.find(name); it != m_source.end())
                parts.push_back(it->first + " from " + it->second);
        return parts.empty() ? "" : " (" + join(parts, ", ") + ")";
    }

    void write_dimension_checks(std::string& out) const
    {
        for (const auto& arg : m_task.args) {
            if (!arg.is_tensor || arg.intent == Intent::out || arg.zero_dim) // a 0-dim tensor has no size(0)
                continue;
            for (size_t d = 0; d < arg.shape.size(); ++d) {
                const Expr& dim = arg.shape[d];
                std::string here = fmt::format("{}.size({})", arg.name, d);
                const auto& nodes = dim.nodes();
                auto source = nodes.size() == 1 && nodes[0].op == Expr::Op::name
                                  ? m_source.find(nodes[0].name)
                                  : m_source.end();
                if (source != m_source.end() && source->second == here)
                    continue; // the dimension the symbol was read from
                out += fmt::format("    {{\n        const int64_t want = {};\n",
                                   expr_to_cpp(dim, {}));
                if (expr_can_fail(dim))
                    out += fmt::format("        TORCH_CHECK(!e->failed, \"{}: {} = '{}': \", "
                                       "e->what);\n",
                                       m_op, here, dim.text());
                out += fmt::format("        TORCH_CHECK({0} == want, \"{1}: {2} has shape \", "
                                   "{2}.sizes(), \" but the task's {3} needs {0} = {4} = \", "
                                   "want, {5});\n    }}\n",
                                   here, m_op, arg.name, shape_text(arg), dim.text(),
                                   c_string(origins(dim)));
            }
        }
    }

    void write_launch(std::string& out) const
    {
        const std::string& f = m_sig.function;
        std::vector<std::string> sizes;
        for (const auto& size : m_sig.sizes) {
            auto [low, high] = c_int_range(size.dtype);
            if (!low.empty())
                out += fmt::format("    TORCH_CHECK(sym_{0} >= {1}{2}, \"{3}: {0} = \", sym_{0}, "
                                   "\" does not fit the kernel's {4} argument {5}\");\n",
                                   size.symbol, low,
                                   high.empty() ? "" : fmt::format(" && sym_{} <= {}", size.symbol, high),
                                   m_op, c_type(size.dtype), size.name);
            sizes.push_back(fmt::format("({})sym_{}", c_type(size.dtype), size.symbol));
        }
        std::string options = "at::TensorOptions().device(at::kCUDA, at::cuda::current_device())";
        if (!m_first_input.empty()) {
            out += fmt::format("    const c10::cuda::CUDAGuard kf_guard({}.device());\n",
                               m_first_input);
            options = m_first_input + ".options()";
        }
        out += fmt::format("    const size_t kf_workspace_bytes = {}_workspace_bytes({});\n", f,
                           join(sizes, ", "));
        out += fmt::format("    TORCH_CHECK(kf_workspace_bytes != SIZE_MAX, \"{}: \", "
                           "{}_last_error());\n",
                           m_op, f);
        out += fmt::format("    const at::TensorOptions kf_options = {};\n", options);

        std::vector<std::string> call;
        std::vector<std::string> returned;
        for (const auto& arg : m_task.args) {
            if (arg.is_tensor) {
                if (arg.intent == Intent::out) {
                    write_output(out, arg);
                    returned.push_back(arg.name);
                }
                std::string tensor = arg.name;
                if (m_step_operands.count(arg.name) && arg.intent == Intent::in) {
                    // The library steps' algorithms were chosen for kforge's 256-byte aligned
                    // buffers; an offset view is copied to a fresh (aligned) allocation.
                    tensor = "kf_aligned_" + arg.name;
                    out += fmt::format("    const at::Tensor {0} = reinterpret_cast<uintptr_t>({1}.data_ptr()) % 256 == "
                                       "0 ? {1} : {1}.clone();\n",
                                       tensor, arg.name);
                } else if (m_step_operands.count(arg.name) && arg.intent == Intent::inout) {
                    out += fmt::format("    TORCH_CHECK(reinterpret_cast<uintptr_t>({0}.data_ptr()) % 256 == 0, \"{1}: "
                                       "{0} is updated in place by a library step, whose algorithm was chosen for "
                                       "256-byte aligned buffers; pass a tensor of its own, not an offset view\");\n",
                                       arg.name, m_op);
                }
                call.push_back(fmt::format("static_cast<{}{}*>({}.data_ptr())",
                                           arg.intent == Intent::in ? "const " : "",
                                           c_type(arg.dtype), tensor));
            } else if (dtype_is_float(arg.dtype)) {
                call.push_back(real_argument(arg));
            } else if (const SizeParam* size = carrier(arg.name)) {
                call.push_back(fmt::format("({})sym_{}", c_type(arg.dtype), size->symbol));
            } else {
                // Not a size: the launcher wants the value the task defines.
                write_value(out, "value_" + arg.name, arg.value, "argument " + arg.name);
                call.push_back(fmt::format("({})value_{}", c_type(arg.dtype), arg.name));
            }
        }
        for (const auto& extra : m_sig.extra_sizes)
            call.push_back("sym_" + extra.symbol);
        // No allocation at all where the plan needs no workspace: a call costs its launches alone.
        out += "    at::Tensor kf_workspace;\n    if (kf_workspace_bytes > 0)\n        kf_workspace = "
               "at::empty({(int64_t)kf_workspace_bytes}, kf_options.dtype(at::kByte));\n";
        call.push_back("kf_workspace_bytes > 0 ? kf_workspace.data_ptr() : NULL");
        call.push_back("kf_workspace_bytes");
        call.push_back("at::cuda::getCurrentCUDAStream()");
        out += fmt::format("    const cudaError_t kf_status = {}({});\n", f, join(call, ", "));
        out += fmt::format("    TORCH_CHECK(kf_status == cudaSuccess, \"{}: \", "
                           "cudaGetErrorString(kf_status), \": \", {}_last_error());\n",
                           m_op, f);
        if (returned.size() == 1)
            out += fmt::format("    return {};\n", returned[0]);
        else if (returned.size() > 1)
            out += fmt::format("    return std::make_tuple({});\n", join(returned, ", "));
    }

    const SizeParam* carrier(const std::string& arg_name) const
    {
        for (const auto& size : m_sig.sizes)
            if (size.is_task_arg && size.name == arg_name)
                return &size;
        return nullptr;
    }

    void write_output(std::string& out, const ArgSpec& arg) const
    {
        if (arg.zero_dim) { // the program returns a 0-dim tensor: one element, no sizes
            out += fmt::format("    at::Tensor {} = at::empty({{}}, kf_options.dtype({}));\n", arg.name,
                               torch_type(arg.dtype).scalar_type);
            return;
        }
        std::vector<std::string> dims;
        bool can_fail = false;
        for (size_t d = 0; d < arg.shape.size(); ++d) {
            out += fmt::format("    const int64_t {}_dim{} = {};\n", arg.name, d,
                               expr_to_cpp(arg.shape[d], {}));
            dims.push_back(fmt::format("{}_dim{}", arg.name, d));
            can_fail = can_fail || expr_can_fail(arg.shape[d]);
        }
        if (can_fail) // the launcher checked the extents already; this only keeps the code honest
            out += fmt::format("    TORCH_CHECK(!e->failed, \"{}: the shape of {}: \", e->what);\n",
                               m_op, arg.name);
        out += fmt::format("    at::Tensor {} = at::empty({{{}}}, kf_options.dtype({}));\n", arg.name,
                           join(dims, ", "), torch_type(arg.dtype).scalar_type);
    }

    static std::string real_argument(const ArgSpec& arg)
    {
        switch (arg.dtype) {
        case DType::f16: return fmt::format("__float2half((float){})", arg.name);
        case DType::bf16: return fmt::format("__float2bfloat16((float){})", arg.name);
        case DType::f64: return arg.name;
        default: return fmt::format("(float){}", arg.name);
        }
    }

    const Task& m_task;
    const LauncherSignature& m_sig;
    std::string m_op;
    size_t m_outputs = 0;
    std::string m_first_input;
    std::map<std::string, std::string> m_source; // free symbol -> where its value comes from
    std::vector<std::string> m_int_args;         // sizes the operator takes as arguments
    std::set<std::string> m_step_operands;       // buffers a library step reads or writes
};

} // namespace

std::string torch_prologue()
{
    return "// PyTorch's extension build defines these; kforge's NVRTC build (where the kernels "
           "were\n// measured) does not, and kernels may use the fp16/bf16 operators they hide.\n"
           "#undef __CUDA_NO_HALF_OPERATORS__\n#undef __CUDA_NO_HALF_CONVERSIONS__\n"
           "#undef __CUDA_NO_BFLOAT16_CONVERSIONS__\n#undef __CUDA_NO_HALF2_OPERATORS__\n\n"
           "#include <ATen/ATen.h>\n#include <ATen/cuda/CUDAContext.h>\n"
           "#include <c10/cuda/CUDAGuard.h>\n#include <torch/library.h>\n\n";
}

std::string torch_schema(const LauncherSource& source)
{
    return TorchOp(source).schema();
}

std::string generate_torch_op(const LauncherSource& source)
{
    return TorchOp(source).code();
}

std::string generate_model_new(const LauncherSource& source, const std::string& problem_file)
{
    const Task& task = source.task;
    std::vector<std::string> args = TorchOp(source).python_arguments();
    std::string text = fmt::format(R"py(


# ---- ModelNew: the imported PyTorch program with kforge's kernels (task {task}) ----
# {problem} is the program the task was imported from; kforge export wrote it beside this file.
# ModelNew is Model with forward() replaced by the kforge::{task} operator: the same constructor,
# parameters and buffers (load Model's state_dict into it), the same outputs within the task's
# tolerance, in the mode the constructor leaves it (training, as KernelBench runs it; kforge's
# task description says what that means for the program's BatchNorm and dropout modules).

PROBLEM = os.path.join(HERE, "{problem}")


def _load_problem():
    import importlib.util
    spec = importlib.util.spec_from_file_location("kforge_problem_{task}", PROBLEM)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _contiguous(value):
    return value.contiguous() if isinstance(value, torch.Tensor) else value


def _model_tensors(model):
    """Every tensor the model holds, named as kforge's import names them: its state_dict, then each
    submodule's plain tensor attributes and non-persistent buffers (`prefix.name`)."""
    tensors = dict(model.state_dict(keep_vars=True))
    for prefix, module in model.named_modules():
        extra = [(n, v) for n, v in vars(module).items() if isinstance(v, torch.Tensor) and not n.startswith("_")]
        extra += [(n, module._buffers[n]) for n in getattr(module, "_non_persistent_buffers_set", ())
                  if module._buffers.get(n) is not None]
        for name, value in extra:
            tensors.setdefault(f"{{prefix}}.{{name}}" if prefix else name, value)
    return tensors


if os.path.exists(PROBLEM):
    _PROBLEM = _load_problem()

    class ModelNew(_PROBLEM.Model):
        """{problem}'s Model with forward() running kforge::{task}."""

        def forward(self, *inputs):
            state = _model_tensors(self)
            return load_op()({args})
)py",
                                   fmt::arg("task", task.name), fmt::arg("problem", problem_file),
                                   fmt::arg("args", join(args, ", ")));
    return text;
}

} // namespace kforge
