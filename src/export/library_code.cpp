// The exported launcher's library steps: cuBLASLt matmul and cuDNN conv calls written into the .cu.
//
// kforge's GPU worker runs a step through libkforge_vendor.so (vendor/steps/matmul*.cpp,
// vendor/steps/conv*.cpp): it translates the row-major step into the library's call, asks the
// library's heuristic for candidates, filters them (no TF32 for fp32, no split-K, nothing over the
// step's workspace; cuDNN engines without tensor-core or down-converting notes for fp32) and takes
// the `algo`-th. The export cannot ship that library, so it repeats the same translation and the same
// filter here, as fixed C++ copied into every export that needs it (like the checked int64 helpers):
// the same numbers in, the same list out, so `algo` picks the algorithm kforge timed, on the same
// GPU with the same library versions. Only the libraries a plan uses are included: a plan with
// matmul steps alone needs cuBLASLt and never cuDNN.
//
// Prepared calls (descriptors, the chosen algorithm or execution plan) are cached per plan site,
// device and numbers, so a call at known sizes only enqueues; library handles are made once per
// device and kept to process exit, as PyTorch keeps its own.
#include <fmt/format.h>

#include "core/task.hpp"
#include "export/host_code.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

// What every library step shares: the lock, the current device, operand checks.
constexpr const char* k_common_code = R"cpp(
// ---- host: library steps (cuBLASLt / cuDNN), as kforge's vendor library runs them ----
#include <limits.h>
#include <string.h>

#include <mutex>
#include <vector>

namespace @F@_detail {
namespace {

// Prepared calls live in one cache per process; the lock covers it, the handles and each call's
// enqueue (a matmul descriptor holds the bias address, a cuDNN handle its stream).
std::mutex& library_lock()
{
    static std::mutex lock;
    return lock;
}

const int k_max_devices = 64;
// Prepared calls kept before the least recently used is dropped (many distinct sizes).
const size_t k_cached_calls = 64;

// The current device, or -1 with the reason recorded.
int library_device(const char* label)
{
    int device = -1;
    cudaError_t status = cudaGetDevice(&device);
    if (status != cudaSuccess) {
        refuse_with("%s: cudaGetDevice: %s", label, cudaGetErrorString(status));
        return -1;
    }
    if (device < 0 || device >= k_max_devices) {
        refuse_with("%s: device %d: library steps run on devices 0 .. %d", label, device, k_max_devices - 1);
        return -1;
    }
    return device;
}

// kforge gives every buffer a 256-byte aligned address and chose the library's algorithm for the
// alignment it declared; an operand aligned to less (an offset view) could fault or be wrong with
// it, so it is refused.
bool aligned_operand(const char* label, const char* role, const void* address, uintptr_t alignment)
{
    if (address == NULL) {
        refuse_with("%s: operand %s has no address", label, role);
        return false;
    }
    if ((uintptr_t)address % alignment != 0) {
        refuse_with("%s: operand %s at %p is not %d-byte aligned, as kforge's operands were when it chose the "
                    "library's algorithm (cudaMalloc's allocations are)", label, role, address, (int)alignment);
        return false;
    }
    return true;
}

} // namespace
} // namespace @F@_detail
)cpp";

constexpr const char* k_matmul_code = R"cpp(
// ---- cuBLASLt matmul (vendor/steps/matmul_plan.cpp, vendor/steps/matmul.cpp) ----
// Row-major D = op(A) op(B) is cuBLASLt's column-major D^T = op(B)^T op(A)^T: its m is the step's n,
// its n the step's m, its A the step's b buffer (T when transpose_b) and its B the step's a buffer
// (T when transpose_a); the bias, one per column of D, is one per row of D^T (the BIAS epilogue).
#include <cublasLt.h>

