// generate_launcher_code() and the header: kforge_<task>(), which runs the exported plan.
//
// The launcher resolves the plan for the caller's sizes (resolve.cpp), checks the
// workspace, binds every buffer, and enqueues each launch with cudaLaunchKernel on the caller's
// stream. Arguments go to the kernel as the bytes kforge's GPU worker passes (pointers, and scalars
// of the plan's types), so a kernel sees exactly what it was measured with. Launches that want more
// than 48 KiB of dynamic shared memory get cudaFuncAttributeMaxDynamicSharedMemorySize first, as
// kforge's worker does.
#include <fmt/format.h>

#include "export/host_code.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

// The launcher's own parameter names, moved aside when a task argument already has the name.
struct OwnNames
{
    std::string workspace = "workspace";
    std::string workspace_bytes = "workspace_bytes";
    std::string stream = "stream";
};

OwnNames own_names(const Task& task)
{
    OwnNames names;
    for (std::string* name : {&names.workspace, &names.workspace_bytes, &names.stream})
        while (task.find_arg(*name))
            *name = "kforge_" + *name;
    return names;
}

std::string launcher_parameters(const LauncherSource& source)
{
    std::vector<std::string> params;
    for (const auto& arg : source.task.args) {
        if (arg.is_tensor)
            params.push_back(fmt::format("{}{}* {}", arg.intent == Intent::in ? "const " : "",
                                         c_type(arg.dtype), arg.name));
        else
            params.push_back(fmt::format("{} {}", c_type(arg.dtype), arg.name));
    }
    for (const auto& extra : source.signature.extra_sizes)
        params.push_back("int64_t " + extra.name);
    OwnNames own = own_names(source.task);
    params.push_back("void* " + own.workspace);
    params.push_back("size_t " + own.workspace_bytes);
    params.push_back("cudaStream_t " + own.stream);
    return join(params, ", ");
}

std::string size_parameters(const LauncherSource& source)
{
    std::vector<std::string> params;
    for (const auto& size : source.signature.sizes)
        params.push_back(fmt::format("{} {}", c_type(size.dtype), size.name));
    return params.empty() ? "void" : join(params, ", ");
}

// The kernel-argument variable for one argument of one launch site.
std::string bind_arg(const LauncherSource& source, const PlanLaunch& launch, size_t a)
{
    const PlanArg& arg = launch.args[a];
    const ArgSpec* spec = arg.value ? nullptr : source.task.find_arg(arg.text);
    bool scratch = !arg.value && !spec &&
                   std::any_of(source.plan.scratch.begin(), source.plan.scratch.end(),
                               [&](const PlanScratch& s) { return s.name == arg.text; });
    if ((spec && spec->is_tensor) || scratch)
        return fmt::format("void* a{0} = buffers[launch.arg[{0}]];", a);
    if (spec && dtype_is_float(spec->dtype))
        return fmt::format("{} a{} = {};", c_type(spec->dtype), a, arg.text);
    DType dtype = arg.value ? arg.dtype : spec ? spec->dtype : DType::i32;
    return fmt::format("{0} a{1} = ({0})launch.arg[{1}];", c_type(dtype), a);
}

// Each line of `text` broken at spaces to at most `width` columns; continuation lines of an
// indented line keep its indent plus two.
std::string wrap_lines(const std::string& text, size_t width)
{
    std::string out;
    for (const auto& line : split(text, '\n')) {
        size_t indent = line.find_first_not_of(' ');
        indent = indent == std::string::npos ? 0 : indent;
        std::string current = line.substr(0, indent);
        size_t start = current.size();
        for (const auto& word : split(line.substr(indent), ' ')) {
            if (current.size() > start && current.size() + 1 + word.size() > width) {
                out += current + "\n";
                current = std::string(indent + 2, ' ');
                start = current.size();
            }
            current += (current.size() > start ? " " : "") + word;
        }
        out += current + "\n";
    }
    return out;
}

} // namespace

std::string generate_launcher_declarations(const LauncherSource& source)
{
    const std::string& f = source.signature.function;
    return fmt::format(R"cpp(#ifdef __cplusplus
extern "C" {{
#endif
cudaError_t {0}({1});
size_t {0}_workspace_bytes({2});
const char* {0}_last_error(void);
#ifdef __cplusplus
}}
#endif
)cpp",
                       f, launcher_parameters(source), size_parameters(source));
}

