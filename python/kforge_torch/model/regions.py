"""Cutting a captured graph into regions, the way a fusing compiler groups work.

The rules (docs/model.md states them for users):
- an anchor, an operator a vendor library runs (a matrix product, a convolution, attention), opens
  a region; so does a normalization (layer, group, batch, RMS norm);
- pointwise and reduction operators join the region open when they run (an anchor's epilogue, a
  norm's tail); before the first anchor or norm they open a `glue` region of their own;
- view operators (reshapes, transposes, slices, splits) belong to no region: each region that reads
  a view computes it from its base, so regions hand on whole tensors, never views; a layout copy
  (`.contiguous()`, a dtype cast) joins the region of its first reader (a GEMM's operand prologue);
- what is computed from parameters, buffers and constants alone (a weight's transpose, a causal
  mask) belongs to no region: each region that reads it computes it itself;
- a multi-output operator's elements stay with it.
A region's inputs are the activations it reads from outside (its live-ins, in order of first use)
and the model tensors it reads; its outputs are what it computes that anything outside reads.
A region without a compute operator (views alone) is no problem worth a search: `compute` is False.
"""
import operator

import torch
from torch.fx import Graph, GraphModule
from torch.fx.node import Node, map_arg

from .capture import is_mutating

ANCHORS = {
    "mm": "gemm", "addmm": "gemm", "linear": "gemm", "matmul": "gemm", "bmm": "bmm", "baddbmm": "bmm",
    "einsum": "einsum", "convolution": "conv", "_convolution": "conv", "conv1d": "conv", "conv2d": "conv",
    "conv3d": "conv", "conv_transpose1d": "conv_transpose", "conv_transpose2d": "conv_transpose",
    "conv_transpose3d": "conv_transpose", "cudnn_convolution": "conv", "scaled_dot_product_attention": "attention",
    "_scaled_dot_product_flash_attention": "attention", "_scaled_dot_product_efficient_attention": "attention",
    "_scaled_dot_product_cudnn_attention": "attention", "_scaled_dot_product_flash_attention_for_cpu": "attention",
}
NORMS = {
    "native_layer_norm": "layernorm", "layer_norm": "layernorm", "native_group_norm": "groupnorm",
    "group_norm": "groupnorm", "native_batch_norm": "batchnorm", "batch_norm": "batchnorm",
    "_native_batch_norm_legit": "batchnorm", "_native_batch_norm_legit_functional": "batchnorm",
    "_native_batch_norm_legit_no_training": "batchnorm", "instance_norm": "instancenorm",
    "rms_norm": "rmsnorm", "_fused_rms_norm": "rmsnorm",
}
VIEWS = {
    "view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "unsqueeze", "squeeze", "slice",
    "select", "alias", "detach", "as_strided", "unfold", "_reshape_alias", "view_as", "flatten", "lift_fresh",
    "split", "split_with_sizes", "chunk", "unbind", "unsafe_split", "narrow", "diagonal",
}
# Layout copies: they belong with the region that reads them (a GEMM's operand made contiguous).
MOVES = {"clone", "contiguous", "_to_copy", "to"}
# Operators that say what a region does, for its name (the first three found, in order).
NAMED = ("gelu", "relu", "silu", "sigmoid", "tanh", "softmax", "_softmax", "log_softmax", "_log_softmax",
         "max_pool2d_with_indices", "avg_pool2d", "mean", "sum", "amax", "logsumexp", "dropout", "native_dropout",
         "add", "mul", "div", "where", "masked_fill", "clamp", "hardtanh", "leaky_relu", "exp", "pow", "cat")


def op_name(node):
    """`addmm` for aten.addmm.default, `getitem` for operator.getitem, the method's name otherwise."""
    target = node.target
    if target is operator.getitem:
        return "getitem"
    packet = getattr(target, "overloadpacket", None)
    if packet is not None:
        return packet.__name__
    return getattr(target, "__name__", str(target))


def kind_of(node):
    name = op_name(node)
    if name in ANCHORS:
        if ANCHORS[name] == "conv" and name == "convolution" and len(node.args) > 6 and node.args[6] is True:
            return "conv_transpose"
        return ANCHORS[name]
    return NORMS.get(name)


class Region:
    def __init__(self, index, kind):
        self.index = index
        self.kind = kind            # gemm, bmm, conv, attention, layernorm, ..., glue
        self.nodes = []             # in graph order
        self.inputs = []            # live-in activation nodes, in order of first use
        self.state = []             # state placeholder nodes read (directly or through free nodes)
        self.outputs = []           # nodes read outside the region
        self.compute = False
        self.mutates = False        # writes into a model tensor (BatchNorm's running statistics)

    @property
    def name(self):
        ops = []
        for node in self.nodes:
            base = op_name(node).rstrip("_")  # add_ and relu_ (in place) are named as add and relu
            name = base.lstrip("_")
            if base in NAMED and name not in ops and name != self.kind:
                ops.append(name)
        return "_".join([self.kind] + [o.replace("native_", "") for o in ops[:3]])


