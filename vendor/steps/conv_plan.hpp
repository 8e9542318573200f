// The cuDNN operation a conv step makes, derived from the step alone (no GPU, no cuDNN).
//
// cuDNN's graph API describes every tensor by dims and strides, so layouts are only strides: x and
// y are [n, c, spatial...] in dims order whether they are stored NCHW or channels last, and w is
// PyTorch's packed [k, c / groups, kernel...] either way. There is no groups attribute: cuDNN
// infers groups from the filter's channel count against the input's. cuDNN wants at least 4-D
// tensors, so a 1-D convolution becomes a 2-D one over a unit height (PyTorch does the same), with
// kernel, stride and dilation 1 and no padding along it. A transposed convolution is the data
// gradient of the forward convolution that maps its output to its input: the step's x is the
// gradient dy, its y the result dx, and its weight [c, k / groups, kernel...] is the forward
// filter unchanged (PyTorch's cudnn_convolution_transpose); padding is symmetric except where an
// output_padding of a stride or more needs less padding after the data (post_padding() says why).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kforge_vendor.h"
#include "matmul_plan.hpp"

namespace kforge::vendor {

// One tensor of the operation: its unique id in the graph and variant pack, and its layout.
struct CudnnTensorPlan {
    const char* role = "";         // the operation's name for it: "x", "w", "y" or "dy", "w", "dx"
    const char* operand = "";      // the step's operand: "x", "w" or "y"
    int64_t uid = 0;
    std::vector<int64_t> dims, strides;
};

struct ConvPlan {
    bool transposed = false;       // CONVOLUTION_BACKWARD_DATA instead of CONVOLUTION_FORWARD
    StepDtype dtype = StepDtype::f32;
    bool channels_last = false;
    int step_spatial_dims = 2;     // the step's: 1, 2 or 3
    // cuDNN's tensors: forward x, w, y; backward data dy (= the step's x), w, dx (= the step's y).
    CudnnTensorPlan input, filter, output;
    // One entry per cuDNN spatial dimension (2 or 3).
    std::vector<int64_t> pre_padding, post_padding, stride, dilation;
    int64_t groups = 1;
    uint64_t workspace_bytes = 0;

    int64_t spatial_dims() const { return static_cast<int64_t>(stride.size()); }
    // "cudnnBackendExecute op=CONVOLUTION_FORWARD ... x=x dims=[..] strides=[..] ..." (describe).
    std::string describe() const;
};

// Operand ids in the graph and the variant pack, in the order of kforge_vendor.h's operands.
constexpr int64_t k_conv_uid_x = 1, k_conv_uid_w = 2, k_conv_uid_y = 3;

// Derives the operation, failing with bad_bindings for a dtype it lacks, non-positive sizes,
// channels that groups do not divide, an output smaller than one element, or an output_padding
// not below the stride or the dilation (or any on a forward convolution).
ConvPlan plan_conv(const KforgeConvStep& step, unsigned long long workspace_bytes);

} // namespace kforge::vendor
