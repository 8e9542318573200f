"""Work of a region from its shapes: FLOPs of its anchors, bytes it must move, and a time estimate.

Without a GPU, extract ranks regions by this estimate (and says so): the time an H200 would need to
run the region as torch eager runs it, one kernel per operator, each reading its operands and
writing its result (a hand-written RMSNorm is eight passes over the row, not one), at the roofline
(max(FLOPs / peak, bytes / bandwidth), with dense fp32 (non-tensor-core) and bf16/fp16 (tensor core)
peaks) plus KERNEL_FLOOR per kernel. A measurement replaces it whenever a GPU is there. The bytes a
fused kernel must move (the region's inputs, tensors and outputs once) are reported beside it.
"""
import math

import torch

from .regions import op_name

PEAK_FLOPS = {torch.float32: 67e12, torch.float16: 990e12, torch.bfloat16: 990e12}
BANDWIDTH = 4.8e12  # bytes/s, H200 HBM3e


def _shape(node):
    meta = node.meta.get("kforge_meta") if hasattr(node, "meta") else None
    return meta[0] if meta else None


def _numel(shape):
    return math.prod(shape) if shape else 1


def node_flops(node):
    name = op_name(node)
    out = _shape(node)
    args = [a for a in node.args if hasattr(a, "meta")]
    if name in ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear") and out is not None:
        a = _shape(args[-2] if name in ("addmm", "baddbmm") else args[0])
        return 2 * _numel(out) * (a[-1] if a else 1)
    if name in ("convolution", "_convolution", "cudnn_convolution") and out is not None:
        w = _shape(node.args[1])
        transposed = len(node.args) > 6 and node.args[6] is True
        groups = node.args[8] if len(node.args) > 8 else 1
        if transposed:
            x = _shape(node.args[0])
            return 2 * _numel(x) * (w[1] * groups // max(groups, 1)) * _numel(w[2:])
        return 2 * _numel(out) * w[1] * _numel(w[2:])
    if "scaled_dot_product" in name:
        q, k = _shape(node.args[0]), _shape(node.args[1])
        return 4 * _numel(q[:-1]) * k[-2] * q[-1]
    if out is not None:
        return _numel(out)
    return 0


def _bytes(node):
    meta = node.meta.get("kforge_meta") if hasattr(node, "meta") else None
    if not meta:
        return 0
    return _numel(meta[0]) * torch.empty((), dtype=meta[1]).element_size()


# The least a kernel of eager costs on the GPU, launch and tail included (an H100 or H200 runs a
# tiny elementwise kernel back to back every 2 to 3 us).
KERNEL_FLOOR = 2e-6
# Operators that launch no kernel: views, tuple access.
_NO_KERNEL = {"getitem", "view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "unsqueeze",
              "squeeze", "slice", "select", "alias", "detach", "as_strided", "split", "split_with_sizes", "chunk",
              "unbind", "narrow", "diagonal", "lift_fresh"}


def _eager_seconds(node, dtype):
    if op_name(node) in _NO_KERNEL:
        return 0.0, 0
    operands = []
    for arg in list(node.args) + list(node.kwargs.values()):
        for item in (arg if isinstance(arg, (list, tuple)) else [arg]):
            if hasattr(item, "meta"):
                operands.append(item)
    moved = _bytes(node) + sum(_bytes(a) for a in operands)
    peak = PEAK_FLOPS.get(dtype, PEAK_FLOPS[torch.float32])
    return max(node_flops(node) / peak, moved / BANDWIDTH) + KERNEL_FLOOR, moved


def region_work(region):
    """(flops, bytes a fused kernel moves, seconds as eager runs it)."""
    flops = sum(node_flops(n) for n in region.nodes)
    moved = sum(_bytes(n) for n in region.inputs + region.state + region.outputs)
    dtype = torch.float32
    for node in region.inputs:
        meta = node.meta.get("kforge_meta")
        if meta:
            dtype = meta[1]
            break
    seconds = sum(_eager_seconds(n, dtype)[0] for n in region.nodes)
    return flops, moved, seconds