namespace @F@_detail {
namespace {

// What the plan fixes for one matmul step.
struct MatmulSite
{
    bool transpose_a, transpose_b;
    cudaDataType_t ab_type;      // A and B
    cudaDataType_t cd_type;      // C, D and the bias
    bool has_c, has_bias;
    float alpha, beta;
    cublasLtEpilogue_t epilogue; // with the bias folded in (BIAS, RELU_BIAS, GELU_BIAS)
};

// One prepared call: the descriptors and the algorithm `algo` picked, for one site, device and numbers.
struct MatmulCall
{
    int site, device;
    int64_t key[10]; // m, n, k, batch, stride[4], algo, workspace_bytes
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c, d; // cuBLASLt's: a holds the step's b buffer, b the step's a
    cublasLtMatmulAlgo_t algo;
};

bool lt_ok(cublasStatus_t status, const char* call, const char* label)
{
    if (status == CUBLAS_STATUS_SUCCESS)
        return true;
    refuse_with("%s: %s: %s (%s)", label, call, cublasLtGetStatusName(status), cublasLtGetStatusString(status));
    return false;
}

// The process's cuBLASLt handle for `device`, made once and kept to process exit (destroying
// library handles at exit can block on a context already gone).
cublasLtHandle_t lt_handle(int device, const char* label)
{
    static cublasLtHandle_t handles[k_max_devices];
    if (handles[device] == NULL && !lt_ok(cublasLtCreate(&handles[device]), "cublasLtCreate", label))
        return NULL;
    return handles[device];
}

void destroy_matmul(MatmulCall* call)
{
    if (call->desc)
        cublasLtMatmulDescDestroy(call->desc);
    cublasLtMatrixLayout_t layouts[4] = {call->a, call->b, call->c, call->d};
    for (int i = 0; i < 4; ++i)
        if (layouts[i])
            cublasLtMatrixLayoutDestroy(layouts[i]);
    delete call;
}

// Every matrix of a batch starts i * stride elements after a 256-byte aligned operand: the
// alignment they share is the largest power of two up to 256 dividing stride's bytes.
uint32_t shared_alignment(int64_t batch, int64_t stride, size_t element_bytes)
{
    uint32_t alignment = 256;
    if (batch <= 1 || stride == 0)
        return alignment;
    uint64_t offset = (uint64_t)stride * element_bytes;
    while (offset % alignment != 0)
        alignment /= 2;
    return alignment;
}

size_t element_bytes(cudaDataType_t type) { return type == CUDA_R_32F ? 4 : 2; }

// A stored row-major rows x cols matrix as cuBLASLt's column-major layout.
bool lt_layout(cublasLtMatrixLayout_t* layout, cudaDataType_t type, int64_t stored_rows, int64_t stored_cols,
               int32_t batch, int64_t stride, const char* label)
{
    return lt_ok(cublasLtMatrixLayoutCreate(layout, type, (uint64_t)stored_cols, (uint64_t)stored_rows, stored_cols),
                 "cublasLtMatrixLayoutCreate", label) &&
           lt_ok(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch),
                 "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)", label) &&
           lt_ok(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                  sizeof stride),
                 "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)", label);
}

// Inside prepare_matmul: on a failure (already recorded) the half-built call is destroyed.
#define KF_LT_OK(ok)                                                                               \
    do {                                                                                           \
        if (!(ok)) {                                                                               \
            destroy_matmul(out);                                                                   \
            return NULL;                                                                           \
        }                                                                                          \
    } while (0)
#define KF_LT_TRY(call, what) KF_LT_OK(lt_ok((call), what, label))

