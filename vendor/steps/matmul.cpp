// The matmul step: one cublasLtMatmul per run, its algorithm chosen once at prepare.
//
// prepare builds the descriptors from the MatmulPlan (matmul_plan.hpp), asks the heuristic for
// up to 32 algorithms under the step's constraints, keeps those that pass kforge's own checks, in
// the heuristic's order, and takes the one `algo` indexes. The constraints: the workspace the step
// has (MAX_WORKSPACE_BYTES; none without one), the alignment its operands are known to have, no
// split-K reduction (REDUCTION_SCHEME_MASK = NONE: a split-K scheme keeps partial sums or counters
// in the workspace, which is a candidate's scratch and garbage before every run, and runs a second
// kernel), and for fp32 an implementation mask without TF32, BF16 or FP16 inputs. The mask is a
// request; the chosen algorithm's NUMERICAL_IMPL_FLAGS are the proof, so each candidate is checked
// and one that would round fp32 inputs is never offered.
//
// The bias pointer lives in the matmul descriptor, and the run's addresses change between runs, so
// run() sets it before every call (a host-side attribute write). Before the heuristic it holds a
// 256-byte-aligned placeholder, because the heuristic reads the alignment from its value.
#include <cublasLt.h>
#include <fmt/format.h>

#include "step.hpp"
#include "matmul_plan.hpp"
#include "vendor_routine.hpp"

