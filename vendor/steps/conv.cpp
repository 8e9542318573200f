// The conv step: one cudnnBackendExecute per run, on an execution plan built once at prepare.
//
// prepare builds cuDNN's graph from the ConvPlan (conv_plan.hpp): three tensors, a
// convolution descriptor, one forward or backward-data operation, and the operation graph, then
// lets choose_engine() (conv_engines.hpp) pick the execution plan `algo` indexes. Every
// descriptor is finalized at once, so an attribute cuDNN refuses is reported at the call that set
// it, not at a later use. run() points the variant pack at the run's buffers: building one is host
// work, but not free, so the last one is kept and rebuilt only when an address changes.
#include <array>
#include <optional>

#include <fmt/format.h>

#include "cudnn_api.hpp"
#include "step.hpp"
#include "conv_engines.hpp"
#include "conv_plan.hpp"
#include "vendor_routine.hpp"

namespace kforge::vendor {
namespace {

// What each tensor is declared aligned to; kforge's operands are 256-byte aligned.
constexpr int64_t k_conv_tensor_alignment = 16;

cudnnDataType_t cudnn_type(StepDtype dtype)
{
    switch (dtype) {
    case StepDtype::bf16:
        return CUDNN_DATA_BFLOAT16;
    case StepDtype::f16:
        return CUDNN_DATA_HALF;
    case StepDtype::f32:
        break;
    }
    return CUDNN_DATA_FLOAT;
}

CudnnDescriptor make_tensor(const CudnnTensorPlan& plan, StepDtype dtype)
{
    CudnnDescriptor tensor(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    cudnnDataType_t type = cudnn_type(dtype);
    auto rank = static_cast<int64_t>(plan.dims.size());
    KF_CUDNN_CHECK(
        dnn().cudnnBackendSetAttribute(tensor.get(), CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
    KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(tensor.get(), CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, rank,
                                                  plan.dims.data()));
    KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(tensor.get(), CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, rank,
                                                  plan.strides.data()));
    KF_CUDNN_CHECK(
        dnn().cudnnBackendSetAttribute(tensor.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &plan.uid));
    KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(tensor.get(), CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1,
                                                  &k_conv_tensor_alignment));
    KF_CUDNN_CHECK(dnn().cudnnBackendFinalize(tensor.get()));
    return tensor;
}

CudnnDescriptor make_convolution(const ConvPlan& plan)
{
    CudnnDescriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    int64_t dims = plan.spatial_dims();
    KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(conv.get(), CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
                                                  &compute));
    KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(conv.get(), CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                                                  CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    KF_CUDNN_CHECK(
        dnn().cudnnBackendSetAttribute(conv.get(), CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims));
    KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(conv.get(), CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, dims,
                                                  plan.dilation.data()));
    KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(conv.get(), CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64,
                                                  dims, plan.stride.data()));
    KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(conv.get(), CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64,
                                                  dims, plan.pre_padding.data()));
    KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(conv.get(), CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64,
                                                  dims, plan.post_padding.data()));
    KF_CUDNN_CHECK(dnn().cudnnBackendFinalize(conv.get()));
    return conv;
}

// Forward: y = conv(x, w). Backward data: dx = the data gradient of conv(dx, w) at dy, where the
// step's x is dy and its y is dx.
CudnnDescriptor make_operation(bool transposed, const CudnnDescriptor& input, const CudnnDescriptor& filter,
                               const CudnnDescriptor& output, const CudnnDescriptor& conv)
{
    CudnnDescriptor op(transposed ? CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR
                                  : CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    cudnnBackendDescriptor_t x = input.get(), w = filter.get(), y = output.get(), c = conv.get();
    float alpha = 1.0f, beta = 0.0f;
    if (transposed) {
        KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
        KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));
        KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
        KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c));
        KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                                                      CUDNN_TYPE_FLOAT, 1, &alpha));
        KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                                                      CUDNN_TYPE_FLOAT, 1, &beta));
    } else {
        KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
        KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));
        KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
        KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c));
        KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                                                      CUDNN_TYPE_FLOAT, 1, &alpha));
        KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(op.get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                                                      CUDNN_TYPE_FLOAT, 1, &beta));
    }
    KF_CUDNN_CHECK(dnn().cudnnBackendFinalize(op.get()));
    return op;
}

