// Library steps in the GPU worker: the vendor library's description of a step, its operands per
// run, preparation and runs; see the header.
#include "evaluator/worker/library_steps.hpp"

#include <utility>

#include <fmt/format.h>

#include "evaluator/worker/cuda_driver.hpp"
#include "util/error.hpp"

namespace kforge {
namespace {

constexpr size_t k_message_bytes = 2048;

// Static storage for the names the C interface takes as `const char*`.
const char* dtype_text(DType dtype)
{
    switch (dtype) {
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::f32: return "f32";
    default: return "unsupported";
    }
}

DType dtype_of(const ResolvedLibraryStep& step, std::string_view role, DType fallback)
{
    const ResolvedOperand* operand = step.operand(role);
    return operand ? operand->dtype : fallback;
}

int vendor_epilogue(StepEpilogue epilogue)
{
    switch (epilogue) {
    case StepEpilogue::relu: return KFORGE_EPILOGUE_RELU;
    case StepEpilogue::gelu_tanh: return KFORGE_EPILOGUE_GELU_TANH;
    case StepEpilogue::none: break;
    }
    return KFORGE_EPILOGUE_NONE;
}

std::string step_label(size_t launch, const ResolvedLibraryStep& step)
{
    return fmt::format("launches[{}] ({})", launch, library_op_name(step.op));
}

} // namespace

KforgeStep to_vendor_step(const ResolvedLibraryStep& step)
{
    KforgeStep out{};
    out.algo = step.algo;
    out.workspace_bytes = static_cast<unsigned long long>(step.workspace_bytes);
    if (step.op == LibraryOp::matmul) {
        const ResolvedMatmul& mm = step.matmul;
        out.op = KFORGE_STEP_MATMUL;
        KforgeMatmulStep& m = out.matmul;
        m.m = mm.m;
        m.n = mm.n;
        m.k = mm.k;
        m.batch = mm.batch;
        m.stride_a = mm.strides[0];
        m.stride_b = mm.strides[1];
        m.stride_c = mm.strides[2];
        m.stride_d = mm.strides[3];
        m.transpose_a = mm.transpose_a ? 1 : 0;
        m.transpose_b = mm.transpose_b ? 1 : 0;
        m.alpha = mm.alpha;
        m.beta = mm.beta;
        m.has_c = mm.has_c ? 1 : 0;
        m.has_bias = mm.has_bias ? 1 : 0;
        m.epilogue = vendor_epilogue(mm.epilogue);
        DType d = dtype_of(step, "d", DType::f32);
        m.a_dtype = dtype_text(dtype_of(step, "a", DType::f32));
        m.b_dtype = dtype_text(dtype_of(step, "b", DType::f32));
        m.c_dtype = dtype_text(dtype_of(step, "c", d));
        m.d_dtype = dtype_text(d);
        m.bias_dtype = dtype_text(dtype_of(step, "bias", d));
        return out;
    }
    const ResolvedConv& cv = step.conv;
    out.op = KFORGE_STEP_CONV;
    KforgeConvStep& c = out.conv;
    c.spatial_dims = cv.spatial_dims;
    c.n = cv.n;
    c.c = cv.c;
    c.k = cv.k;
    c.groups = cv.groups;
    for (int d = 0; d < 3; ++d) {
        c.size[d] = cv.size[d];
        c.kernel[d] = cv.kernel[d];
        c.stride[d] = cv.stride[d];
        c.padding[d] = cv.padding[d];
        c.dilation[d] = cv.dilation[d];
        c.output_padding[d] = cv.output_padding[d];
    }
    c.transposed = cv.transposed ? 1 : 0;
    c.channels_last = cv.channels_last ? 1 : 0;
    c.dtype = dtype_text(dtype_of(step, "x", DType::f32));
    return out;
}

std::vector<unsigned long long> step_operand_addresses(const ResolvedLibraryStep& step, const BufferBindings& buffers)
{
    static constexpr std::string_view k_matmul_order[] = {"a", "b", "c", "d", "bias", "workspace"};
    static constexpr std::string_view k_conv_order[] = {"x", "w", "y", "workspace"};
    std::vector<unsigned long long> out;
    auto add = [&](std::string_view role) {
        const ResolvedOperand* operand = step.operand(role);
        if (!operand) {
            out.push_back(0);
            return;
        }
        auto it = buffers.find(operand->name);
        if (it == buffers.end())
            fail_runtime("library step: no device address for '{}' ({})", operand->name, role);
        out.push_back(static_cast<unsigned long long>(it->second));
    };
    if (step.op == LibraryOp::matmul)
        for (auto role : k_matmul_order)
            add(role);
    else
        for (auto role : k_conv_order)
            add(role);
    return out;
}

PreparedStep::~PreparedStep()
{
    // After a sticky error the release would fail or block behind a spinning kernel; the worker is
    // about to exit, which frees everything.
    if (m_state && m_api && !context_lost())
        m_api->release(m_state);
}

PreparedStep::PreparedStep(PreparedStep&& other) noexcept
    : m_api(std::exchange(other.m_api, nullptr)), m_state(std::exchange(other.m_state, nullptr)),
      m_step(std::exchange(other.m_step, nullptr))
{
}

PreparedStep& PreparedStep::operator=(PreparedStep&& other) noexcept
{
    if (this != &other) {
        PreparedStep gone(std::move(*this));
        m_api = std::exchange(other.m_api, nullptr);
        m_state = std::exchange(other.m_state, nullptr);
        m_step = std::exchange(other.m_step, nullptr);
    }
    return *this;
}

std::string PreparedStep::run(const BufferBindings& buffers, CUstream stream) const
{
    std::vector<unsigned long long> operands = step_operand_addresses(*m_step, buffers);
    char error[k_message_bytes] = {};
    int status = m_api->run(m_state, operands.data(), operands.size(), stream, error, sizeof error);
    return status == KFORGE_VENDOR_OK ? "" : std::string(error[0] ? error : "the library refused the step");
}

std::string PreparedStep::chosen() const { return m_state ? m_api->chosen(m_state) : ""; }

PlanSteps::PlanSteps(const VendorLibrary& library, const ResolvedPlan& plan)
{
    for (size_t i = 0; i < plan.launches.size(); ++i) {
        if (!plan.launches[i].library)
            continue;
        const ResolvedLibraryStep& step = *plan.launches[i].library;
        std::string label = step_label(i, step);
        if (!library.available()) {
            m_failure = Verdict{VerdictKind::runtime_error,
                                fmt::format("{}: library steps need kforge's vendor library: {}", label, library.reason())};
            return;
        }
        KforgeStep description = to_vendor_step(step);
        char error[k_message_bytes] = {};
        void* state = nullptr;
        int status = library.steps().prepare(&description, &state, error, sizeof error);
        if (status != KFORGE_VENDOR_OK || !state) {
            // An index past the allowed candidates is the plan's mistake; anything else (the library
            // missing here, a call refused) is a failure to run it.
            m_failure = Verdict{status == KFORGE_VENDOR_NO_ALGORITHM || status == KFORGE_VENDOR_BAD_BINDINGS
                                    ? VerdictKind::plan_error
                                    : VerdictKind::runtime_error,
                                fmt::format("{}: {}", label, error[0] ? error : "the library could not prepare it")};
            return;
        }
        PreparedStep prepared;
        prepared.m_api = &library.steps();
        prepared.m_state = state;
        prepared.m_step = &step;
        m_steps.emplace_back(i, std::move(prepared));
    }
}

void PlanSteps::run(size_t index, const BufferBindings& buffers, CUstream stream) const
{
    for (const auto& [launch, step] : m_steps) {
        if (launch != index)
            continue;
        if (std::string error = step.run(buffers, stream); !error.empty())
            throw CudaError(CUDA_ERROR_INVALID_VALUE, fmt::format("{}: {}", step_label(launch, *step.m_step), error));
        return;
    }
    throw CudaError(CUDA_ERROR_INVALID_VALUE, fmt::format("launches[{}]: a library step that was not prepared", index));
}

Json PlanSteps::chosen() const
{
    Json out = Json::array();
    for (const auto& [launch, step] : m_steps)
        out.push_back(Json{{"launch", launch}, {"step", describe_library_step(*step.m_step)}, {"chosen", step.chosen()}});
    return out;
}

} // namespace kforge