// Builds the call and picks the algorithm as kforge did; NULL with the reason recorded and
// *status set (cudaErrorInvalidValue for sizes or an algo cuBLASLt does not take here).
MatmulCall* prepare_matmul(const MatmulSite& site, int site_index, const @F@_launch& launch, int device,
                           cublasLtHandle_t handle, const char* label, cudaError_t* status)
{
    const @F@_matmul& mm = launch.matmul;
    *status = cudaErrorInvalidValue;
    const int64_t sizes[4] = {mm.m, mm.n, mm.k, mm.batch};
    const char* names[4] = {"m", "n", "k", "batch"};
    for (int i = 0; i < 4; ++i)
        if (sizes[i] > INT_MAX) {
            refuse_with("%s: %s = %lld is past 2^31 - 1, the largest size cuBLASLt's kernels take in practice",
                        label, names[i], (long long)sizes[i]);
            return NULL;
        }
    if (mm.batch > 1 && mm.stride[3] < mm.m * mm.n) {
        refuse_with("%s: stride_d = %lld with batch = %lld: the output matrices would overlap", label,
                    (long long)mm.stride[3], (long long)mm.batch);
        return NULL;
    }
    *status = cudaErrorUnknown;
    MatmulCall* out = new MatmulCall();
    out->site = site_index;
    out->device = device;
    const int64_t key[10] = {mm.m, mm.n, mm.k, mm.batch, mm.stride[0], mm.stride[1], mm.stride[2], mm.stride[3],
                             launch.algo, launch.workspace_bytes};
    memcpy(out->key, key, sizeof key);
    const int32_t batch = (int32_t)mm.batch;
    const int64_t m = mm.m, n = mm.n, k = mm.k;
    // cuBLASLt's A is the step's B, stored [n, k] when transposed, else [k, n]; its B the step's A,
    // stored [k, m] when transposed, else [m, k]; C and D are [m, n].
    KF_LT_OK(lt_layout(&out->a, site.ab_type, site.transpose_b ? n : k, site.transpose_b ? k : n, batch,
                       mm.stride[1], label));
    KF_LT_OK(lt_layout(&out->b, site.ab_type, site.transpose_a ? k : m, site.transpose_a ? m : k, batch,
                       mm.stride[0], label));
    KF_LT_OK(lt_layout(&out->d, site.cd_type, m, n, batch, mm.stride[3], label));
    if (site.has_c)
        KF_LT_OK(lt_layout(&out->c, site.cd_type, m, n, batch, mm.stride[2], label));
    // Without a C, D is passed as C (beta is 0: it is not read).
    cublasLtMatrixLayout_t c_layout = site.has_c ? out->c : out->d;

    KF_LT_TRY(cublasLtMatmulDescCreate(&out->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const int32_t pointer_mode = CUBLASLT_POINTER_MODE_HOST;
    const int32_t transa = site.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int32_t transb = site.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const uint32_t epilogue = site.epilogue;
    KF_LT_TRY(cublasLtMatmulDescSetAttribute(out->desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pointer_mode,
                                             sizeof pointer_mode), "POINTER_MODE");
    KF_LT_TRY(cublasLtMatmulDescSetAttribute(out->desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa),
              "TRANSA");
    KF_LT_TRY(cublasLtMatmulDescSetAttribute(out->desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb),
              "TRANSB");
    KF_LT_TRY(cublasLtMatmulDescSetAttribute(out->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
              "EPILOGUE");
    if (site.has_bias) {
        const int32_t bias_type = site.cd_type;
        // The heuristic reads the bias alignment from the pointer: a 256-byte aligned placeholder,
        // as kforge's, until a run sets the real one.
        const void* placeholder = (const void*)((uintptr_t)1 << 32);
        KF_LT_TRY(cublasLtMatmulDescSetAttribute(out->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                 sizeof bias_type), "BIAS_DATA_TYPE");
        KF_LT_TRY(cublasLtMatmulDescSetAttribute(out->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &placeholder,
                                                 sizeof placeholder), "BIAS_POINTER");
    }

    cublasLtMatmulPreference_t preference = NULL;
    KF_LT_TRY(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
    const uint64_t reduced_inputs = CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_TF32 |
                                    CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16BF | CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16F;
    const bool fp32 = site.ab_type == CUDA_R_32F;
    const uint64_t workspace_limit = (uint64_t)launch.workspace_bytes;
    const uint32_t no_split = CUBLASLT_REDUCTION_SCHEME_NONE;
    const uint64_t impl_mask = ~reduced_inputs;
    const uint32_t alignment[4] = {
        shared_alignment(mm.batch, mm.stride[1], element_bytes(site.ab_type)),
        shared_alignment(mm.batch, mm.stride[0], element_bytes(site.ab_type)),
        shared_alignment(mm.batch, site.has_c ? mm.stride[2] : mm.stride[3], element_bytes(site.cd_type)),
        shared_alignment(mm.batch, mm.stride[3], element_bytes(site.cd_type))};
    const cublasLtMatmulPreferenceAttributes_t alignment_attribute[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    cublasStatus_t pref_status = cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_limit, sizeof workspace_limit);
    if (pref_status == CUBLAS_STATUS_SUCCESS)
        pref_status = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                           &no_split, sizeof no_split);
    if (pref_status == CUBLAS_STATUS_SUCCESS && fp32) // fp32 is computed in fp32: never TF32
        pref_status = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_IMPL_MASK, &impl_mask,
                                                           sizeof impl_mask);
    for (int i = 0; i < 4 && pref_status == CUBLAS_STATUS_SUCCESS; ++i)
        pref_status = cublasLtMatmulPreferenceSetAttribute(preference, alignment_attribute[i], &alignment[i],
                                                           sizeof alignment[i]);
    cublasLtMatmulHeuristicResult_t results[32];
    memset(results, 0, sizeof results);
    int returned = 0;
    if (pref_status == CUBLAS_STATUS_SUCCESS)
        pref_status = cublasLtMatmulAlgoGetHeuristic(handle, out->desc, out->a, out->b, c_layout, out->d, preference,
                                                     32, results, &returned);
    cublasLtMatmulPreferenceDestroy(preference);
    if (pref_status == CUBLAS_STATUS_NOT_SUPPORTED) // the heuristic's "nothing fits": an empty list
        returned = 0;
    else
        KF_LT_TRY(pref_status, "cublasLtMatmulAlgoGetHeuristic");

    // kforge's filter, in the heuristic's order: usable within the workspace, no reduced-precision
    // inputs for fp32 (the flags prove what the mask asked), able to write D apart from C when
    // there is a C, and no split-K (its partial sums would live in scratch that is garbage).
    int allowed = 0;
    for (int i = 0; i < returned; ++i) {
        const cublasLtMatmulHeuristicResult_t& result = results[i];
        if (result.state != CUBLAS_STATUS_SUCCESS || result.workspaceSize > workspace_limit)
            continue;
        uint64_t flags = 0;
        size_t written = 0;
        KF_LT_TRY(cublasLtMatmulAlgoCapGetAttribute(&result.algo, CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS, &flags,
                                                    sizeof flags, &written), "NUMERICAL_IMPL_FLAGS");
        if (fp32 && (flags & reduced_inputs) != 0)
            continue;
        int32_t out_of_place = 1;
        if (site.has_c)
            KF_LT_TRY(cublasLtMatmulAlgoCapGetAttribute(&result.algo, CUBLASLT_ALGO_CAP_OUT_OF_PLACE_RESULT_SUPPORT,
                                                        &out_of_place, sizeof out_of_place, &written),
                      "OUT_OF_PLACE_RESULT_SUPPORT");
        if (out_of_place == 0)
            continue;
        int32_t splits = 1;
        uint32_t reduction = 0;
        KF_LT_TRY(cublasLtMatmulAlgoConfigGetAttribute(&result.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                                                       sizeof splits, &written), "SPLITK_NUM");
        KF_LT_TRY(cublasLtMatmulAlgoConfigGetAttribute(&result.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &reduction,
                                                       sizeof reduction, &written), "REDUCTION_SCHEME");
        if (splits > 1 || reduction != CUBLASLT_REDUCTION_SCHEME_NONE)
            continue;
        if (allowed++ == launch.algo) {
            out->algo = result.algo;
            return out;
        }
    }
    refuse_with("%s: algo %lld: this matmul has %d allowed cuBLASLt algorithms within a workspace of %lld bytes "
                "(kforge's filter of the heuristic's %d)", label, (long long)launch.algo, allowed,
                (long long)launch.workspace_bytes, returned);
    *status = cudaErrorInvalidValue;
    destroy_matmul(out);
    return NULL;
}

#undef KF_LT_TRY
#undef KF_LT_OK

// The prepared call for these numbers, from the cache or made now (most recently used last).
MatmulCall* matmul_call(const MatmulSite& site, int site_index, const @F@_launch& launch, int device,
                        cublasLtHandle_t handle, const char* label, cudaError_t* status)
{
    static std::vector<MatmulCall*> cache;
    const @F@_matmul& mm = launch.matmul;
    const int64_t key[10] = {mm.m, mm.n, mm.k, mm.batch, mm.stride[0], mm.stride[1], mm.stride[2], mm.stride[3],
                             launch.algo, launch.workspace_bytes};
    for (size_t i = 0; i < cache.size(); ++i) {
        MatmulCall* call = cache[i];
        if (call->site == site_index && call->device == device && memcmp(call->key, key, sizeof key) == 0) {
            cache.erase(cache.begin() + (ptrdiff_t)i);
            cache.push_back(call);
            return call;
        }
    }
    MatmulCall* call = prepare_matmul(site, site_index, launch, device, handle, label, status);
    if (call == NULL)
        return NULL;
    if (cache.size() >= k_cached_calls) { // host descriptors only: safe while earlier calls run
        destroy_matmul(cache.front());
        cache.erase(cache.begin());
    }
    cache.push_back(call);
    return call;
}

// One matmul step: operands from the buffer table in the order a, b, c, d, bias, workspace.
cudaError_t run_matmul(const MatmulSite& site, int site_index, const @F@_launch& launch, void* const* buffers,
                       cudaStream_t stream, const char* label)
{
    const char* roles[6] = {"a", "b", "c", "d", "bias", "workspace"};
    void* operand[6];
    for (int i = 0; i < 6; ++i) {
        operand[i] = launch.arg[i] >= 0 ? buffers[launch.arg[i]] : NULL;
        bool needed = i < 2 || i == 3 || (i == 2 && site.has_c) || (i == 4 && site.has_bias) ||
                      (i == 5 && launch.workspace_bytes > 0);
        if (needed && !aligned_operand(label, roles[i], operand[i], 256))
            return cudaErrorInvalidValue;
    }
    if (site.has_c && operand[2] == operand[3] && launch.matmul.stride[2] != launch.matmul.stride[3]) {
        refuse_with("%s: c and d are one buffer but their batch strides differ (%lld and %lld)", label,
                    (long long)launch.matmul.stride[2], (long long)launch.matmul.stride[3]);
        return cudaErrorInvalidValue;
    }
    const int device = library_device(label);
    if (device < 0)
        return cudaErrorInvalidDevice;
    std::lock_guard<std::mutex> hold(library_lock());
    cublasLtHandle_t handle = lt_handle(device, label);
    if (handle == NULL)
        return cudaErrorUnknown;
    cudaError_t status = cudaSuccess;
    MatmulCall* call = matmul_call(site, site_index, launch, device, handle, label, &status);
    if (call == NULL)
        return status;
    if (site.has_bias && !lt_ok(cublasLtMatmulDescSetAttribute(call->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                               &operand[4], sizeof operand[4]),
                                "BIAS_POINTER", label))
        return cudaErrorUnknown;
    void* workspace = launch.workspace_bytes > 0 ? operand[5] : NULL;
    // cuBLASLt's A is the step's b and its B the step's a; without C, D is passed and not read.
    if (!lt_ok(cublasLtMatmul(handle, call->desc, &site.alpha, operand[1], call->a, operand[0], call->b, &site.beta,
                              site.has_c ? operand[2] : operand[3], site.has_c ? call->c : call->d, operand[3],
                              call->d, &call->algo, workspace, workspace ? (size_t)launch.workspace_bytes : 0,
                              stream),
               "cublasLtMatmul", label))
        return cudaErrorUnknown;
    return cudaSuccess;
}

} // namespace
} // namespace @F@_detail
)cpp";

