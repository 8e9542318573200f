// Host code for an exported candidate: `kforge export --launcher` and `--torch`.
//
// kforge owns the host side of a candidate (core/plan.hpp): grid, block, shared memory, scratch and
// the order of launches are expressions over the task's size symbols and the params. An export that
// only held the device code left the user to re-derive all of that. These generators write it as
// C++ instead, in three parts:
//
//   resolve   pure host C++ (no CUDA): checked int64 helpers with kforge's expression semantics,
//             a plan struct, and kforge_<task>_resolve(), _workspace_bytes(), _last_error(). It
//             repeats kforge's own checks (core/plan_check.cpp resolve_plan(), core/task.cpp
//             check_shape()) so a size kforge would refuse is refused here, with the reason.
//   launcher  kforge_<task>(args..., workspace, workspace_bytes, stream) after the device code:
//             resolves, carves the scratch buffers from the workspace and launches the kernels in
//             order with cudaLaunchKernel, exactly the bytes kforge's worker passes.
//   torch     a TORCH_LIBRARY operator kforge::<task> over the launcher, with a loader script.
//
// Where the sizes come from (LauncherSignature): the launcher takes the task's arguments, in order,
// so a free symbol that a scalar argument carries as its bare value (`"value": "N"`) arrives
// through that argument. A symbol the launcher needs (plan, tensor shapes, scratch limit, integer
// scalars) that no scalar carries becomes an extra int64_t parameter after the task's arguments.
// Symbols only the input generators use (histogram's COLD) are left out, and so are the
// constraints that mention them; the generated header lists those.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/task.hpp"

