// Every bound kforge puts on text it did not write, in one place.
//
// kforge reads untrusted text all day: model replies (candidate sources and their plans), task
// specs people share, archives copied between machines, frames from its own worker processes. Each
// reader checks the bound that applies here *before* it does the work the bound protects (parsing,
// expanding, compiling, enumerating), and its error names the limit and the value found, so a user
// who hits one knows which knob it was. None of these is a tuning parameter: each sits far above
// anything a real task or kernel needs and far below what would crash, hang or bloat the controller.
//
// Limits a task may tighten (launch counts, threads, shared memory, scratch, param points) live in
// the task's `limits` (core/task.hpp); the ceilings for those fields are here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kforge {

// --- expressions (util/expr) ---
// Nesting of parentheses, unary operators and function calls. The parser recurses once per level;
// 200 levels is far beyond any real size or launch expression and far below the stack.
inline constexpr size_t k_max_expr_depth = 200;
// Characters of one expression (a roofline or a tolerance is a few dozen).
inline constexpr size_t k_max_expr_chars = 4096;

// --- JSON (util/json_reader, plans, replies, archive columns) ---
// Nesting of arrays and objects. nlohmann's printer and its CBOR reader recurse per level.
inline constexpr size_t k_max_json_depth = 128;

// --- files kforge reads ---
// A task spec (JSON). The bundled ones are 2-8 KiB.
inline constexpr uint64_t k_max_spec_bytes = uint64_t{4} << 20;
// A kernel source: a candidate, a task's reference or seed, a file given to `kforge eval`.
inline constexpr uint64_t k_max_source_bytes = uint64_t{1} << 20;
// Any other file kforge reads whole (prompt templates, price tables, recorded calls, cached CUBINs).
inline constexpr uint64_t k_max_read_bytes = uint64_t{256} << 20;
// A lessons file (`kforge lessons --import`), read whole and parsed before anything is stored, so
// this bounds the import's memory (the file and its lessons, about twice this). An exported lesson
// is 1-3 KB (the analyst's text is cut at 1,000 characters), so 64 MiB holds over 20,000: a
// thousand runs at the analyst's default of at most 20 lessons each.
inline constexpr uint64_t k_max_lessons_file_bytes = uint64_t{64} << 20;
// One lesson, one line of such a file. Lessons are shown in prompts, so a lesson of megabytes
// would bloat every prompt that draws it; 64 KiB is twenty times the largest lesson a run writes.
inline constexpr uint64_t k_max_lesson_bytes = uint64_t{64} << 10;

// --- candidates, before NVRTC sees them (evaluator/compile/screen) ---
// Preprocessing work: tokens the candidate's own macros produce while expanding, counted over
// every expansion (arguments included). A kernel's macros produce a few thousand; this stops a
// macro that doubles itself 40 times before NVRTC spends a minute on it.
inline constexpr uint64_t k_max_macro_tokens = uint64_t{1} << 22;

// Nesting of macro calls inside macro arguments (the bound's expander recurses once per level).
inline constexpr int k_max_macro_nesting = 200;

// --- frames between kforge's processes (util/subprocess; compile and GPU workers, MPI ranks) ---
// A frame carries a CUBIN at most; a length prefix above this is a corrupt stream, not an allocation.
inline constexpr size_t k_max_frame_bytes = size_t{1} << 30;

// --- plans (core/plan) ---
inline constexpr size_t k_max_plan_params = 8;          // tunable params of one plan
inline constexpr size_t k_max_param_values = 64;        // values of one param
inline constexpr int64_t k_max_param_points_limit = 4096; // ceiling of a task's limits.max_param_points
inline constexpr size_t k_max_plan_launches = 64;       // launch entries of one plan (repeats aside)
inline constexpr size_t k_max_launch_args = 128;        // arguments of one launch

// --- task specs (core/task) ---
inline constexpr size_t k_max_shapes_per_list = 1024;   // shapes in each of tests, bench, held_out, stress
inline constexpr int64_t k_max_launches_limit = 100000; // ceiling of a task's limits.max_launches

// The most device memory of any one GPU kforge knows: NVIDIA's B300 (Blackwell Ultra), 288 GB of
// HBM3e. A task shape whose tensors alone need more cannot run on any GPU (core/task/memory.hpp):
// `task import` warns, and `task check` without a GPU refuses, above it.
inline constexpr uint64_t k_largest_gpu_memory_bytes = uint64_t{288} * 1000 * 1000 * 1000;

// --- the command line (src/cli) ---
inline constexpr double k_max_budget_count = 1e9;          // --budget, --max-calls
inline constexpr double k_max_budget_dollars = 1e9;        // --max-cost
inline constexpr double k_max_session_seconds = 366.0 * 24 * 3600; // --time
// `task import --time-limit`, `suite run --import-time-limit`: a day; an import runs the program's
// constructor and a few forwards on the CPU, which take seconds to minutes.
inline constexpr double k_max_import_seconds = 24.0 * 3600;

} // namespace kforge