const char* cuda_type(DType dtype)
{
    switch (dtype) {
    case DType::bf16: return "CUDA_R_16BF";
    case DType::f16: return "CUDA_R_16F";
    default: return "CUDA_R_32F";
    }
}

std::string lt_epilogue(const PlanLibraryStep& step)
{
    bool bias = std::any_of(step.operands.begin(), step.operands.end(),
                            [](const StepOperand& o) { return o.role == "bias"; });
    switch (step.matmul.epilogue) {
    case StepEpilogue::relu: return bias ? "CUBLASLT_EPILOGUE_RELU_BIAS" : "CUBLASLT_EPILOGUE_RELU";
    case StepEpilogue::gelu_tanh: return bias ? "CUBLASLT_EPILOGUE_GELU_BIAS" : "CUBLASLT_EPILOGUE_GELU";
    case StepEpilogue::none: break;
    }
    return bias ? "CUBLASLT_EPILOGUE_BIAS" : "CUBLASLT_EPILOGUE_DEFAULT";
}

bool has_role(const PlanLibraryStep& step, const char* role)
{
    return std::any_of(step.operands.begin(), step.operands.end(),
                       [&](const StepOperand& o) { return o.role == role; });
}

// An fp32 literal that reads back as the plan's number.
std::string float_literal(double value)
{
    std::string text = fmt::format("{}", static_cast<float>(value));
    if (text.find_first_of(".e") == std::string::npos)
        text += ".0";
    return text + "f";
}

} // namespace