class Partition:
    def __init__(self, captured, regions, free, derived, top):
        self.captured = captured
        self.regions = regions
        self.free = free        # node -> True: computed from model tensors and constants alone
        self.derived = derived  # views: computed by each reader from their base
        self.top = top          # updates of model tensors that belong to no region


def _inputs_of(node):
    found = []
    map_arg((node.args, node.kwargs), lambda n: found.append(n))
    return found


def partition(captured):
    """The regions of a Captured graph (rules above)."""
    graph = captured.gm.graph
    placeholders = captured.placeholders()
    state = set(placeholders[:len(captured.state_names)])
    free = {n: True for n in state}
    derived = set()  # views: each reader computes them from their base
    region_of = {}
    regions = []
    current = None
    moves = []  # layout copies: with their first reader
    top = []
    for node in graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if node.op == "get_attr":
            free[node] = True
            continue
        ins = _inputs_of(node)
        if node.target is operator.getitem and ins:
            producer = ins[0]
            if producer in free:
                free[node] = True
            elif producer in derived:
                derived.add(node)
            elif producer in region_of:
                region_of[node] = region_of[producer]
            continue
        mutating = is_mutating(node)
        if all(i in free for i in ins):
            if mutating:  # a model tensor's own update (BatchNorm's num_batches_tracked += 1)
                top.append(node)
            else:
                free[node] = True
            continue
        kind = kind_of(node)
        name = op_name(node)
        if kind is not None:
            current = Region(len(regions), kind)
            regions.append(current)
            region_of[node] = current
            current.compute = True
        elif name in VIEWS and not mutating:
            derived.add(node)
        elif name in MOVES and not mutating:
            moves.append((node, current))
        else:
            if current is None:
                current = Region(len(regions), "glue")
                regions.append(current)
            region_of[node] = current
            current.compute = True
    order = {n: i for i, n in enumerate(graph.nodes)}
    for node, fallback in reversed(moves):
        readers = [u for u in _readers(node, derived) if u in region_of]
        if readers:
            region_of[node] = region_of[min(readers, key=lambda u: order[u])]
        elif fallback is not None:
            region_of[node] = fallback
        else:
            region_of[node] = current = Region(len(regions), "glue")
            regions.append(current)
    for node in graph.nodes:
        if node in region_of:
            region_of[node].nodes.append(node)
            if op_name(node) not in MOVES:
                region_of[node].compute = True
    regions = [r for r in regions if r.nodes]
    for index, region in enumerate(regions):
        region.index = index
        region.compute = any(op_name(n) not in MOVES and n.target is not operator.getitem for n in region.nodes)
        _wire(region, free, derived, state)
    return Partition(captured, regions, free, derived, top)


def _readers(node, derived):
    """Who reads `node`, looking through the views made of it."""
    out = []
    for user in node.users:
        if user in derived:
            out += _readers(user, derived)
        else:
            out.append(user)
    return out


def _wire(region, free, derived, state):
    members = set(region.nodes)
    seen_state = []

    def visit(node):
        if node in members:
            return
        if node in state:
            if node not in seen_state:
                seen_state.append(node)
            return
        if node in free or node in derived:
            for i in _inputs_of(node):
                visit(i)
            return
        if node not in region.inputs:
            region.inputs.append(node)

    for node in region.nodes:
        if is_mutating(node) or _updates_statistics(node):
            region.mutates = region.mutates or any(i in state for i in _inputs_of(node))
        for i in _inputs_of(node):
            visit(i)
    region.state = seen_state
    for node in region.nodes:
        if any(u not in members for u in _readers(node, derived)) and not _is_tuple(node):
            region.outputs.append(node)


def _updates_statistics(node):
    """BatchNorm in training mode writes its running statistics (1.13's schema does not say so)."""
    return (kind_of(node) == "batchnorm" and len(node.args) > 5 and node.args[5] is True
            and node.args[3] is not None)


def _is_tuple(node):
    return all(u.target is operator.getitem for u in node.users) and bool(node.users)