namespace kforge::vendor {
namespace {

#define KF_CUBLASLT_CHECK(call)                                                                    \
    do {                                                                                           \
        cublasStatus_t kf_lt_status_ = (call);                                                     \
        if (kf_lt_status_ != CUBLAS_STATUS_SUCCESS)                                                \
            ::kforge::vendor::fail_cuda_call(#call, __FILE__, __LINE__,                            \
                                             fmt::format("{} ({})", cublasLtGetStatusName(kf_lt_status_), \
                                                         cublasLtGetStatusString(kf_lt_status_))); \
    } while (0)

// The process's cuBLASLt handle, made on first use in the current context. The GPU worker is one
// thread with one context, so one handle serves every step. It is never destroyed: at exit the
// worker may already have released its context, or a hung kernel may hold it, and destroying
// library handles then can block or fault (PyTorch leaves its handles to process exit for the
// same reason). A handle made in a context that has since been replaced is left, not destroyed,
// for that reason too, and a new one is made.
cublasLtHandle_t shared_lt_handle()
{
    static cublasLtHandle_t handle = nullptr;
    static void* made_in = nullptr;
    void* context = current_cuda_context();
    if (!handle || made_in != context) {
        KF_CUBLASLT_CHECK(cublasLtCreate(&handle));
        made_in = context;
    }
    return handle;
}

constexpr int k_heuristic_results = 32;
// What the heuristic is told the bias pointer is: any 256-byte-aligned value would do.
const void* const k_bias_placeholder = reinterpret_cast<const void*>(uintptr_t{1} << 32);
constexpr uint64_t k_reduced_inputs = CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_TF32 |
                                      CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16BF |
                                      CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16F;

// Sets one attribute of a cuBLASLt descriptor of any kind; the value's own type gives the size,
// so each call site states the type the header documents for the attribute.
template <typename Setter, typename Object, typename Attribute, typename Value>
cublasStatus_t lt_set(Setter setter, Object object, Attribute attribute, const Value& value)
{
    return setter(object, attribute, &value, sizeof value);
}

template <typename Attribute, typename Value>
cublasStatus_t lt_algo_config(const cublasLtMatmulAlgo_t& algo, Attribute attribute, Value& value)
{
    size_t written = 0;
    return cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, sizeof value, &written);
}

cudaDataType_t lt_type(StepDtype dtype)
{
    switch (dtype) {
    case StepDtype::bf16:
        return CUDA_R_16BF;
    case StepDtype::f16:
        return CUDA_R_16F;
    case StepDtype::f32:
        break;
    }
    return CUDA_R_32F;
}

uint32_t lt_epilogue_value(LtEpilogue epilogue)
{
    switch (epilogue) {
    case LtEpilogue::relu:
        return CUBLASLT_EPILOGUE_RELU;
    case LtEpilogue::gelu:
        return CUBLASLT_EPILOGUE_GELU;
    case LtEpilogue::bias:
        return CUBLASLT_EPILOGUE_BIAS;
    case LtEpilogue::relu_bias:
        return CUBLASLT_EPILOGUE_RELU_BIAS;
    case LtEpilogue::gelu_bias:
        return CUBLASLT_EPILOGUE_GELU_BIAS;
    case LtEpilogue::none:
        break;
    }
    return CUBLASLT_EPILOGUE_DEFAULT;
}

// "FMA, 32F inputs, 32F accumulator" from CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS.
std::string impl_flags_text(uint64_t flags)
{
    const std::pair<uint64_t, const char*> names[] = {
        {CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA, "FMA"},
        {CUBLASLT_NUMERICAL_IMPL_FLAGS_HMMA, "HMMA"},
        {CUBLASLT_NUMERICAL_IMPL_FLAGS_IMMA, "IMMA"},
        {CUBLASLT_NUMERICAL_IMPL_FLAGS_DMMA, "DMMA"},
        {CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16F, "16F inputs"},
        {CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16BF, "16BF inputs"},
        {CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_TF32, "TF32 inputs"},
        {CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_32F, "32F inputs"},
        {CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_64F, "64F inputs"},
        {CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_16F, "16F accumulator"},
        {CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_32F, "32F accumulator"},
        {CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_64F, "64F accumulator"},
        {CUBLASLT_NUMERICAL_IMPL_FLAGS_GAUSSIAN, "Gauss complex"}};
    std::string text;
    for (const auto& [bit, name] : names)
        if (flags & bit)
            text += (text.empty() ? "" : ", ") + std::string(name);
    return text.empty() ? fmt::format("flags {:#x}", flags) : text;
}

class LtMatmulDesc
{
public:
    LtMatmulDesc() { KF_CUBLASLT_CHECK(cublasLtMatmulDescCreate(&m_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F)); }
    ~LtMatmulDesc() { cublasLtMatmulDescDestroy(m_desc); }
    LtMatmulDesc(const LtMatmulDesc&) = delete;
    LtMatmulDesc& operator=(const LtMatmulDesc&) = delete;
    cublasLtMatmulDesc_t get() const { return m_desc; }

private:
    cublasLtMatmulDesc_t m_desc = nullptr;
};

class LtLayout
{
public:
    LtLayout(const LtMatrixPlan& matrix, int32_t batch)
    {
        KF_CUBLASLT_CHECK(
            cublasLtMatrixLayoutCreate(&m_layout, lt_type(matrix.dtype), matrix.rows, matrix.cols, matrix.ld));
        try {
            KF_CUBLASLT_CHECK(
                lt_set(cublasLtMatrixLayoutSetAttribute, m_layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch));
            KF_CUBLASLT_CHECK(lt_set(cublasLtMatrixLayoutSetAttribute, m_layout,
                                     CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, int64_t{matrix.batch_stride}));
        } catch (...) {
            cublasLtMatrixLayoutDestroy(m_layout);
            throw;
        }
    }
    ~LtLayout() { cublasLtMatrixLayoutDestroy(m_layout); }
    LtLayout(const LtLayout&) = delete;
    LtLayout& operator=(const LtLayout&) = delete;
    cublasLtMatrixLayout_t get() const { return m_layout; }

private:
    cublasLtMatrixLayout_t m_layout = nullptr;
};

class LtPreference
{
public:
    LtPreference() { KF_CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&m_preference)); }
    ~LtPreference() { cublasLtMatmulPreferenceDestroy(m_preference); }
    LtPreference(const LtPreference&) = delete;
    LtPreference& operator=(const LtPreference&) = delete;
    cublasLtMatmulPreference_t get() const { return m_preference; }

