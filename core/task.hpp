// Tasks: what a kernel computes, on which shapes, and how to check it (`kforge.task/1`).
//
// A task spec is a JSON file next to its reference: a CUDA kernel, or a PyTorch program in
// KernelBench form (docs/torch-tasks.md; `kforge task import` writes such specs). tasks/README.md
// documents every field. Sizes are integer symbols with constraints; arguments are typed tensors or scalars with an
// intent and an input generator; each output names its check. Three shape lists serve three
// purposes: `tests` (small and odd sizes, for correctness), `bench` (sizes that fill the GPU, for
// timing; shown to the model), `held_out` (never shown to the model; run on each new best).
//
// load_task() parses and validates everything that can be checked without a GPU, and every error
// names the file, the JSON path and what was expected.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"
#include "core/plan.hpp"
#include "util/expr.hpp"
#include "util/json_reader.hpp"

namespace kforge {

inline constexpr std::string_view k_task_schema = "kforge.task/1";

struct SymbolSpec {
    std::string name;
    int64_t min = 1;
    std::optional<int64_t> max;
    int64_t multiple_of = 1;
};

// A symbol computed from others (`"value": "R * 16"`); every shape holds its value too.
struct DerivedSymbol {
    std::string name;
    Expr value;                  // integer expression over other symbols
};

enum class Intent { in, out, inout };
std::string_view intent_name(Intent intent);

// Where one planted value goes: a flat element index (an integer expression over the symbols).
struct Plant {
    Expr at;
    double value = 0;
};

// A sparse matrix in CSR form, built by two generators together: `csr` on the row-pointer tensor
// (R+1 integers) and `csr_cols` on the column-index tensor (NNZ integers, `of` naming the row-pointer
// argument). R is the row pointer's element count minus one and NNZ the column tensor's element
// count, so every size is known from the shape alone. The value tensor is an ordinary input (any
// distribution) of NNZ elements. Exact semantics (tasks/README.md, "CSR matrices"), with
// W = min(band, cols), U64(t, i) the 64-bit random word and Z(t, i) the standard normal deviate
// that element i of tensor t draws under the shape's seed (the same ones `uniform`/`normal` use):
//   1. Groups: G = max(1, min(group, floor((W - 1) * R / NNZ))). Group g holds rows
//      [g*G, min(R, (g+1)*G)) = [s, e) and n_g = floor(NNZ*e/R) - floor(NNZ*s/R) nonzeros.
//   2. Weights: w_r = 1 + floor(65536 * exp(min(sigma * Z(row_ptr, r), 16))), in IEEE double.
//   3. Row pointers: row_ptr[s + j] = floor(NNZ*s/R) + floor(n_g * P_j / P_end), where P_j is the
//      sum of the first j weights of the group (exact integer arithmetic, 128-bit intermediates);
//      row_ptr[R] = NNZ. Hence every row has L_r <= n_g <= W nonzeros; rows may be empty.
//   4. Columns: row r's window starts at lo_r = min(max(floor(r*C/R) - floor(W/2), 0), C - W).
//      Its j-th nonzero (element k = row_ptr[r] + j of the column tensor) lies in stratum
//      [a, b) = [floor(j*W/L_r), floor((j+1)*W/L_r)) of the window:
//      col[k] = lo_r + a + U64(col, k) mod (b - a). Columns are sorted, unique, inside [0, C).
// Per shape, load_task checks 1 <= ceil(NNZ/R) <= W, 0 <= sigma <= 8, and that NNZ and C - 1 fit
// the tensors' integer types.
struct CsrSpec {
    Expr cols;                   // C: integer expression over the symbols
    Expr sigma;                  // spread of the log row weights (real expression); 0: even rows
    Expr band;                   // window width (integer); defaults to cols (the whole row)
    Expr group;                  // most rows that share one group's nonzeros (integer); default 4096
};

// How an input tensor is filled. Values are a pure function of (seed, tensor, element index), so a
// GPU generator and a host re-computation agree (see evaluator/).
struct Generator {
    enum class Dist { uniform, normal, randint, bytes, constant, arange, csr, csr_cols };
    Dist dist = Dist::uniform;
    double low = -1, high = 1;   // uniform, randint (inclusive low, exclusive high)
    double mean = 0, std = 1;    // normal
    double value = 0;            // constant
    std::optional<Expr> hot_fraction; // bytes: share of elements set to one hot value (real expr)
    std::vector<Plant> plants;
    std::optional<CsrSpec> csr;  // csr: the matrix's parameters
    std::string of;              // csr_cols: the argument holding the row pointers
};
std::string_view dist_name(Generator::Dist dist);

// How an output is compared with the reference. Tolerances are real expressions over the symbols,
// the constants, `max_abs_ref` (largest |reference| of this output) and `sum_abs_<input>` (sum of
// |x| over an input tensor), so a check can scale with the problem: "3e-5*sqrt(K)".
struct CheckSpec {
    enum class Metric { allclose, exact };
    Metric metric = Metric::allclose;
    Expr atol;
    Expr rtol;
};

// Where an argument of a task whose reference is a PyTorch program comes from: the N-th value
// get_inputs() returns, a state_dict() entry of the model, or the N-th output of forward().
struct ProgramSlot {
    enum class Kind { none, input, param, output };
    Kind kind = Kind::none;
    int64_t index = 0;           // input, output
    std::string key;             // param: the state_dict key ("gemm.weight")
    // "input 0", "param gemm.weight", "output 1"; "" for none.
    std::string text() const;
};

struct ArgSpec {
    std::string name;
    bool is_tensor = true;
    DType dtype = DType::f32;
    // Tensors:
    std::vector<Expr> shape;     // row-major; integer expressions over the symbols
    Intent intent = Intent::in;
    Generator gen;               // inputs and inout
    std::optional<CheckSpec> check; // out and inout
    // Scalars:
    Expr value;                  // integer or real expression over symbols and constants
    // PyTorch-program tasks: what the program makes for this argument (tensors always, scalars
    // when forward() takes them).
    ProgramSlot from;
    // PyTorch-program tasks: the program's tensor has no dimensions (a loss, a sum). kforge holds
    // its one element as shape [1]; an export to PyTorch takes and returns it as a 0-dim tensor.
    bool zero_dim = false;
};

struct Shape {
    std::string label;           // "M=1024,N=4096" unless the spec names it
    std::map<std::string, int64_t, std::less<>> sizes;
    uint64_t seed = 0;           // public seed; the run's secret is mixed in by the evaluator
    std::optional<double> flops; // the FLOP count here, replacing roofline.flops (imported tasks)
};

struct Roofline {
    Expr flops;                  // real expressions over the symbols
    Expr bytes;
    std::string peak = "fp32";   // fp32 | fp64 | fp16_tc | bf16_tc | tf32_tc | int | none
    bool may_exceed = false;     // e.g. temporally blocked stencils may beat the per-step model
};

struct Limits {
    int64_t max_launches = 16;            // kernel launches per run of the plan (repeats counted)
    int64_t max_threads_per_block = 1024;
    int64_t max_dynamic_smem = 227 * 1024;
    Expr max_scratch_bytes = Expr::constant(int64_t{1} << 30);
    int64_t max_param_points = 64;        // combinations swept per candidate
};

// A source pattern the task forbids (e.g. reduced-precision types in an fp32 task), checked on the
// candidate's source with comments and strings removed.
struct ForbiddenPattern {
    std::string regex;
    std::string reason;
};

struct KernelFile {
    std::filesystem::path path;
    std::string source;
    Plan plan;                   // from its kforge:plan block (the task's default_plan if absent)
};

// What computes the expected outputs: a CUDA kernel with a plan (the reference KernelFile), or a
// PyTorch program (the reference KernelFile holds its Python source and no plan) run by the GPU
// worker's PyTorch reference process (docs/torch-tasks.md).
enum class ReferenceKind { cuda, torch };

struct Task {
    std::filesystem::path spec_path;
    std::string spec_text;
    std::string spec_hash;       // hash of the spec and every file it names
    std::string name;
    std::string category;        // memory | compute | irregular
    std::vector<std::string> tags;
    std::string description;
    std::vector<SymbolSpec> symbols;
    std::vector<DerivedSymbol> derived_symbols; // each after the symbols it uses
    std::vector<Expr> constraints;
    std::map<std::string, double, std::less<>> constants;
    std::vector<ArgSpec> args;
    KernelFile reference;
    ReferenceKind reference_kind = ReferenceKind::cuda;
    std::optional<Plan> default_plan;  // applies to candidates without a plan block
    std::vector<KernelFile> seeds;     // starting kernels for the search and the offline proposer
    std::vector<Shape> tests, bench, held_out;
    std::vector<Shape> stress;         // correctness-only extra shapes (never timed)
    Roofline roofline;
    std::vector<std::string> vendor_baselines; // e.g. "cublas_sgemm"; timed beside the reference
    std::vector<ForbiddenPattern> forbid;
    Limits limits;