namespace kforge {

// A launcher parameter through which a free size symbol arrives.
struct SizeParam
{
    std::string name;         // the C parameter's name: a task scalar's, or the symbol's own
    std::string symbol;       // the free symbol it carries
    DType dtype = DType::i64; // the parameter's type
    bool is_task_arg = false; // one of the task's scalar arguments (else an extra parameter)
};

// How the generated functions take their sizes; decided from the task and the plan.
struct LauncherSignature
{
    std::string function;                   // "kforge_<task>"
    std::vector<SizeParam> sizes;           // the parameters of _workspace_bytes() and _resolve()
    std::vector<SizeParam> extra_sizes;     // the sizes that are not task arguments, in order
    std::set<std::string> symbols;          // every symbol the generated code evaluates
    std::vector<DerivedSymbol> derived;     // the derived ones among them, in evaluation order
    std::vector<std::string> unused_symbols;       // free symbols the launcher never sees
    std::vector<std::string> unchecked_constraints; // constraints over unused symbols
};

// Analyses which symbols the plan and the task need and where each comes from. Throws PlanError
// when a plan expression needs real arithmetic (validate_plan refuses that first).
LauncherSignature describe_launcher(const Task& task, const Plan& plan);

// Everything a generated launcher needs to be written.
struct LauncherSource
{
    const Task& task;
    const Plan& plan;
    LauncherSignature signature;
    ParamPoint point; // the exported params (for the documentation; the code reads the macros)
};

// The `// ---- ... ----` host section of plan arithmetic. It sits after the params' #defines and
// before the device code; params are read through their macros, so -DNAME=value changes the device
// code and the launch together. Compiles with any C++11 compiler (the CPU test uses g++).
std::string generate_resolve_code(const LauncherSource& source);

// Where a buffer of the plan sits in the resolved plan's `arg` values (and the launcher's table):
// the task's arguments by position, then the scratch buffers in plan order. Throws PlanError for
// a name that is neither.
int64_t plan_buffer_index(const Task& task, const Plan& plan, const std::string& name);

// The declarations of the three public functions (what the header holds), for C and C++.
std::string generate_launcher_declarations(const LauncherSource& source);

// The launcher itself; goes after the device code (it names the kernels).
std::string generate_launcher_code(const LauncherSource& source);

// The header FILE.h: includes, the usage contract in a comment, and the declarations.
std::string generate_launcher_header(const LauncherSource& source, const std::string& cu_name,
                                     const std::string& header_name);

// How to call the launcher: where each size comes from, what is checked, the workspace, the
// results, the fixed params. The header and the .cu's top comment both carry it.
std::string launcher_contract(const LauncherSource& source);

// The PyTorch operator over the launcher; goes after it.
std::string generate_torch_op(const LauncherSource& source);

// For a task imported from a PyTorch program (`problem_file`, written beside the export): Python
// defining ModelNew, the program's Model with forward() calling the operator; appended to the
// loader.
std::string generate_model_new(const LauncherSource& source, const std::string& problem_file);

// The operator's schema, e.g. "softmax_f32(Tensor x) -> Tensor".
std::string torch_schema(const LauncherSource& source);

// The Python file FILE_load.py (`loader_name`) that builds FILE.cu as an extension and returns
// the operator.
std::string generate_torch_loader(const LauncherSource& source, const std::string& cu_name,
                                  const std::string& loader_name);

// Lines the torch file needs before any CUDA header: PyTorch's extension build defines
// __CUDA_NO_HALF_OPERATORS__ and friends, which kforge's NVRTC build does not.
std::string torch_prologue();

// ---- the pieces the generators share (host_code.cpp) ----

// `text` as a C string literal, quotes included.
std::string c_string(const std::string& text);

// The checked int64 helpers (inline, in namespace `detail_namespace`): eval
// state, arithmetic, refusal and the last-error text. `function` prefixes the public names.
std::string generate_helper_code(const std::string& function, const std::string& detail_namespace);

// An integer expression as a C++ expression over the helpers, with `e` the Eval pointer in scope.
// Symbols become `sym_<name>`, params their macro, `iter` the loop variable `iter`.
std::string expr_to_cpp(const Expr& expr, const std::set<std::string>& params);

// True when evaluating `expr` can fail (it has arithmetic that may overflow or divide by zero).
bool expr_can_fail(const Expr& expr);

// ---- library steps (library_code.cpp) ----

// True when a launch of the plan is a library step (cuBLASLt matmul or cuDNN conv).
bool has_library_steps(const Plan& plan);
bool has_library_step(const Plan& plan, LibraryOp op);

// The linker flags the exported file needs for the plan's library steps: "-lcublasLt" for a
// matmul step, "-lcudnn" for a conv step (a plan without conv steps never needs cuDNN); empty
// without steps. In the order they go on nvcc's command line, after the file.
std::vector<std::string> library_link_flags(const Plan& plan);

// The role order of a step's operands in the resolved plan's `arg` values (and the vendor
// library's run order): matmul a, b, c, d, bias, workspace; conv x, w, y, workspace.
const std::vector<std::string>& library_operand_roles(LibraryOp op);

// The code that runs library steps (cuBLASLt and/or cuDNN, as the plan needs): handles cached per
// device, prepared calls cached per site and numbers, and one function per step kind that the
// launcher's switch calls. Goes after the resolve section and before the launcher.
std::string generate_library_code(const LauncherSource& source);

// The fixed cuDNN part of generate_library_code() (library_conv.cpp), `@F@` for the function name.
std::string conv_library_code();

// The launcher's switch case body for library step `index` (which plan.launches[index] is).
std::string generate_library_call(const LauncherSource& source, size_t index,
                                  const std::string& stream);

// The C type of a scalar or element: int32_t, float, __nv_bfloat16, ...
std::string c_type(DType dtype);

// The value of a real expression over the task's constants alone (eps, alpha); nullopt when it
// names a size symbol.
std::optional<double> constant_value(const Task& task, const Expr& expr);

// The range an integer must fit to be passed as `dtype`, as two C int64 constants; empty strings
// where a side has no limit (i64, and the top of u64).
std::pair<std::string, std::string> c_int_range(DType dtype);

} // namespace kforge
