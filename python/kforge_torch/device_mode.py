"""Where a problem's tensors are made: a torch function mode that sends them to one device.

A KernelBench problem makes its tensors without naming a device (`torch.randn(batch, dim)`, the
parameters inside `nn.Linear`), and some write `.cuda()` or `device="cuda"`. kforge decides where
they live: on the `meta` device to learn shapes without allocating, on the CPU for the importer's
checks, on the GPU for the reference process (so that inputs are made where they are used, never
copied through the host). This mode does what `with torch.device(...)` does on torch 2.x, for every
torch from 1.13 on, and also moves what the program explicitly sends to CUDA: a factory call without
a device, or with a CUDA one, gets the target; `Tensor.cuda()` and `Tensor.to("cuda")` go to the
target. An explicit `device="cpu"` is left alone: the program asked for host memory on purpose.
"""
import torch
from torch.overrides import TorchFunctionMode

_FACTORY_NAMES = (
    "empty", "empty_strided", "zeros", "ones", "full", "rand", "randn", "randint", "randperm",
    "arange", "range", "linspace", "logspace", "eye", "tensor", "as_tensor", "scalar_tensor",
    "tril_indices", "triu_indices", "bartlett_window", "blackman_window", "hamming_window",
    "hann_window", "kaiser_window",
)
_FACTORIES = {getattr(torch, name) for name in _FACTORY_NAMES if hasattr(torch, name)}


def _is_cuda(device):
    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device.split(":")[0] == "cuda"
    return isinstance(device, int)  # an ordinal means a CUDA device in torch's conventions


class DeviceMode(TorchFunctionMode):
    """Within `with DeviceMode(device):`, tensors the program makes land on `device`."""

    def __init__(self, device):
        super().__init__()
        self.device = torch.device(device)

    def _target(self, device):
        return self.device if device is None or _is_cuda(device) else device

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in _FACTORIES:
            kwargs["device"] = self._target(kwargs.get("device"))
        elif func is torch.Tensor.cuda:
            return args[0].to(self.device)
        elif func is torch.Tensor.to:
            args = tuple(self._target(a) if _is_cuda(a) and not isinstance(a, int) else a for a in args)
            if "device" in kwargs:
                kwargs["device"] = self._target(kwargs["device"])
        return func(*args, **kwargs)
