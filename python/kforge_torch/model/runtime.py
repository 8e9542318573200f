"""The assembled model's forward: the user's model captured and cut as extract cut it, each region
that kforge won replaced by a call of its exported operator, the rest run as captured.

A region is matched by its structure key (regions.structure_key: operators, shapes, dtypes), so a
region replaced at the extracted sizes is replaced wherever the same computation recurs (every
block of a stack) and nowhere else: at other input sizes the keys differ and the model's own
operators run. The capture is made once per input signature (sizes, dtypes, devices, mode), on the
first forward with it, as torch.compile does.

Each replaced region is a custom operator `kforge_model::<problem>` (torch >= 2.4) whose fake
implementation runs the region's own operators on fake tensors, so torch.compile traces through the
assembled model and keeps the kernels; with older torch it is a plain call. Inference only: the
kernels have no backward.
"""
import hashlib
import importlib.util
import operator
import os
from typing import List

import torch
from torch.fx import Graph, GraphModule
from torch.fx.node import map_arg

from .capture import capture, model_state, record, unflatten_output
from .regions import partition, region_graph, structure_key

_OPS = {}


def region_key(part, region):
    return hashlib.sha1(structure_key(part, region).encode()).hexdigest()[:16]


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


class ReferenceRegion:
    """The region's own operators: what a replaced region is checked against, and its fake."""

    def __init__(self, part, region):
        names = {n: f"s{i}" for i, n in enumerate(part.captured.state_names)}
        self.gm = region_graph(part, region, names, state_as="placeholder")
        self.__name__ = f"reference_region_{region.index}"  # fx names a call target by it

    def __call__(self, inputs, state):
        return [o.clone() for o in _as_list(self.gm(*inputs, *state))]


class KernelRegion:
    """The exported operator of a region's problem, given the model's own tensors at each call.

    The export's ModelNew knows how its operator takes the region's inputs and tensors; the first
    call goes through it with the operator watched, which gives the order, and later calls call
    the operator directly (ModelNew reads its state_dict on every call: a cost per call that would
    eat a small region's gain)."""

    def __init__(self, loader_path, attrs):
        self.module = load_module(loader_path, "kforge_region_" + os.path.basename(loader_path)[:-3])
        self.model = self.module.ModelNew()
        self.op = self.module.load_op()
        self.attrs = attrs  # the problem's attribute of each state tensor, in the region's order
        self.order = None   # per operator argument: ("input", i), ("state", j) or ("value", v)
        self.__name__ = "kernels_" + os.path.basename(loader_path)[:-len("_load.py")]

    def _through_model_new(self, inputs, state):
        for attr, tensor in zip(self.attrs, state):
            table = self.model._parameters if attr in self.model._parameters else self.model._buffers
            table[attr] = tensor
        return self.model(*inputs)

    def _learn(self, inputs, state):
        seen = []
        op = self.op

        def watched(*args):
            seen.append(args)
            return op(*args)

        self.module.load_op = lambda *a, **k: watched
        try:
            out = self._through_model_new(inputs, state)
        finally:
            self.module.load_op = lambda *a, **k: op
        by_pointer = {}
        for j, t in enumerate(state):
            by_pointer.setdefault(("state", t.data_ptr(), tuple(t.shape)), ("state", j))
        for i, t in enumerate(inputs):
            by_pointer[("input", t.data_ptr(), tuple(t.shape))] = ("input", i)
        order = []
        for arg in seen[0] if len(seen) == 1 else ():
            if isinstance(arg, torch.Tensor):
                found = by_pointer.get(("input", arg.data_ptr(), tuple(arg.shape))) or \
                    by_pointer.get(("state", arg.data_ptr(), tuple(arg.shape)))
                if found is None:  # a copy ModelNew made (a non-contiguous input): keep its path
                    order = None
                    break
                order.append(found)
            else:
                order.append(("value", arg))
        self.order = order or False
        return out

    def __call__(self, inputs, state):
        if self.order is None:
            return _as_list(self._learn(inputs, state))
        if self.order is False:
            return _as_list(self._through_model_new(inputs, state))
        args = [inputs[k].contiguous() if kind == "input" else state[k] if kind == "state" else k
                for kind, k in self.order]
        return _as_list(self.op(*args))