bool has_library_step(const Plan& plan, LibraryOp op)
{
    return std::any_of(plan.launches.begin(), plan.launches.end(),
                       [&](const PlanLaunch& l) { return l.library && l.library->op == op; });
}

bool has_library_steps(const Plan& plan)
{
    return has_library_step(plan, LibraryOp::matmul) || has_library_step(plan, LibraryOp::conv);
}

std::vector<std::string> library_link_flags(const Plan& plan)
{
    std::vector<std::string> flags;
    if (has_library_step(plan, LibraryOp::matmul))
        flags.push_back("-lcublasLt");
    if (has_library_step(plan, LibraryOp::conv))
        flags.push_back("-lcudnn");
    return flags;
}

const std::vector<std::string>& library_operand_roles(LibraryOp op)
{
    static const std::vector<std::string> k_matmul = {"a", "b", "c", "d", "bias", "workspace"};
    static const std::vector<std::string> k_conv = {"x", "w", "y", "workspace"};
    return op == LibraryOp::matmul ? k_matmul : k_conv;
}

std::string generate_library_code(const LauncherSource& source)
{
    if (!has_library_steps(source.plan))
        return "";
    std::string code = k_common_code;
    if (has_library_step(source.plan, LibraryOp::matmul))
        code += k_matmul_code;
    if (has_library_step(source.plan, LibraryOp::conv))
        code += conv_library_code();
    return replace_all(code, "@F@", source.signature.function);
}

