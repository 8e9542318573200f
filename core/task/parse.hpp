// Shared steps of the task-spec parser (task.cpp), the parsing of a task's args: tensors, scalars,
// their input generators and output checks (task/args.cpp), and the reading of the files a spec
// names, confined to its folder (task/files.cpp). Internal to core.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "core/task.hpp"
#include "util/json_reader.hpp"

namespace kforge::task_parse {

// A C identifier: a letter or '_', then letters, digits and '_'.
bool is_identifier(std::string_view name);
// The expression at `field`; a syntax error fails at `field`.
Expr parse_expr(const JsonReader& field);
// Fails at `field` when `expr` mentions a name outside `known` (`what`: "symbol", ...).
void require_names(const JsonReader& field, const Expr& expr, const std::set<std::string>& known,
                   std::string_view what);
// Fails at `field` when `expr` needs real arithmetic.
void require_integer_expr(const JsonReader& field, const Expr& expr);

// One entry of the spec's "args": its kind, dtype, shape, intent, generator and check, each
// validated against the names the spec declares. A PyTorch-program task's tensors say where the
// program makes them ("from") and take no generator; other tasks' arguments take no "from".
ArgSpec parse_arg_spec(const JsonReader& entry, const std::set<std::string>& symbol_names,
                       const std::set<std::string>& scalar_names, const std::set<std::string>& check_names,
                       const std::map<std::string, double, std::less<>>& constants, ReferenceKind reference);
// After every argument is parsed: a PyTorch-program task names each input 0..n-1 and output
// 0..m-1 once, each parameter key once, and has no inout tensors.
void check_program_slots(const JsonReader& args, const Task& task);

// Computes every per-shape number of a parsed task on every shape (task/numbers.cpp): roofline
// flops and bytes, tolerances, planted indices, hot fractions, scalar values. Fails at the field
// naming the shape: a value that cannot be computed, is not finite, is negative, or a plant outside
// its tensor. Honours the interrupt (Error(interrupted)).
void check_task_numbers(const JsonReader& root, const Task& task);
// Validates the task's default plan (`field`) like a candidate's and resolves it on every shape at
// every param point, failing at `field` with the plan's problem.
void check_default_plan(const JsonReader& field, const Task& task, const Plan& plan);

// A file the spec names at `field`, read within the source bound (k_max_source_bytes): its path and
// text. The file must lie inside `base_dir` (no absolute path, no '..', no symbolic link leading
// out); `what` names it in errors ("kernel source", "PyTorch program").
KernelFile read_spec_file(const JsonReader& field, const std::filesystem::path& base_dir, const char* what);
// A kernel file (read_spec_file) with its plan: its own kforge:plan block, else `default_plan`;
// a plan error fails at `field`, naming `label` (the seed or reference).
KernelFile load_kernel_file(const JsonReader& field, const std::filesystem::path& base_dir,
                            const std::optional<Plan>& default_plan, const std::string& label);

} // namespace kforge::task_parse
