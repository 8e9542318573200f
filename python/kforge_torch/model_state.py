"""Every tensor a model holds, the mode it runs in, and its state kept the same from call to call.

A kernel must be given every tensor the forward reads. `state_dict()` lists parameters and persistent
buffers, but KernelBench models also hold tensors outside it: a plain attribute drawn in `__init__`
(`self.h0 = torch.randn(num_layers, batch_size, hidden)`, an LSTM's initial state) or a buffer
registered with `persistent=False`. `model_tensors` gives all of them, named as `state_dict` names
its entries (`lstm.weight_ih_l0`, `h0`), so each becomes an argument; without them a kernel could never
reproduce the program, and `model.double()` would leave a plain attribute in fp32 (the fp64 run then
fails on mixed dtypes). `to_fp64` converts them too.

The mode: KernelBench builds `Model(*get_init_inputs())` and calls it without `.eval()`, so the model
runs in the mode its constructor leaves it, training by default: a BatchNorm normalises with the
batch's statistics, as the source reads. kforge does the same, with one exception: a dropout module
with p > 0 would draw a new mask on every call, which no kernel can reproduce, so it runs as in eval
mode (the identity), and the import says so (`random_modules_note`).

A forward in training mode writes state (a BatchNorm's running statistics and batch count), and a
forward may rebind an attribute (`self.h0 = self.h0.to(x.device)`, or `self.c0 = self.h0...`). The
program must compute the same outputs from the same tensors on every call, and the tensors given to
kernels must be those the forward starts from, so `remember_state` keeps a copy of every buffer and
plain tensor attribute when the model is built, and `restore_state` puts the bindings and values back
after each forward. Parameters are not copied (a forward that wrote its weights in place would be no
KernelBench program).
"""
import copy

import torch

STATE_ATTRIBUTE = "_kforge_remembered_state"


def _extra_tensors(module):
    """(name, tensor, kind) of the tensors `module` holds outside its state_dict."""
    for name, value in vars(module).items():
        if isinstance(value, torch.Tensor) and not name.startswith("_"):
            yield name, value, "attribute"
    for name in getattr(module, "_non_persistent_buffers_set", ()):
        value = module._buffers.get(name)
        if value is not None:
            yield name, value, "buffer"


def model_tensors(model, keep_vars=False):
    """Every tensor the model holds, by name: its state_dict, then plain tensor attributes and
    non-persistent buffers of each submodule (`prefix.name`, as state_dict would name them)."""
    tensors = dict(model.state_dict(keep_vars=keep_vars))
    for prefix, module in model.named_modules():
        for name, value, _ in _extra_tensors(module):
            key = f"{prefix}.{name}" if prefix else name
            tensors.setdefault(key, value if keep_vars else value.detach())
    return tensors


def quiet_random_modules(model):
    """Puts dropout modules with p > 0 that are in training mode into eval mode (the identity); returns
    them as texts, `name` (Dropout, p=0.2)."""
    quieted = []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.modules.dropout._DropoutNd) and module.training and module.p > 0:
            module.eval()
            quieted.append(f"`{name or 'Model'}` ({type(module).__name__}, p={module.p:g})")
    return quieted


def random_modules_note(quieted):
    return (f"{', '.join(quieted)}: dropout in training mode draws a new random mask on every call, which no "
            "kernel can reproduce, so kforge runs it as the identity (as in eval mode); the rest of the model "
            "runs in training mode, as KernelBench runs it")


def mode_sentence(model, quieted):
    """What the model's mode means for the modules whose forward depends on it, in one sentence for the
    task's description; "" where no module's does."""
    parts = []
    for name, module in model.named_modules():
        label = f"`{name or 'Model'}` ({type(module).__name__})"
        if isinstance(module, torch.nn.modules.batchnorm._NormBase):
            batch = module.training or not module.track_running_stats
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                what = ("normalises with the statistics of the batch it is given (mean and biased variance over "
                        "every dim but the channels); its running statistics are passed to kernels but change no "
                        "output" if batch else "normalises with its running statistics (the tensors passed)")
            else:
                what = ("normalises each instance with its own statistics" if batch
                        else "normalises with its running statistics (the tensors passed)")
            parts.append(f"{label} {what}")
    parts += [f"{q} is the identity" for q in quieted]
    if not parts:
        return ""
    return ("The model runs as Model(*get_init_inputs()) leaves it, in training mode unless its constructor "
            "calls eval(), as KernelBench runs it: " + "; ".join(parts) + ".")


def remember_state(model):
    """Keeps each buffer's and plain tensor attribute's binding and a copy of its values."""
    remembered = []
    for module in model.modules():
        for name, value in list(module._buffers.items()):
            if value is not None:
                remembered.append((module, name, "buffer", value, value.detach().clone()))
        for name, value, kind in list(_extra_tensors(module)):
            if kind == "attribute":
                remembered.append((module, name, kind, value, value.detach().clone()))
    object.__setattr__(model, STATE_ATTRIBUTE, remembered)


def restore_state(model):
    """Puts back what `remember_state` kept: the bindings, then the values (a forward that ran in
    training mode or rebound an attribute leaves the model as it was built)."""
    remembered = model.__dict__.get(STATE_ATTRIBUTE)
    if not remembered:
        return
    with torch.no_grad():
        for module, name, kind, tensor, saved in remembered:
            if kind == "buffer":
                module._buffers[name] = tensor
            else:
                module.__dict__[name] = tensor
            if tensor.device.type != "meta":
                tensor.copy_(saved)


def to_fp64(model, in_place=False):
    """A double copy of the model (or, `in_place`, the model itself made double: one built afresh
    for it, whose closures then see the double layers): floating parameters, buffers and plain
    tensor attributes, with its state remembered afresh (the double tensors are new ones)."""
    remembered = model.__dict__.get(STATE_ATTRIBUTE)
    if remembered is not None:
        del model.__dict__[STATE_ATTRIBUTE]  # the copy remembers its own tensors, not copies of these
    try:
        double = model.double() if in_place else copy.deepcopy(model).double()
    finally:
        if remembered is not None and not in_place:
            object.__setattr__(model, STATE_ATTRIBUTE, remembered)
    for module in double.modules():
        for name, value, kind in list(_extra_tensors(module)):
            if kind == "attribute" and value.is_floating_point():
                module.__dict__[name] = value.double()
    remember_state(double)
    return double