def as_operator(name, call, fake):
    """`call` as the custom operator kforge_model::name (its OpOverload), for torch.compile to trace
    through; None where torch has no torch.library.custom_op (before 2.4)."""
    if not hasattr(torch.library, "custom_op"):
        return None
    if name in _OPS:  # a second model of the same assembly: one operator, the newest call
        _OPS[name][1][0] = call
        _OPS[name][2][0] = fake
        return _OPS[name][0]
    holder, fakes = [call], [fake]

    @torch.library.custom_op(f"kforge_model::{name}", mutates_args=())
    def op(inputs: List[torch.Tensor], state: List[torch.Tensor]) -> List[torch.Tensor]:
        return holder[0](inputs, state)

    @op.register_fake
    def _(inputs, state):
        return [torch.empty_like(o, memory_format=torch.contiguous_format) for o in fakes[0](inputs, state)]

    overload = getattr(torch.ops.kforge_model, name).default
    _OPS[name] = (overload, holder, fakes)
    return overload


def _compiling():
    compiler = getattr(torch, "compiler", None)
    return bool(compiler is not None and hasattr(compiler, "is_compiling") and compiler.is_compiling())


def staged_module(part, replaced):
    """The captured graph run region by region; `replaced` maps a region index to the callable that
    takes (inputs, state) and returns its outputs."""
    captured = part.captured
    graph = Graph()
    env = {}
    for node in captured.placeholders():
        env[node] = graph.placeholder(node.name)

    def value(node):
        if node not in env:
            env[node] = graph.node_copy(node, value)
        return env[node]

    for region in part.regions:
        call = replaced.get(region.index)
        if call is None:
            for node in region.nodes:
                env[node] = graph.node_copy(node, value)
            continue
        inputs = [value(n) for n in region.inputs]
        state = [env[n] for n in region.state]
        out = graph.call_function(call, (inputs, state))
        for k, node in enumerate(region.outputs):
            env[node] = graph.call_function(operator.getitem, (out, k))
    for node in part.top:
        value(node)
    output = next(n for n in captured.gm.graph.nodes if n.op == "output")
    graph.output(map_arg(output.args[0], value))
    return GraphModule(captured.gm, graph)


class Assembly:
    """What MODEL_kforge.py's Model runs: `regions` is the plan assemble wrote (one entry per
    replaced problem: key, problem id, loader path, attribute names); mode "kernels" calls the
    exported operators, "reference" the regions' own operators through the same wiring (a check of
    the wiring where no GPU is)."""

    def __init__(self, regions, mode="kernels"):
        self.plan = {r["key"]: r for r in regions}
        self.mode = mode
        self.staged = {}
        self.replaced = {}  # signature -> [problem ids replaced]
        self.calls = {}     # problem id -> its operator
        self.capturing = False  # while True, the model's forward is its own (capture records it)

    def forward(self, model, inputs):
        signature = (model.training,) + tuple(
            (tuple(t.shape), t.dtype, str(t.device)) if isinstance(t, torch.Tensor) else repr(t) for t in inputs)
        entry = self.staged.get(signature)
        if entry is None:
            entry = self.staged[signature] = self._build(model, inputs, signature)
        eager, traced, captured, state = entry
        # Eager calls the regions' callables; under torch.compile the graph of custom operators,
        # whose fake kernels let dynamo trace through them.
        gm = traced if (traced is not None and _compiling()) else eager
        return unflatten_output(captured, gm(*state, *inputs))

    def _build(self, model, inputs, signature):
        self.capturing = True
        try:
            captured = capture(model, inputs)
        finally:
            self.capturing = False
        part = partition(captured)
        _, _, state = model_state(model)
        record(captured, [t.detach().clone() for t in state] + list(inputs))
        replaced, operators, used = {}, {}, []
        for region in part.regions:
            entry = self.plan.get(region_key(part, region))
            if entry is None:
                continue
            problem = entry["problem"]
            if problem not in self.calls:
                reference = ReferenceRegion(part, region)
                call = reference if self.mode == "reference" else KernelRegion(entry["loader"], entry["attrs"])
                name = entry["op"] + ("_reference" if self.mode == "reference" else "")
                self.calls[problem] = (call, as_operator(name, call, reference))
            replaced[region.index], operators[region.index] = self.calls[problem]
            used.append(problem)
        self.replaced[signature] = used
        traced = staged_module(part, operators) if all(op is not None for op in operators.values()) else None
        # The model's tensors, kept: the same objects across calls (load_state_dict and .to() change
        # them in place), so a forward does not walk the module tree again.
        return staged_module(part, replaced), traced, captured, state