std::string generate_launcher_code(const LauncherSource& source)
{
    const Task& task = source.task;
    const Plan& plan = source.plan;
    const std::string& f = source.signature.function;
    std::string detail = f + "_detail";
    OwnNames own = own_names(task);

    std::string out = "// ---- host: the launcher ----\n#include <cuda_runtime.h>\n\n#include <mutex>\n\n";
    out += generate_launcher_declarations(source);
    out += generate_library_code(source);
    bool kernels = std::any_of(plan.launches.begin(), plan.launches.end(),
                               [](const PlanLaunch& launch) { return !launch.library; });
    if (kernels)
        out += fmt::format(R"cpp(
namespace {0} {{
namespace {{

// Whether `kernel`'s dynamic shared memory limit was raised to at least `smem` on `device`
// already: the limit is raised once per kernel, device and size, not on every launch, so that a
// launch inside a CUDA graph capture (or a steady state of calls) makes no host call but the launch.
bool limit_raised(const void* kernel, int device, unsigned smem, bool record)
{{
    struct Raised {{
        const void* kernel;
        int device;
        unsigned smem;
    }};
    static Raised raised[256];
    static int count = 0;
    static std::mutex lock;
    std::lock_guard<std::mutex> hold(lock);
    for (int i = 0; i < count; ++i)
        if (raised[i].kernel == kernel && raised[i].device == device && raised[i].smem >= smem)
            return true;
    if (record && count < 256)
        raised[count++] = Raised{{kernel, device, smem}};
    return false;
}}

// One launch; sets the dynamic shared memory limit first where a launch wants more than 48 KiB.
cudaError_t launch_kernel(const void* kernel, const {1}_launch& launch, void** args,
                          cudaStream_t stream, const char* label)
{{
    int device = 0;
    if (launch.smem > 48 * 1024 && cudaGetDevice(&device) == cudaSuccess &&
        !limit_raised(kernel, device, launch.smem, false)) {{
        cudaError_t status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                  (int)launch.smem);
        if (status != cudaSuccess) {{
            refuse_with("%s: cudaFuncSetAttribute(MaxDynamicSharedMemorySize, %u): %s", label,
                        launch.smem, cudaGetErrorString(status));
            return status;
        }}
        limit_raised(kernel, device, launch.smem, true);
    }}
    cudaError_t status = cudaLaunchKernel(kernel, dim3(launch.grid[0], launch.grid[1], launch.grid[2]),
                                          dim3(launch.block[0], launch.block[1], launch.block[2]),
                                          args, launch.smem, stream);
    if (status != cudaSuccess)
        refuse_with("%s: cudaLaunchKernel: %s", label, cudaGetErrorString(status));
    return status;
}}

}} // namespace
}} // namespace {0}
)cpp",
                           detail, f);
    out += fmt::format(R"cpp(
extern "C" cudaError_t {1}({2})
{{
    using namespace {0};
    {1}_plan* plan = plan_storage();
)cpp",
                       detail, f, launcher_parameters(source));

    // Sizes arrive as the caller's arguments; an unsigned 64-bit one must fit int64_t.
    std::vector<std::string> resolve_args;
    for (const auto& size : source.signature.sizes) {
        if (size.dtype == DType::u64)
            out += fmt::format("    if ({0} > (uint64_t)INT64_MAX) {{\n        refuse_with(\"{0}=%llu "
                               "is too large\", (unsigned long long){0});\n        return "
                               "cudaErrorInvalidValue;\n    }}\n",
                               size.name);
        resolve_args.push_back("(int64_t)" + size.name);
    }
    resolve_args.push_back("plan");
    out += fmt::format("    if ({}_resolve({}) != 0)\n        return cudaErrorInvalidValue;\n", f,
                       join(resolve_args, ", "));

    // Integer scalars that carry no size must hold what the task defines them to be.
    for (size_t i = 0; i < task.args.size(); ++i) {
        const ArgSpec& arg = task.args[i];
        bool carrier = std::any_of(source.signature.sizes.begin(), source.signature.sizes.end(),
                                   [&](const SizeParam& s) { return s.name == arg.name; });
        if (arg.is_tensor || dtype_is_float(arg.dtype) || carrier)
            continue;
        out += fmt::format("    if ((int64_t){0} != plan->value[{1}]) {{\n        refuse_with(\"argument "
                           "{0} is %lld, but the task defines it as %s = %lld\", (long long){0}, "
                           "{2}, (long long)plan->value[{1}]);\n        return "
                           "cudaErrorInvalidValue;\n    }}\n",
                           arg.name, i, c_string("'" + arg.value.text() + "'"));
    }

    out += fmt::format(R"cpp(    if (plan->workspace_bytes > 0) {{
        if ({0} == NULL || (uint64_t){1} < (uint64_t)plan->workspace_bytes) {{
            refuse_with("the plan needs a workspace of %lld bytes ({2}_workspace_bytes()), got %llu bytes at %p",
                        (long long)plan->workspace_bytes, (unsigned long long){1}, {0});
            return cudaErrorInvalidValue;
        }}
        if ((uintptr_t){0} % 256 != 0) {{
            refuse_with("the workspace at %p is not 256-byte aligned (cudaMalloc's allocations are)", {0});
            return cudaErrorInvalidValue;
        }}
    }}
)cpp",
                       own.workspace, own.workspace_bytes, f);

    std::vector<std::string> buffers;
    for (const auto& arg : task.args)
        buffers.push_back(arg.is_tensor ? fmt::format("(void*){}", arg.name) : "NULL");
    for (size_t s = 0; s < plan.scratch.size(); ++s)
        buffers.push_back(
            fmt::format("(char*){} + plan->scratch_offset[{}]", own.workspace, s));
    out += fmt::format("    void* buffers[{}] = {{{}}};\n", buffers.size(), join(buffers, ", "));
    out += "    for (int32_t i = 0; i < plan->launch_count; ++i) {\n";
    out += fmt::format("        const {}_launch& launch = plan->launches[i];\n", f);
    out += "        cudaError_t status = cudaErrorInvalidValue;\n";
    out += "        switch (launch.site) {\n";
    for (size_t i = 0; i < plan.launches.size(); ++i) {
        const PlanLaunch& launch = plan.launches[i];
        if (launch.library) {
            out += fmt::format("        case {}: {{ // {} (library step)\n", i, library_op_name(launch.library->op));
            out += generate_library_call(source, i, own.stream) + "            break;\n        }\n";
            continue;
        }
        out += fmt::format("        case {}: {{ // {}\n", i, launch.kernel);
        std::vector<std::string> pointers;
        for (size_t a = 0; a < launch.args.size(); ++a) {
            out += "            " + bind_arg(source, launch, a) + "\n";
            pointers.push_back(fmt::format("&a{}", a));
        }
        if (pointers.empty())
            out += "            void** args = NULL;\n";
        else
            out += fmt::format("            void* args[] = {{{}}};\n", join(pointers, ", "));
        out += fmt::format("            status = launch_kernel((const void*)::{}, launch, args, {}, "
                           "{});\n            break;\n        }}\n",
                           launch.kernel, own.stream,
                           c_string(fmt::format("launches[{}] ({})", i, launch.kernel)));
    }
    out += "        }\n        if (status != cudaSuccess)\n            return status;\n    }\n";
    out += "    return cudaSuccess;\n}\n";
    return out;
}