    bool is_torch() const { return reference_kind == ReferenceKind::torch; }
    const ArgSpec* find_arg(std::string_view arg_name) const;
    // Symbol values plus constants, ready for expression evaluation.
    ExprScope scope_for(const Shape& shape) const;
    // Number of elements of a tensor argument at a shape (checked against overflow).
    int64_t element_count(const ArgSpec& arg, const Shape& shape) const;
};

// Parses and validates a task spec and the kernel files it names. Throws Error(bad_input) naming
// the file, the JSON path and the problem.
Task load_task(const std::filesystem::path& spec_path);
// Same, from text already in memory (tests); `base_dir` resolves relative kernel paths.
Task parse_task(const std::string& spec_text, const std::string& file_label,
                const std::filesystem::path& base_dir);

// The kernel files of `task` (reference and seeds) keyed by their path relative to the spec's
// folder: with the spec text, everything needed to load the task elsewhere (a run archive, an
// evaluation service on another host).
Json snapshot_task_files(const Task& task);
// Writes a snapshot into `folder` (which must exist): the files at their relative paths and the
// spec as task-spec.json, whose path it returns for load_task(). Throws Error(bad_input) naming
// `label` when a file is not text or its path leaves the folder (absolute or "..").
std::filesystem::path write_task_snapshot(const std::string& spec_text, const Json& files,
                                          const std::filesystem::path& folder, const std::string& label);

// Checks one shape against symbol bounds and constraints (and CSR generators' requirements);
// returns "" or the problem.
std::string check_shape(const Task& task, const Shape& shape);

// The sizes of a CSR matrix at one shape, as the generator semantics above define them.
struct CsrSizes {
    int64_t rows = 0;            // R
    int64_t cols = 0;            // C
    int64_t nnz = 0;             // NNZ
    int64_t window = 0;          // W = min(band, cols)
    int64_t group = 0;           // G, the rows per group actually used
    double sigma = 0;
};
// Evaluates the CSR generator on `row_ptr_arg` (dist csr) at a shape. Throws ExprError when an
// expression cannot be evaluated; the requirements are checked by check_shape.
CsrSizes csr_sizes(const Task& task, const ArgSpec& row_ptr_arg, const Shape& shape);

// What a spec's reference is, read from its text without loading the task (archives keep the
// text): torch when "reference" is {"torch": ...}; cuda otherwise, also for text that does not parse.
ReferenceKind spec_reference_kind(std::string_view spec_text);
std::string_view reference_kind_name(ReferenceKind kind);   // "cuda", "torch"
// How reports name a baseline subject: "reference" is "torch eager" when the reference is a
// PyTorch program, "torch_compile" is "torch.compile"; other names are shown as they are.
std::string baseline_label(ReferenceKind kind, std::string_view subject);
std::string baseline_label(std::string_view reference_kind_name, std::string_view subject);

// The vendor baselines kforge knows how to time (the evaluator implements them).
const std::vector<std::string>& known_vendor_baselines();
// The library a vendor baseline comes from, for reports ("vs cuBLAS"): "cuBLAS", "CUB" or
// "cuSPARSE", "PyTorch" for torch_compile (the baseline of a PyTorch-program task); "" for a name
// that is not a known baseline (e.g. "reference").
std::string_view vendor_baseline_library(std::string_view routine);

} // namespace kforge