private:
    cublasLtMatmulPreference_t m_preference = nullptr;
};

// One allowed algorithm and what the record says about it.
struct LtCandidate {
    cublasLtMatmulAlgo_t algo{};
    size_t workspace = 0;
    std::string text;
};

class CublasLtMatmulStep : public LibraryStep
{
public:
    explicit CublasLtMatmulStep(const KforgeStep& step)
        : m_plan(plan_matmul(step.matmul, step.workspace_bytes)), m_handle(shared_lt_handle()),
          m_a(m_plan.a, m_plan.batch), m_b(m_plan.b, m_plan.batch), m_c(m_plan.c, m_plan.batch),
          m_d(m_plan.d, m_plan.batch)
    {
        configure_descriptor();
        std::vector<LtCandidate> allowed = allowed_algorithms();
        if (static_cast<unsigned long long>(step.algo) >= allowed.size())
            fail(Status::no_algorithm,
                 fmt::format("algo {}: this matmul has {} allowed cuBLASLt algorithms ({}) within a workspace of {} "
                             "bytes{}",
                             step.algo, allowed.size(),
                             allowed.empty() ? "none" : fmt::format("0 .. {}", allowed.size() - 1),
                             m_plan.workspace_bytes, m_left_out.empty() ? "" : "; " + m_left_out));
        const LtCandidate& chosen = allowed[static_cast<size_t>(step.algo)];
        m_algo = chosen.algo;
        m_chosen = fmt::format("cuBLASLt {}, {} of {} allowed candidates{}, workspace {} B of {} B", chosen.text,
                               step.algo, allowed.size(), m_left_out.empty() ? "" : " (" + m_left_out + ")",
                               chosen.workspace, m_plan.workspace_bytes);
    }

    size_t operand_count() const override { return KFORGE_STEP_MATMUL_OPERANDS; }

    void run(const unsigned long long* operands, cudaStream_t stream) override
    {
        const void* a = operand(operands[0], "a", true);
        const void* b = operand(operands[1], "b", true);
        const void* c = operand(operands[2], "c", m_plan.reads_c);
        void* d = const_cast<void*>(operand(operands[3], "d", true));
        const void* bias = operand(operands[4], "bias", m_plan.has_bias);
        void* workspace = const_cast<void*>(operand(operands[5], "workspace", m_plan.workspace_bytes > 0));
        if (m_plan.reads_c && c == d && m_plan.c.batch_stride != m_plan.d.batch_stride)
            fail(Status::bad_bindings, fmt::format("matmul: c and d are one buffer but their batch strides differ ({} "
                                                   "and {}): cuBLASLt computes in place only on one layout",
                                                   m_plan.c.batch_stride, m_plan.d.batch_stride));
        if (m_plan.has_bias)
            KF_CUBLASLT_CHECK(
                lt_set(cublasLtMatmulDescSetAttribute, m_desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias));
        // cuBLASLt's A is the step's b and its B the step's a; without C, D is passed and not read.
        KF_CUBLASLT_CHECK(cublasLtMatmul(m_handle, m_desc.get(), &m_plan.alpha, b, m_a.get(), a, m_b.get(),
                                         &m_plan.beta, m_plan.reads_c ? c : d, c_layout(), d, m_d.get(), &m_algo,
                                         workspace, workspace ? m_plan.workspace_bytes : 0, stream));
    }

private:
    void configure_descriptor()
    {
        cublasLtMatmulDesc_t desc = m_desc.get();
        KF_CUBLASLT_CHECK(lt_set(cublasLtMatmulDescSetAttribute, desc, CUBLASLT_MATMUL_DESC_POINTER_MODE,
                                 static_cast<int32_t>(CUBLASLT_POINTER_MODE_HOST)));
        KF_CUBLASLT_CHECK(lt_set(cublasLtMatmulDescSetAttribute, desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                 static_cast<int32_t>(m_plan.transa ? CUBLAS_OP_T : CUBLAS_OP_N)));
        KF_CUBLASLT_CHECK(lt_set(cublasLtMatmulDescSetAttribute, desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                 static_cast<int32_t>(m_plan.transb ? CUBLAS_OP_T : CUBLAS_OP_N)));
        KF_CUBLASLT_CHECK(lt_set(cublasLtMatmulDescSetAttribute, desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                 lt_epilogue_value(m_plan.epilogue)));
        if (m_plan.has_bias) {
            KF_CUBLASLT_CHECK(lt_set(cublasLtMatmulDescSetAttribute, desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                     static_cast<int32_t>(lt_type(m_plan.bias_dtype))));
            KF_CUBLASLT_CHECK(lt_set(cublasLtMatmulDescSetAttribute, desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                     k_bias_placeholder));
        }
    }

