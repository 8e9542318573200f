"""A model's forward as one aten-level graph: make_fx over a functional call.

Why aten and make_fx rather than torch.fx.symbolic_trace: symbolic tracing stops at the first Python
decision on a traced value (`math.sqrt(k.size(-1))`, `if mask is not None and x.dim() == 3`), which
real models (KernelBench level 3, transformers) make everywhere. make_fx runs the forward on real
tensors and records what reached the dispatcher, so every such decision is taken at the model's
sizes and the graph holds only tensor operators (`aten.addmm`, `aten.native_layer_norm`, ...), the
same in torch 1.13 and 2.x. Sizes are therefore literals; sizes.py finds which of them follow the
model's size variables by capturing again at other sizes.

The graph's placeholders are the model's parameters and buffers (in `named_parameters()` then
`named_buffers()` order), then its inputs; its output is the flat list of the forward's output
tensors (`spec` rebuilds the forward's own structure).
"""
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils._pytree import tree_flatten, tree_unflatten

try:  # torch >= 2.0
    from torch.func import functional_call
except ImportError:  # torch 1.13
    from torch.nn.utils.stateless import functional_call


class Captured:
    """The graph of one forward and what its placeholders are."""

    def __init__(self, gm, state_names, state_kinds, input_count, spec):
        self.gm = gm
        self.state_names = state_names  # "blocks.0.attn.c_attn.weight", ...
        self.state_kinds = state_kinds  # "param" or "buffer", by name
        self.input_count = input_count
        self.spec = spec                # the forward output's pytree structure

    def placeholders(self):
        return [n for n in self.gm.graph.nodes if n.op == "placeholder"]

    def state_of(self, model):
        """The model's tensors in placeholder order (the same objects: updates are shared)."""
        table = dict(model.named_parameters())
        table.update(dict(model.named_buffers()))
        return [table[name] for name in self.state_names]


def model_state(model):
    """(names, kinds, tensors) of the model's parameters, then its buffers."""
    names, kinds, tensors = [], {}, []
    for name, value in model.named_parameters():
        names.append(name)
        kinds[name] = "param"
        tensors.append(value)
    for name, value in model.named_buffers():
        if value is None:
            continue
        names.append(name)
        kinds[name] = "buffer"
        tensors.append(value)
    return names, kinds, tensors


def is_mutating(node):
    schema = getattr(node.target, "_schema", None)
    return node.op == "call_function" and schema is not None and schema.is_mutable


def remove_dead(graph):
    """Drops nodes nothing reads, except those that write into a tensor (a buffer's update)."""
    changed = True
    while changed:
        changed = False
        for node in reversed(list(graph.nodes)):
            if node.op in ("call_function", "call_method", "get_attr") and not node.users and not is_mutating(node):
                graph.erase_node(node)
                changed = True


def capture(model, inputs):
    """The Captured forward of `model` on `inputs` (a list of tensors and numbers). Runs the model
    once on those inputs; the model's buffers see what one forward does to them."""
    names, kinds, tensors = model_state(model)
    held = {}

    def forward(*flat):
        state = dict(zip(names, flat[:len(names)]))
        out = functional_call(model, state, tuple(flat[len(names):]))
        leaves, held["spec"] = tree_flatten(out)
        return leaves

    # Traced on copies: the forward runs, and a BatchNorm's running statistics must not see it.
    copies = [t.detach().clone() for t in tensors]
    with torch.no_grad():
        gm = make_fx(forward)(*copies, *inputs)
    remove_dead(gm.graph)
    gm.recompile()
    return Captured(gm, names, kinds, len(inputs), held["spec"])


def unflatten_output(captured, leaves):
    return tree_unflatten(list(leaves), captured.spec)


def record(captured, args, keep=()):
    """Runs the graph on `args` (state then inputs), storing each tensor node's (shape, dtype,
    stride) as meta["kforge_meta"] and, for nodes in `keep`, the value as meta["kforge_value"]."""
    keep = set(keep)

    class Recorder(torch.fx.Interpreter):
        def run_node(self, node):
            result = super().run_node(node)
            if isinstance(result, torch.Tensor):
                node.meta["kforge_meta"] = (tuple(result.shape), result.dtype, tuple(result.stride()))
                if node in keep:
                    node.meta["kforge_value"] = result.detach().clone()
            return result

    with torch.no_grad():
        return Recorder(captured.gm).run(*args)
