// Launch plans: how kforge launches a candidate's kernels (DESIGN.md §4).
//
// kforge owns the host side. A candidate declares, in a `kforge:plan` comment block, its tunable
// params, the scratch buffers it needs and the ordered list of launches with grid, block, dynamic
// shared memory and arguments as expressions over the task's size symbols and the params. This file
// parses that block (syntax only); plan_check.hpp validates it against a task and resolves it for
// one shape and one param point.
//
//   /* kforge:plan
//   { "params":   {"BLOCK": [128, 256, 512]},
//     "scratch":  [{"name": "partials", "bytes": "ceil_div(M, 64) * 4"}],
//     "launches": [{"kernel": "row_max", "grid": ["ceil_div(M, 64)", 1, 1], "block": ["BLOCK", 1, 1],
//                   "smem": "BLOCK / 32 * 4", "args": ["x", "partials", "M", "N"]}] }
//   */
//
// A launch argument is the name of a task argument (tensor or scalar) or of a scratch buffer, or an
// expression passed as a 32-bit int; `{"value": "expr", "dtype": "i64"}` chooses another integer
// type. `{"tensor_map": "A", "box": ["BM", "64"], "swizzle": 128}` passes a 128-byte TMA
// descriptor (CUtensorMap) of task tensor A by value, for `cp.async.bulk.tensor`: the whole tensor
// as its global extent, a box (one integer expression per dimension, in the tensor's own row-major
// order) copied per bulk copy, a shared-memory swizzle of 0, 32, 64 or 128 bytes; elements outside
// the tensor read as zero. The kernel declares it `const __grid_constant__` of a 64-byte-aligned
// 128-byte type. A launch may `"repeat": "expr"` times with the loop index `iter` usable in its argument
// expressions, and `"swap": ["a", "b"]` exchanges two buffers after every iteration (ping-pong).
//
// A launch may instead be a library step, `{"library": "matmul", ...}` (cuBLASLt) or
// `{"library": "conv", ...}` (cuDNN): core/library_step.hpp and docs/library-steps.md.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"
#include "core/library_step.hpp"
#include "util/expr.hpp"
#include "util/json_reader.hpp"

namespace kforge {

// A TMA descriptor of a task tensor, built by the GPU worker (cuTensorMapEncodeTiled) per launch.
inline constexpr size_t k_tensor_map_bytes = 128; // sizeof(CUtensorMap), passed by value
struct PlanTensorMap {
    std::string tensor;          // a task tensor argument
    std::vector<Expr> box;       // elements per bulk copy, one per dimension, row-major order
    int swizzle = 0;             // bytes: 0 (none), 32, 64 or 128
};

struct PlanArg {
    std::string text;            // as written, for messages
    std::optional<Expr> value;   // set when the argument is an expression, not a name
    DType dtype = DType::i32;    // type of an expression argument
    std::optional<PlanTensorMap> tensor_map; // set for a {"tensor_map": ...} argument
};

struct PlanLaunch {
    std::string kernel;          // empty for a library step
    std::optional<PlanLibraryStep> library;
    std::array<Expr, 3> grid;
    std::array<Expr, 3> block;
    Expr smem;                   // dynamic shared memory in bytes
    std::vector<PlanArg> args;
    std::optional<Expr> repeat;  // iterations; `iter` runs 0..repeat-1
    std::optional<std::pair<std::string, std::string>> swap;
};

struct PlanScratch {
    std::string name;
    Expr bytes;
};

struct Plan {
    // Ordered so that parameter points enumerate deterministically.
    std::map<std::string, std::vector<int64_t>> params;
    std::vector<PlanScratch> scratch;
    std::vector<PlanLaunch> launches;
    Json json;                   // the plan as written (archived, exported, shown to models)
};

// A choice of one value per param.
using ParamPoint = std::map<std::string, int64_t>;

// Thrown for a malformed or unusable plan; becomes a plan_error verdict for candidates and a
// bad-input error for a task's reference.
class PlanError : public std::runtime_error
{
public:
    explicit PlanError(const std::string& message) : std::runtime_error(message) {}
};

// Finds the `kforge:plan` block in a source file. Returns nullopt when there is none; throws
// PlanError when the block is unterminated or its JSON is malformed (with line and column).
std::optional<Json> extract_plan_json(std::string_view source);

// A plan (or any JSON) compactly, one line per top-level key, as in prompts and rewritten sources:
// { "params": {"BLOCK": [128, 256]},\n  "launches": [...] }.
std::string format_plan_json(const Json& value);

// The source with its kforge:plan block replaced by `plan` (or a new block appended when it had
// none). Throws PlanError when the existing block is malformed.
std::string replace_plan_block(std::string_view source, const Json& plan);

// An integer expression field of a plan (a number or a string), failing with the field's path.
Expr parse_plan_expr(const JsonReader& field);

// Parses the plan JSON (syntax and types; names are checked by validate_plan). `where` prefixes
// messages, e.g. "plan" or "tasks/softmax.json: reference plan". Throws PlanError.
Plan parse_plan(const Json& json, std::string_view where);

// Every combination of param values in a fixed order (the first param varies slowest), at most
// `cap` of them; a plan without params has exactly one, empty, point.
std::vector<ParamPoint> enumerate_param_points(const Plan& plan, size_t cap);
size_t count_param_points(const Plan& plan);

// "-DBLOCK=256 -DVEC=4" style rendering, for logs and exports.
std::string describe_param_point(const ParamPoint& point);

} // namespace kforge