CudnnDescriptor make_graph(const CudnnDescriptor& operation, cudnnHandle_t handle)
{
    CudnnDescriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    cudnnBackendDescriptor_t op = operation.get();
    KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
    KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                                  &handle));
    KF_CUDNN_CHECK(dnn().cudnnBackendFinalize(graph.get()));
    return graph;
}

class CudnnConvStep : public LibraryStep
{
public:
    explicit CudnnConvStep(const KforgeStep& step)
        : m_plan(plan_conv(step.conv, step.workspace_bytes)), m_handle(shared_cudnn_handle()),
          m_input(make_tensor(m_plan.input, m_plan.dtype)), m_filter(make_tensor(m_plan.filter, m_plan.dtype)),
          m_output(make_tensor(m_plan.output, m_plan.dtype)), m_conv(make_convolution(m_plan)),
          m_operation(make_operation(m_plan.transposed, m_input, m_filter, m_output, m_conv)),
          m_graph(make_graph(m_operation, m_handle)),
          m_engine(choose_engine(m_graph, m_handle, m_plan, static_cast<uint64_t>(step.algo)))
    {
        m_chosen = m_engine.text;
    }

    size_t operand_count() const override { return KFORGE_STEP_CONV_OPERANDS; }

    void run(const unsigned long long* operands, cudaStream_t stream) override
    {
        OperandAddresses addresses{};
        const char* names[] = {"x", "w", "y", "workspace"};
        for (size_t i = 0; i < addresses.size(); ++i) {
            // The workspace is passed only to an engine that uses one.
            bool needed = i < 3 || m_engine.workspace_bytes > 0;
            addresses[i] = needed ? operands[i] : 0;
            if (needed && addresses[i] == 0)
                fail(Status::bad_bindings,
                     fmt::format("conv: operand {} has no address{}", names[i],
                                 i == 3 ? fmt::format(" (the chosen engine needs {} bytes)", m_engine.workspace_bytes)
                                        : ""));
            if (addresses[i] % k_conv_tensor_alignment != 0)
                fail(Status::bad_bindings, fmt::format("conv: operand {} at {:#x} is not {}-byte aligned", names[i],
                                                       addresses[i], k_conv_tensor_alignment));
        }
        if (!m_variant_pack || addresses != m_pack_addresses) {
            m_variant_pack.reset();
            m_variant_pack.emplace(make_variant_pack(addresses));
            m_pack_addresses = addresses;
        }
        KF_CUDNN_CHECK(dnn().cudnnSetStream(m_handle, stream));
        KF_CUDNN_CHECK(dnn().cudnnBackendExecute(m_handle, m_engine.plan.get(), m_variant_pack->get()));
    }

private:
    using OperandAddresses = std::array<unsigned long long, KFORGE_STEP_CONV_OPERANDS>;

    // The run's buffers by the tensors' unique ids, and the workspace (null when none is used).
    static CudnnDescriptor make_variant_pack(const OperandAddresses& addresses)
    {
        CudnnDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
        int64_t uids[] = {k_conv_uid_x, k_conv_uid_w, k_conv_uid_y};
        void* pointers[3];
        for (size_t i = 0; i < 3; ++i)
            pointers[i] = reinterpret_cast<void*>(static_cast<uintptr_t>(addresses[i]));
        void* workspace = reinterpret_cast<void*>(static_cast<uintptr_t>(addresses[3]));
        KF_CUDNN_CHECK(
            dnn().cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids));
        KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                                      CUDNN_TYPE_VOID_PTR, 3, pointers));
        KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                                      CUDNN_TYPE_VOID_PTR, 1, &workspace));
        KF_CUDNN_CHECK(dnn().cudnnBackendFinalize(pack.get()));
        return pack;
    }

    // Members are destroyed in reverse order: the variant pack and the execution plan go before
    // the graph, the operation and the tensors they were built from.
    ConvPlan m_plan;
    cudnnHandle_t m_handle;
    CudnnDescriptor m_input, m_filter, m_output, m_conv, m_operation, m_graph;
    EngineChoice m_engine;
    std::optional<CudnnDescriptor> m_variant_pack;
    OperandAddresses m_pack_addresses{};
};

} // namespace

std::unique_ptr<LibraryStep> prepare_conv_step(const KforgeStep& step) { return std::make_unique<CudnnConvStep>(step); }

} // namespace kforge::vendor