std::string generate_library_call(const LauncherSource& source, size_t index, const std::string& stream)
{
    const PlanLibraryStep& step = *source.plan.launches[index].library;
    std::string label = c_string(fmt::format("launches[{}] ({})", index, library_op_name(step.op)));
    auto dtype_of = [&](const char* role) {
        for (const auto& o : step.operands)
            if (o.role == role)
                return library_operand_dtype(source.task, step, o.name);
        return DType::f32;
    };
    if (step.op == LibraryOp::matmul) {
        const PlanMatmul& mm = step.matmul;
        return fmt::format("            static const MatmulSite site = {{{}, {}, {}, {}, {}, {}, {}, {}, {}}};\n"
                           "            status = run_matmul(site, {}, launch, buffers, {}, {});\n",
                           mm.transpose_a, mm.transpose_b, cuda_type(dtype_of("a")), cuda_type(dtype_of("d")),
                           has_role(step, "c"), has_role(step, "bias"), float_literal(mm.alpha),
                           float_literal(mm.beta), lt_epilogue(step), index, stream, label);
    }
    const PlanConv& cv = step.conv;
    DType dtype = dtype_of("x");
    return fmt::format("            static const ConvSite site = {{{}, {}, {}, {}}};\n"
                       "            status = run_conv(site, {}, launch, buffers, {}, {});\n",
                       cv.size.size(), cv.transposed, cv.channels_last,
                       dtype == DType::bf16  ? "CUDNN_DATA_BFLOAT16"
                       : dtype == DType::f16 ? "CUDNN_DATA_HALF"
                                             : "CUDNN_DATA_FLOAT",
                       index, stream, label);
}

} // namespace kforge
