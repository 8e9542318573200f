"""FLOPs of a forward by rule, where torch has no FlopCounterMode (before 2.1: Debian's 1.13).

Without FLOPs a GEMM problem reads as memory-bound with a roofline to match, and its prompt tells
the model so. This counter watches the aten operators a forward runs (a TorchDispatchMode, which
torch has had since 1.13) and counts what torch's own counter counts, by the same rules: a matrix
product of [m, k] by [k, n] is 2mkn (batched: times the batch; addmm's bias adds nothing), a
convolution 2 x output elements x input channels per group x kernel volume (transposed: the same
product over the input), attention 4 x batch x heads x queries x keys x head dim (the two products),
halved when it is causal (only the keys up to each query are multiplied). Pointwise operators count
nothing, as in torch's counter, so the figure is the tensor-core work a kernel must do.
"""
import math

import torch
from torch.utils._python_dispatch import TorchDispatchMode


def _shape(t):
    return tuple(t.shape) if isinstance(t, torch.Tensor) else None


def _matmul(a, b):
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        return 0
    if len(sa) == 1:
        sa = (1,) + sa
    if len(sb) == 1:
        sb = sb + (1,)
    batch = math.prod(torch.broadcast_shapes(sa[:-2], sb[:-2])) if len(sa) > 2 or len(sb) > 2 else 1
    return 2 * batch * sa[-2] * sa[-1] * sb[-1]


def _convolution(args, out):
    x, w = args[0], args[1]
    transposed = len(args) > 6 and bool(args[6])
    kernel = math.prod(_shape(w)[2:]) if _shape(w) else 1
    if transposed:  # the gradient of a convolution: the same products over the input
        return 2 * x.numel() * _shape(w)[1] * kernel
    return 2 * out.numel() * (_shape(w)[1] if _shape(w) else 1) * kernel  # w[1]: input channels per group


def _attention(query, key, causal):
    q, k = _shape(query), _shape(key)
    if not q or not k:
        return 0
    batch_heads = math.prod(q[:-2])
    flops = 4 * batch_heads * q[-2] * k[-2] * q[-1]
    return flops // 2 if causal and q[-2] == k[-2] else flops


# Per attention operator: where is_causal sits among the positional arguments, and its keyword.
_ATTENTION = {
    "scaled_dot_product_attention": 5,
    "_scaled_dot_product_flash_attention": 4,
    "_scaled_dot_product_flash_attention_for_cpu": 4,
    "_scaled_dot_product_efficient_attention": 6,
    "_scaled_dot_product_cudnn_attention": 6,
}


def operator_flops(name, args, kwargs, out):
    if name in ("mm", "bmm", "matmul"):
        return _matmul(args[0], args[1])
    if name in ("addmm", "baddbmm", "addbmm"):
        return _matmul(args[1], args[2])
    if name == "linear":  # [..., in] by a weight [out, in]
        return 2 * args[0].numel() * _shape(args[1])[0]
    if name in ("convolution", "_convolution", "cudnn_convolution") and isinstance(out, torch.Tensor):
        return _convolution(args, out)
    if name in _ATTENTION:
        at = _ATTENTION[name]
        causal = kwargs.get("is_causal", args[at] if len(args) > at else False)
        return _attention(args[0], args[1], bool(causal))
    return 0


class RuleFlopCounter(TorchDispatchMode):
    """`with RuleFlopCounter() as c: forward()`; then c.total."""

    def __init__(self):
        super().__init__()
        self.total = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        packet = getattr(func, "overloadpacket", None)
        name = getattr(packet, "__name__", "") if packet is not None else ""
        try:
            self.total += int(operator_flops(name, args, kwargs, out[0] if isinstance(out, (tuple, list)) else out))
        except Exception:  # a shape this rule does not know: counted as nothing, as torch's counter does
            pass
        return out