def input_layout(node):
    """How a region's live-in lies in memory, from its recorded strides: None (contiguous), ("permute",
    order) when it is a dense tensor whose dims are stored in `order` (attention's output, stored
    (B, T, H, D) and seen (B, H, T, D)), or ("copy",) for anything else (a slice with gaps).

    A problem takes a permuted live-in as the tensor it is in memory (its dims in `order`, contiguous)
    and permutes it back in its forward, so the kernel reads the model's own bytes and the assembled
    model hands it over without a copy; a gapped one is made contiguous at the region's border."""
    meta = node.meta.get("kforge_meta")
    if meta is None:
        return None
    shape, _, stride = meta
    if _dense_order(shape, stride, list(range(len(shape)))):
        return None
    # Dims by stride, largest first; size-1 dims (any stride) keep their place among equals.
    order = sorted(range(len(shape)), key=lambda d: (-stride[d] if shape[d] > 1 else 0, d))
    order = [d for d in order if shape[d] > 1] + [d for d in range(len(shape)) if shape[d] <= 1]
    if _dense_order(shape, stride, order):
        return ("permute", tuple(order))
    return ("copy",)


def _dense_order(shape, stride, order):
    expected = 1
    for d in reversed(order):
        if shape[d] > 1 and stride[d] != expected:
            return False
        expected *= shape[d]
    return True


def inverse_order(order):
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    return tuple(inverse)


def as_problem_input(node, value):
    """The live-in `value` of `node` as a problem file (and the exported operator) takes it: in its
    memory order when it is stored permuted, contiguous when it has gaps (input_layout)."""
    layout = input_layout(node)
    if layout is None:
        return value
    if layout[0] == "permute":
        return value.permute(*layout[1])
    return value.contiguous()


def region_graph(partition, region, names, state_as="placeholder", input_names=None, physical=False):
    """A GraphModule of `region` alone: placeholders for its live-ins (`input_names`, default x0, x1,
    ...), then its model tensors as placeholders (state_as="placeholder", for running it beside the
    model) or as attributes named `names[state name]` (state_as="attr", for a problem file, whose
    Model holds them); the nodes it reads that are free are computed inside. With `physical`, a
    live-in stored permuted (input_layout) is taken as it lies in memory and permuted back first,
    as a problem file takes it. Returns the module."""
    graph = Graph()
    env = {}
    captured = partition.captured
    placeholders = captured.placeholders()
    index_of = {n: i for i, n in enumerate(placeholders)}
    input_names = input_names or [f"x{i}" for i in range(len(region.inputs))]
    for node, name in zip(region.inputs, input_names):
        env[node] = graph.placeholder(name)
        layout = input_layout(node) if physical else None
        if layout is not None and layout[0] == "permute":
            env[node] = graph.call_function(torch.ops.aten.permute.default,
                                            (env[node], list(inverse_order(layout[1]))))
    root = torch.nn.Module()
    for node in region.state:
        state_name = captured.state_names[index_of[node]]
        attr = names[state_name]
        if state_as == "placeholder":
            env[node] = graph.placeholder(attr)
        else:
            env[node] = graph.get_attr(attr)
            shape, dtype, _ = node.meta["kforge_meta"]
            setattr(root, attr, torch.empty(shape, dtype=dtype))

    def value(node):
        if node in env:
            return env[node]
        if node.op == "get_attr":  # a constant the capture made (torch.tensor(...) in forward)
            attr = "const_" + node.target.replace(".", "_")
            setattr(root, attr, getattr(captured.gm, node.target))
            env[node] = graph.get_attr(attr)
            return env[node]
        assert node in partition.free or node in partition.derived, f"{node} is not the region's, an input nor free"
        env[node] = graph.node_copy(node, value)
        return env[node]

    for node in region.nodes:
        env[node] = graph.node_copy(node, value)
    outs = [env[n] for n in region.outputs]
    graph.output(outs[0] if len(outs) == 1 else tuple(outs))
    return GraphModule(root, graph)


def structure_key(partition, region):
    """Equal for two regions that compute the same thing on tensors of the same shapes and dtypes
    (a block repeated 12 times: the same key 12 times)."""
    index = {}
    parts = []

    for i, node in enumerate(region.inputs):
        index[node] = f"in{i}"
        parts.append(f"in{i}:{_meta(node)}")
    for i, node in enumerate(region.state):
        index[node] = f"s{i}"
        parts.append(f"s{i}:{_meta(node)}")

    def walk(node):
        if node in index:
            return
        for i in _inputs_of(node):
            walk(i)
        text = map_arg((node.args, node.kwargs), lambda n: _Ref(index[n]))
        index[node] = f"n{len(index)}"
        parts.append(f"{index[node]}={node.target}{text!r}")

    for node in region.nodes:
        walk(node)
    parts.append("out=" + ",".join(index[n] for n in region.outputs))
    return "\n".join(parts)


class _Ref:
    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _meta(node):
    return repr(node.meta.get("kforge_meta"))