    void constrain(const LtPreference& preference) const
    {
        cublasLtMatmulPreference_t pref = preference.get();
        KF_CUBLASLT_CHECK(lt_set(cublasLtMatmulPreferenceSetAttribute, pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                 uint64_t{m_plan.workspace_bytes}));
        KF_CUBLASLT_CHECK(lt_set(cublasLtMatmulPreferenceSetAttribute, pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                 static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_NONE)));
        if (m_plan.a.dtype == StepDtype::f32)
            KF_CUBLASLT_CHECK(lt_set(cublasLtMatmulPreferenceSetAttribute, pref, CUBLASLT_MATMUL_PREF_IMPL_MASK,
                                     uint64_t{~k_reduced_inputs}));
        KF_CUBLASLT_CHECK(lt_set(cublasLtMatmulPreferenceSetAttribute, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                 uint32_t{m_plan.a.min_alignment}));
        KF_CUBLASLT_CHECK(lt_set(cublasLtMatmulPreferenceSetAttribute, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                 uint32_t{m_plan.b.min_alignment}));
        KF_CUBLASLT_CHECK(lt_set(cublasLtMatmulPreferenceSetAttribute, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                 uint32_t{m_plan.c.min_alignment}));
        KF_CUBLASLT_CHECK(lt_set(cublasLtMatmulPreferenceSetAttribute, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                 uint32_t{m_plan.d.min_alignment}));
    }

    // The heuristic's results that pass kforge's checks, in its order; m_left_out says what was
    // dropped and why.
    std::vector<LtCandidate> allowed_algorithms()
    {
        LtPreference preference;
        constrain(preference);
        cublasLtMatmulHeuristicResult_t results[k_heuristic_results] = {};
        int returned = 0;
        cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(m_handle, m_desc.get(), m_a.get(), m_b.get(), c_layout(),
                                                               m_d.get(), preference.get(), k_heuristic_results,
                                                               results, &returned);
        // NOT_SUPPORTED is the heuristic's "nothing fits this configuration": an empty list.
        if (status == CUBLAS_STATUS_NOT_SUPPORTED) {
            m_left_out = fmt::format("the heuristic found none: {}", cublasLtGetStatusString(status));
            return {};
        }
        KF_CUBLASLT_CHECK(status);
        std::vector<LtCandidate> allowed;
        int unusable = 0, reduced_inputs = 0, split_k = 0, in_place_only = 0;
        for (int i = 0; i < returned; ++i) {
            const cublasLtMatmulHeuristicResult_t& result = results[i];
            if (result.state != CUBLAS_STATUS_SUCCESS || result.workspaceSize > m_plan.workspace_bytes) {
                ++unusable;
                continue;
            }
            uint64_t flags = 0;
            size_t written = 0;
            KF_CUBLASLT_CHECK(cublasLtMatmulAlgoCapGetAttribute(&result.algo, CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS,
                                                                &flags, sizeof flags, &written));
            if (m_plan.a.dtype == StepDtype::f32 && (flags & k_reduced_inputs) != 0) {
                ++reduced_inputs;
                continue;
            }
            // Whether the step's C and D are one buffer is known only at run time, so a step with a
            // C takes only algorithms that can also write D apart from C.
            int32_t out_of_place = 1;
            if (m_plan.reads_c)
                KF_CUBLASLT_CHECK(cublasLtMatmulAlgoCapGetAttribute(&result.algo,
                                                                    CUBLASLT_ALGO_CAP_OUT_OF_PLACE_RESULT_SUPPORT,
                                                                    &out_of_place, sizeof out_of_place, &written));
            if (out_of_place == 0) {
                ++in_place_only;
                continue;
            }
            int32_t id = 0, splits = 1;
            uint32_t tile = 0, stages = 0, reduction = 0, swizzle = 0, custom = 0;
            KF_CUBLASLT_CHECK(lt_algo_config(result.algo, CUBLASLT_ALGO_CONFIG_ID, id));
            KF_CUBLASLT_CHECK(lt_algo_config(result.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, tile));
            KF_CUBLASLT_CHECK(lt_algo_config(result.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, stages));
            KF_CUBLASLT_CHECK(lt_algo_config(result.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, splits));
            KF_CUBLASLT_CHECK(lt_algo_config(result.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, reduction));
            KF_CUBLASLT_CHECK(lt_algo_config(result.algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, swizzle));
            KF_CUBLASLT_CHECK(lt_algo_config(result.algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, custom));
            // The mask asked for none; a split that slipped through would still need a reduction.
            if (splits > 1 || reduction != CUBLASLT_REDUCTION_SCHEME_NONE) {
                ++split_k;
                continue;
            }
            allowed.push_back(LtCandidate{
                result.algo, result.workspaceSize,
                fmt::format("algo id {} (tile id {}, stages id {}, no split-K, swizzle {}, custom option {}, {}; "
                            "heuristic rank {}, {:.2f} waves)",
                            id, tile, stages, swizzle, custom, impl_flags_text(flags), i, result.wavesCount)});
        }
        std::vector<std::string> why;
        if (unusable)
            why.push_back(fmt::format("{} unusable", unusable));
        if (reduced_inputs)
            why.push_back(fmt::format("{} with TF32/BF16/F16 inputs", reduced_inputs));
        if (split_k)
            why.push_back(fmt::format("{} with split-K", split_k));
        if (in_place_only)
            why.push_back(fmt::format("{} that write D only in place of C", in_place_only));
        m_left_out = fmt::format("the heuristic returned {}", returned);
        for (const auto& reason : why)
            m_left_out += (&reason == &why.front() ? "; left out " : ", ") + reason;
        return allowed;
    }

    // Without a C, D is passed as C (beta is 0, so it is not read): one layout for both, as in place.
    cublasLtMatrixLayout_t c_layout() const { return m_plan.reads_c ? m_c.get() : m_d.get(); }

    // The operand's address, checked against what the heuristic was told: present when needed and
    // 256-byte aligned, as every operand of a plan is.
    static const void* operand(unsigned long long address, const char* name, bool needed)
    {
        if (!needed)
            return nullptr;
        if (address == 0)
            fail(Status::bad_bindings, fmt::format("matmul: operand {} has no address", name));
        if (address % 256 != 0)
            fail(Status::bad_bindings, fmt::format("matmul: operand {} at {:#x} is not 256-byte aligned, as the chosen "
                                                   "algorithm was told",
                                                   name, address));
        return reinterpret_cast<const void*>(static_cast<uintptr_t>(address));
    }

    MatmulPlan m_plan;
    cublasLtHandle_t m_handle;
    LtMatmulDesc m_desc;
    LtLayout m_a, m_b, m_c, m_d;
    cublasLtMatmulAlgo_t m_algo{};
    std::string m_left_out;
};

} // namespace

std::unique_ptr<LibraryStep> prepare_matmul_step(const KforgeStep& step)
{
    return std::make_unique<CublasLtMatmulStep>(step);
}

std::string cublaslt_version()
{
    size_t version = cublasLtGetVersion();
    return fmt::format("cuBLASLt {}.{}.{}", version / 10000, version / 100 % 100, version % 100);
}

} // namespace kforge::vendor
