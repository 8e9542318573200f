// plan_conv(): a conv step as cuDNN graph-API tensors and a convolution descriptor, and its checks.
//
// The sizes follow PyTorch's Conv and ConvTranspose formulas (docs/library-steps.md); the checks
// are those PyTorch makes before calling cuDNN, so a step that passes here fails on the GPU only
// for want of an engine.
#include "conv_plan.hpp"

#include <fmt/format.h>

#include "vendor_routine.hpp"

namespace kforge::vendor {
namespace {

[[noreturn]] void refuse_conv(const std::string& why) { fail(Status::bad_bindings, "conv: " + why); }

void require_at_least(const std::string& name, long long value, long long low)
{
    if (value < low)
        refuse_conv(fmt::format("{} = {}: it must be at least {}", name, value, low));
}

// Packed strides of `dims` ([n, channels, spatial...]): row-major, or channels last.
std::vector<int64_t> activation_strides(const std::vector<int64_t>& dims, bool channels_last)
{
    size_t rank = dims.size();
    std::vector<int64_t> strides(rank);
    if (!channels_last) {
        strides[rank - 1] = 1;
        for (size_t i = rank - 1; i-- > 0;)
            strides[i] = strides[i + 1] * dims[i + 1];
        return strides;
    }
    strides[1] = 1;
    int64_t running = dims[1];
    for (size_t i = rank; i-- > 2;) {
        strides[i] = running;
        running *= dims[i];
    }
    strides[0] = running;
    return strides;
}

std::vector<int64_t> packed_strides(const std::vector<int64_t>& dims) { return activation_strides(dims, false); }

std::string dims_text(const std::vector<int64_t>& values)
{
    std::string text = "[";
    for (size_t i = 0; i < values.size(); ++i)
        text += (i ? "," : "") + std::to_string(values[i]);
    return text + "]";
}

// The step's output size along one spatial dimension; refuses one below 1.
int64_t output_size(const KforgeConvStep& step, int i)
{
    long long size = step.size[i], kernel = step.kernel[i], stride = step.stride[i];
    long long padding = step.padding[i], dilation = step.dilation[i], extra = step.output_padding[i];
    long long span = dilation * (kernel - 1) + 1;  // input elements one output element sees
    if (step.transposed) {
        if (extra >= stride && extra >= dilation)
            refuse_conv(
                fmt::format("output_padding[{}] = {}: it must be less than the stride ({}) or the dilation ({})", i,
                            extra, stride, dilation));
        long long out = (size - 1) * stride - 2 * padding + span - 1 + extra + 1;
        if (out < 1)
            refuse_conv(fmt::format("the output size along dimension {} is (size - 1) * stride - 2 * padding + "
                                    "dilation * (kernel - 1) + output_padding + 1 = {}, less than 1",
                                    i, out));
        return out;
    }
    if (extra != 0)
        refuse_conv(fmt::format("output_padding[{}] = {}: only a transposed convolution has one", i, extra));
    long long reach = size + 2 * padding - span;
    if (reach < 0)
        refuse_conv(fmt::format("the output size along dimension {} is less than 1: the kernel spans {} elements "
                                "(dilation * (kernel - 1) + 1) but the padded input has {}",
                                i, span, size + 2 * padding));
    return reach / stride + 1;
}

// The padding after the data along one dimension. cuDNN checks that the data gradient's dy has
// the size the forward convolution of dx gives, floor((dx + pre + post - span) / stride) + 1. An
// output_padding of a stride or more (PyTorch allows it below the dilation) makes that one or more
// larger than dy, so the post padding gives back the whole strides of it. Post padding changes no
// value of dx: every dx[i] sums dy[o] w[t] over i = o * stride - pre_padding + t * dilation.
int64_t post_padding(const KforgeConvStep& step, int i)
{
    long long padding = step.padding[i];
    if (!step.transposed)
        return padding;
    long long extra = step.output_padding[i], stride = step.stride[i];
    long long post = padding - (extra - extra % stride);
    if (post < 0)
        refuse_conv(fmt::format("output_padding[{}] = {} with stride {} and padding {}: cuDNN's data gradient takes an "
                                "output_padding whose whole strides fit in the padding, here at most {}",
                                i, extra, stride, padding, (padding / stride + 1) * stride - 1));
    return post;
}

void check_conv_step(const KforgeConvStep& step)
{
    if (step.spatial_dims < 1 || step.spatial_dims > 3)
        refuse_conv(fmt::format("spatial_dims = {}: cuDNN steps have 1, 2 or 3", step.spatial_dims));
    require_at_least("n", step.n, 1);
    require_at_least("c", step.c, 1);
    require_at_least("k", step.k, 1);
    require_at_least("groups", step.groups, 1);
    if (step.c % step.groups != 0)
        refuse_conv(fmt::format("c = {} input channels are not divisible by groups = {}", step.c, step.groups));
    if (step.k % step.groups != 0)
        refuse_conv(fmt::format("k = {} output channels are not divisible by groups = {}", step.k, step.groups));
    for (int i = 0; i < step.spatial_dims; ++i) {
        require_at_least(fmt::format("size[{}]", i), step.size[i], 1);
        require_at_least(fmt::format("kernel[{}]", i), step.kernel[i], 1);
        require_at_least(fmt::format("stride[{}]", i), step.stride[i], 1);
        require_at_least(fmt::format("dilation[{}]", i), step.dilation[i], 1);
        require_at_least(fmt::format("padding[{}]", i), step.padding[i], 0);
        require_at_least(fmt::format("output_padding[{}]", i), step.output_padding[i], 0);
    }
}

} // namespace

ConvPlan plan_conv(const KforgeConvStep& step, unsigned long long workspace_bytes)
{
    ConvPlan plan;
    plan.dtype = parse_step_dtype(step.dtype, "conv: dtype");
    check_conv_step(step);
    plan.transposed = step.transposed != 0;
    plan.channels_last = step.channels_last != 0;
    plan.step_spatial_dims = step.spatial_dims;
    plan.groups = step.groups;
    plan.workspace_bytes = workspace_bytes;

    std::vector<int64_t> in_dims{step.n, step.c}, out_dims{step.n, step.k};
    std::vector<int64_t> filter_dims = plan.transposed ? std::vector<int64_t>{step.c, step.k / step.groups}
                                                       : std::vector<int64_t>{step.k, step.c / step.groups};
    if (step.spatial_dims == 1) {
        // The unit height of a 1-D convolution seen as 2-D.
        for (auto* dims : {&in_dims, &out_dims, &filter_dims})
            dims->push_back(1);
        plan.pre_padding.push_back(0);
        plan.post_padding.push_back(0);
        plan.stride.push_back(1);
        plan.dilation.push_back(1);
    }
    for (int i = 0; i < step.spatial_dims; ++i) {
        in_dims.push_back(step.size[i]);
        out_dims.push_back(output_size(step, i));
        filter_dims.push_back(step.kernel[i]);
        plan.pre_padding.push_back(step.padding[i]);
        plan.post_padding.push_back(post_padding(step, i));
        plan.stride.push_back(step.stride[i]);
        plan.dilation.push_back(step.dilation[i]);
    }
    plan.input = CudnnTensorPlan{plan.transposed ? "dy" : "x", "x", k_conv_uid_x, in_dims,
                                 activation_strides(in_dims, plan.channels_last)};
    plan.filter = CudnnTensorPlan{"w", "w", k_conv_uid_w, filter_dims, packed_strides(filter_dims)};
    plan.output = CudnnTensorPlan{plan.transposed ? "dx" : "y", "y", k_conv_uid_y, out_dims,
                                  activation_strides(out_dims, plan.channels_last)};
    return plan;
}

std::string ConvPlan::describe() const
{
    auto tensor = [](const CudnnTensorPlan& t) {
        return fmt::format("{}={} dims={} strides={}", t.role, t.operand, dims_text(t.dims), dims_text(t.strides));
    };
    std::string excluded = dtype == StepDtype::f32 ? "TENSOR_CORE,DOWN_CONVERT_INPUTS,REDUCED_PRECISION_REDUCTION"
                                                   : "DOWN_CONVERT_INPUTS,REDUCED_PRECISION_REDUCTION";
    std::string text = fmt::format("cudnnBackendExecute op={} mode=CROSS_CORRELATION compute=FLOAT dtype={} layout={}",
                                   transposed ? "CONVOLUTION_BACKWARD_DATA" : "CONVOLUTION_FORWARD",
                                   dtype_name(dtype), channels_last ? "channels_last" : "nchw");
    // The operation's own order: forward x, w, y; backward data dy, w, dx.
    text += " " + tensor(input) + " " + tensor(filter) + " " + tensor(output);
    text +=
        fmt::format(" spatial_dims={} pre_padding={} post_padding={} stride={} dilation={} groups={}", spatial_dims(),
                    dims_text(pre_padding), dims_text(post_padding), dims_text(stride), dims_text(dilation), groups);
    if (step_spatial_dims == 1)
        text += " unit_height=1";
    text += fmt::format(" heuristics=INSTANT+FALLBACK excluded_notes={} workspace={}", excluded, workspace_bytes);
    return text;
}

} // namespace kforge::vendor