std::string launcher_contract(const LauncherSource& source)
{
    const Task& task = source.task;
    const LauncherSignature& sig = source.signature;
    const std::string& f = sig.function;
    std::vector<std::string> args;
    for (const auto& arg : task.args)
        args.push_back(arg.name);
    for (const auto& extra : sig.extra_sizes)
        args.push_back(extra.name);
    OwnNames own = own_names(task);
    std::string out = fmt::format("{}({}, {}, {}, {})\n  enqueues the exported plan's kernels on {}, "
                                  "in order, on the current device; it does not wait.\n\n",
                                  f, join(args, ", "), own.workspace, own.workspace_bytes,
                                  own.stream, own.stream);

    if (has_library_steps(source.plan)) {
        std::vector<std::string> steps;
        for (size_t i = 0; i < source.plan.launches.size(); ++i)
            if (const auto& step = source.plan.launches[i].library)
                steps.push_back(fmt::format("launches[{}] {}", i,
                                            step->op == LibraryOp::matmul ? "cuBLASLt matmul" : "cuDNN conv"));
        out += fmt::format(
            "Library steps: {}. Each runs as kforge ran it: the same call, fp32 accumulation (never TF32 for "
            "fp32), its epilogue, and the algo-th algorithm of kforge's filtered list of the library's "
            "heuristic for that call (on another GPU or library version the list, and so the choice, may "
            "differ). Prepared calls are cached per device and sizes, library handles per device. Their operands "
            "must be 256-byte aligned (16 for conv), as cudaMalloc's are. Link with {}.\n\n",
            join(steps, ", "), join(library_link_flags(source.plan), " "));
    }
    std::vector<std::string> carriers;
    for (const auto& size : sig.sizes)
        carriers.push_back(size.is_task_arg
                               ? fmt::format("{} carries {}", size.name, size.symbol)
                               : fmt::format("{} (int64_t, no task argument carries it)",
                                             size.name));
    out += fmt::format("Sizes: {}.\n", carriers.empty() ? "none" : join(carriers, "; "));
    std::vector<std::string> bounds;
    for (const auto& symbol : task.symbols) {
        if (!sig.symbols.count(symbol.name))
            continue;
        std::string bound = fmt::format("{} >= {}", symbol.name, symbol.min);
        if (symbol.max)
            bound += fmt::format(", <= {}", *symbol.max);
        if (symbol.multiple_of > 1)
            bound += fmt::format(", a multiple of {}", symbol.multiple_of);
        bounds.push_back(bound);
    }
    std::vector<std::string> constraints;
    for (const auto& constraint : task.constraints)
        if (std::find(sig.unchecked_constraints.begin(), sig.unchecked_constraints.end(),
                      constraint.text()) == sig.unchecked_constraints.end())
            constraints.push_back("'" + constraint.text() + "'");
    out += fmt::format(
        "They are checked as kforge checks a shape, in exact int64 arithmetic that refuses "
        "overflow: {}{}; every tensor extent at least 1; then the plan's own limits (grid, block, "
        "threads, shared memory, scratch, launch count, argument ranges).\n",
        bounds.empty() ? "no symbol bounds" : join(bounds, "; "),
        constraints.empty() ? "" : "; the constraints " + join(constraints, ", "));
    if (!sig.unused_symbols.empty())
        out += fmt::format("Not taken: {} (only kforge's test inputs use them){}.\n",
                           join(sig.unused_symbols, ", "),
                           sig.unchecked_constraints.empty()
                               ? ""
                               : ", nor checked: the constraints '" +
                                     join(sig.unchecked_constraints, "', '") + "'");
    std::vector<std::string> sizes;
    for (const auto& size : sig.sizes)
        sizes.push_back(size.name);
    out += fmt::format(
        "\nWorkspace: {}_workspace_bytes({}) gives the bytes the plan's scratch needs (0: pass "
        "NULL and 0). Pass at least that many, 256-byte aligned (cudaMalloc's allocations are). "
        "Scratch is not initialised, and one workspace serves one call at a time: give concurrent "
        "streams their own.\n",
        f, join(sizes, ", "));
    for (const auto& scratch : source.plan.scratch)
        out += fmt::format("  scratch {}: '{}' bytes\n", scratch.name, scratch.bytes.text());
    out += fmt::format(
        "\nReturns cudaSuccess once every launch is enqueued (a kernel's own fault shows at the "
        "next synchronisation, as for any launch); cudaErrorInvalidValue when the sizes are "
        "refused or the workspace is too small; a failed launch's CUDA error otherwise. "
        "{}_last_error() says why (per thread; \"\" after a success).\n",
        f);

    if (!source.point.empty())
        out += fmt::format(
            "\nParams: {}, #defines at the top of the .cu (the measured point); a -D on the "
            "command line changes the kernels and the launches together.\n",
            describe_param_point(source.point));
    std::vector<std::string> reals;
    for (const auto& arg : task.args) {
        if (arg.is_tensor || !dtype_is_float(arg.dtype))
            continue;
        if (auto value = constant_value(task, arg.value))
            reals.push_back(fmt::format("{} = {}", arg.name, *value));
        else
            reals.push_back(fmt::format("{} = '{}'", arg.name, arg.value.text()));
    }
    if (!reals.empty())
        out += fmt::format("Floating-point scalars are the caller's; kforge measured with {}.\n",
                           join(reals, ", "));
    if (out.back() == '\n')
        out.pop_back();
    return wrap_lines(out, 96);
}

std::string generate_launcher_header(const LauncherSource& source, const std::string& cu_name,
                                     const std::string& header_name)
{
    std::set<std::string> includes = {"#include <cuda_runtime.h>"};
    for (const auto& arg : source.task.args) {
        if (arg.dtype == DType::f16)
            includes.insert("#include <cuda_fp16.h>");
        if (arg.dtype == DType::bf16)
            includes.insert("#include <cuda_bf16.h>");
    }
    std::string comment;
    for (const auto& text_line :
         split(fmt::format("{}: the host interface of {} (kforge export --launcher).\n\n{}",
                           header_name, cu_name, launcher_contract(source)),
               '\n'))
        comment += text_line.empty() ? "//\n" : "// " + text_line + "\n";
    return fmt::format("{}#pragma once\n\n#include <stddef.h>\n#include <stdint.h>\n{}\n\n{}",
                       comment, join(std::vector<std::string>(includes.begin(), includes.end()),
                                     "\n"),
                       generate_launcher_declarations(source));
}

} // namespace kforge
