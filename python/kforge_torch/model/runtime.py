"""The assembled model's forward: the user's model captured and cut as extract cut it, each region
that kforge won replaced by a call of its exported operator, the rest run as captured.

A region is matched by its structure key (regions.structure_key: operators, shapes, dtypes), so a
region replaced at the extracted sizes is replaced wherever the same computation recurs (every
block of a stack) and nowhere else: at other input sizes the keys differ and the model's own
operators run. The capture is made once per input signature (sizes, dtypes, devices, mode), on the
first forward with it, as torch.compile does.

No Python runs between kernels: the forward of a signature is one fx graph, a flat sequence of
operator calls, in which a replaced region is a call of the exported C++ operator itself
(torch.ops.kforge.<problem>, its arguments in the order learnt once through the export's ModelNew).
A fake kernel registered for that operator (the region's own operators on fake tensors) lets
torch.compile trace the graph and keep the operator as an extern call, and the operators are
capture-safe (current stream, outputs and workspace from PyTorch's allocator, no synchronisation),
so the forward also runs as a CUDA graph (GraphedForward, the assembled Model's `graphed`). Inference
only: the kernels have no backward.
"""
import hashlib
import importlib.util
import operator
import os

import torch
from torch.fx import Graph, GraphModule
from torch.fx.node import map_arg

from .capture import capture, model_state, record, unflatten_output
from .regions import as_problem_input, input_layout, inverse_order, partition, region_graph, structure_key

_FAKES = {}  # operator name -> the holder its registered fake kernel reads


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


class ExportedOperator:
    """The exported operator torch.ops.kforge.<task> of a region's problem, and how it takes the
    region's live-ins (as the problem takes them: regions.as_problem_input) and model tensors.

    The export's ModelNew knows the argument order; `learn` makes one call through it with the
    operator watched and keeps the order, so later calls are the operator alone (ModelNew reads
    its state_dict on every call, a cost per call that would eat a small region's gain)."""

    def __init__(self, loader_path, attrs):
        self.module = load_module(loader_path, "kforge_region_" + os.path.basename(loader_path)[:-3])
        self.packet = self.module.load_op()
        self.overload = self.packet.default
        self.attrs = attrs  # the problem's attribute of each state tensor, in the region's order
        self.order = None   # per operator argument: ("input", i), ("state", j) or ("value", v); False: unknown
        self.__name__ = "kernels_" + os.path.basename(loader_path)[:-len("_load.py")]

    def through_model_new(self, inputs, state):
        model = self.module.ModelNew()
        for attr, tensor in zip(self.attrs, state):
            table = model._parameters if attr in model._parameters else model._buffers
            table[attr] = tensor
        return model(*inputs)

    def learn(self, inputs, state):
        seen = []
        op = self.packet

        def watched(*args):
            seen.append(args)
            return op(*args)

        self.module.load_op = lambda *a, **k: watched
        try:
            out = self.through_model_new(inputs, state)
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
                if found is None:  # a copy ModelNew made: only its own path knows how
                    order = None
                    break
                order.append(found)
            else:
                order.append(("value", arg))
        self.order = order or False
        return out


class OperatorCall:
    """A replaced region in the staged graph: its live-ins laid out as the operator takes them (a
    permuted one as the view of its bytes, made contiguous only where a replaced producer already
    handed it over contiguous), then one call node of the operator, then its outputs."""

    def __init__(self, exported, region):
        self.exported = exported
        self.layouts = [input_layout(n) for n in region.inputs]
        self.outputs = len(region.outputs)

    def emit(self, graph, inputs, state):
        laid = []
        for node, layout in zip(inputs, self.layouts):
            if layout is not None:
                if layout[0] == "permute":
                    node = graph.call_function(torch.ops.aten.permute.default, (node, list(layout[1])))
                node = graph.call_function(torch.ops.aten.contiguous.default, (node,))
            laid.append(node)
        args = tuple(laid[k] if kind == "input" else state[k] if kind == "state" else k
                     for kind, k in self.exported.order)
        out = graph.call_function(self.exported.overload, args)
        if self.outputs == 1:
            return [out]
        return [graph.call_function(operator.getitem, (out, k)) for k in range(self.outputs)]


class PythonCall:
    """A replaced region run by a Python callable taking (inputs, state): the regions' own operators
    (reference mode), or an exported operator whose argument order could not be learnt."""

    def __init__(self, call):
        self.call = call

    def emit(self, graph, inputs, state):
        out = graph.call_function(self.call, (list(inputs), list(state)))
        return [graph.call_function(operator.getitem, (out, k)) for k in range(self.outputs)]


class ModelNewCall:
    def __init__(self, exported, region):
        self.exported = exported
        self.region = region
        self.__name__ = exported.__name__

    def __call__(self, inputs, state):
        laid = [as_problem_input(n, t) for n, t in zip(self.region.inputs, inputs)]
        return _as_list(self.exported.through_model_new(laid, state))


def register_fake(exported, region, reference):
    """Registers the fake kernel of exported's operator: the region's own operators run on the fake
    tensors the operator is given (permuted live-ins turned back, model tensors it does not take
    made empty at their recorded shapes), outputs contiguous as the operator returns them. Needs
    torch.library.register_fake (torch 2.4) or impl_abstract (2.2); without either, torch.compile
    cannot trace the assembled model and the check says so."""
    name = exported.overload.name().split(".")[0]  # kforge::task
    holder = _FAKES.get(name)
    if holder is not None:  # a second assembly of the same model: the newest region's facts
        holder[:] = [exported, region, reference]
        return
    holder = _FAKES[name] = [exported, region, reference]
    layouts = [input_layout(n) for n in region.inputs]

    def fake(*args):
        exported_, region_, reference_ = holder
        inputs, state = [None] * len(region_.inputs), [None] * len(region_.state)
        device = next((a.device for a in args if isinstance(a, torch.Tensor)), None)
        for (kind, k), arg in zip(exported_.order, args):
            if kind == "input":
                inputs[k] = arg
            elif kind == "state":
                state[k] = arg
        for values, nodes in ((inputs, region_.inputs), (state, region_.state)):
            for i, node in enumerate(nodes):
                if values[i] is None:
                    shape, dtype, _ = node.meta["kforge_meta"]
                    values[i] = torch.empty(shape, dtype=dtype, device=device)
        for i, layout in enumerate(layouts):
            if layout is not None and layout[0] == "permute" and inputs[i].dim() == len(layout[1]):
                inputs[i] = inputs[i].permute(*inverse_order(layout[1]))
        outs = [torch.empty_like(o, memory_format=torch.contiguous_format) for o in reference_(inputs, state)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    register = getattr(torch.library, "register_fake", None) or getattr(torch.library, "impl_abstract", None)
    if register is not None:
        register(name)(fake)


def staged_module(part, replaced):
    """The captured graph run region by region; `replaced` maps a region index to an OperatorCall or
    PythonCall (or a plain callable taking (inputs, state), which is run as a PythonCall)."""
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
        if not hasattr(call, "emit"):
            call = PythonCall(call)
        call.outputs = getattr(call, "outputs", None) or len(region.outputs)
        inputs = [value(n) for n in region.inputs]
        state = [env[n] for n in region.state]
        for node, out in zip(region.outputs, call.emit(graph, inputs, state)):
            env[node] = out
    for node in part.top:
        value(node)
    output = next(n for n in captured.gm.graph.nodes if n.op == "output")
    graph.output(map_arg(output.args[0], value))
    return GraphModule(captured.gm, graph)


class GraphedForward:
    """`forward` captured once as a CUDA graph on `example_inputs` (after `warmup` calls on a side
    stream, which also build whatever the first call of an input signature builds) and replayed.

    The example inputs are the graph's own input buffers: calling with those very tensors replays
    alone; other tensors are copied into them first. The outputs are the graph's own buffers too,
    overwritten by the next call (clone what must outlive it), as with torch.cuda.CUDAGraph."""

    def __init__(self, forward, example_inputs, warmup=3):
        self.inputs = list(example_inputs)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.no_grad():
            with torch.cuda.stream(stream):
                for _ in range(warmup):
                    forward(*self.inputs)
            torch.cuda.current_stream().wait_stream(stream)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.outputs = forward(*self.inputs)

    def __call__(self, *inputs):
        if len(inputs) != len(self.inputs):
            raise TypeError(f"the graph was captured with {len(self.inputs)} inputs, got {len(inputs)}")
        for mine, given in zip(self.inputs, inputs):
            if isinstance(mine, torch.Tensor):
                if given is not mine:
                    if not isinstance(given, torch.Tensor) or given.shape != mine.shape or given.dtype != mine.dtype:
                        raise ValueError("a CUDA graph replays at the shapes and dtypes it was captured with: "
                                         f"captured {tuple(mine.shape)} {mine.dtype}, given "
                                         f"{tuple(given.shape) if isinstance(given, torch.Tensor) else given!r}")
                    mine.copy_(given)
            elif given != mine:
                raise ValueError(f"a CUDA graph replays with the values it was captured with: {mine!r}, given {given!r}")
        self.graph.replay()
        return self.outputs


def _compiling():
    compiler = getattr(torch, "compiler", None)
    return bool(compiler is not None and hasattr(compiler, "is_compiling") and compiler.is_compiling())


class Assembly:
    """What MODEL_kforge.py's Model runs: `regions` is the plan assemble wrote (one entry per
    replaced problem: key, problem id, loader path, attribute names, and whether it stays replaced
    under torch.compile); mode "kernels" calls the exported operators, "reference" the regions' own
    operators through the same wiring (a check of the wiring where no GPU is).

    Two graphs per input signature: eager (and a CUDA graph of it) calls every replaced region's
    operator; under torch.compile only those marked `under_compile`, because an operator is opaque to
    Inductor: a region that beats torch.compile alone can still make the compiled model slower when
    Inductor would have fused its work with a neighbour's (a SiLU into the multiply that reads it).
    assemble's check measures which ones help the compiled model and marks them."""

    def __init__(self, regions, mode="kernels"):
        self.plan = {r["key"]: r for r in regions}
        self.mode = mode
        self.under_compile = {r["problem"] for r in regions if r.get("under_compile", True)}
        self.staged = {}     # signature -> [eager graph, compile graph, captured, state, partition, chosen]
        self.replaced = {}   # signature -> [problem ids replaced]
        self.exported = {}   # problem id -> ExportedOperator
        self.capturing = False  # while True, the model's forward is its own (capture records it)

    def forward(self, model, inputs):
        signature = (model.training,) + tuple(
            (tuple(t.shape), t.dtype, str(t.device)) if isinstance(t, torch.Tensor) else repr(t) for t in inputs)
        entry = self.staged.get(signature)
        if entry is None:
            entry = self.staged[signature] = self._build(model, inputs, signature)
        # Eager calls every replaced region's operator; a torch.compile trace, those kept under it.
        gm = entry[1] if _compiling() else entry[0]
        return unflatten_output(entry[2], gm(*entry[3], *inputs))

    def set_under_compile(self, problems):
        """Which replaced problems stay operators under torch.compile, from now on (the compiled
        graphs of every signature are rebuilt; torch.compile must trace again to see it)."""
        self.under_compile = set(problems)
        for entry in self.staged.values():
            entry[1] = self._staged(entry[4], entry[5], compiled=True)

    def _staged(self, part, chosen, compiled):
        return staged_module(part, {i: call for i, (problem, call) in chosen.items()
                                    if not compiled or problem in self.under_compile})

    def _build(self, model, inputs, signature):
        self.capturing = True
        try:
            captured = capture(model, inputs)
        finally:
            self.capturing = False
        part = partition(captured)
        _, _, state = model_state(model)
        record(captured, [t.detach().clone() for t in state] + list(inputs))  # the shapes the keys read
        chosen = [(region, self.plan[k]) for region in part.regions
                  if (k := region_key(part, region)) in self.plan]
        # The first occurrence of each problem whose operator has not learnt its argument order
        # yet: its live-ins are kept by the recording run, for the one call through ModelNew.
        learners = {}
        if self.mode == "kernels":
            for region, entry in chosen:
                exported = self.exported.get(entry["problem"])
                if exported is None:
                    exported = self.exported[entry["problem"]] = ExportedOperator(entry["loader"], entry["attrs"])
                if exported.order is None and entry["problem"] not in learners:
                    learners[entry["problem"]] = region
        if learners:  # again, keeping those live-ins (one more forward, once per problem)
            keep = {n for r in learners.values() for n in r.inputs}
            record(captured, [t.detach().clone() for t in state] + list(inputs), keep)
        index_of = {n: i for i, n in enumerate(captured.placeholders())}
        with torch.no_grad():
            for problem, region in learners.items():
                laid = [as_problem_input(n, n.meta["kforge_value"]) for n in region.inputs]
                self.exported[problem].learn(laid, [state[index_of[n]] for n in region.state])
        calls, used = {}, []
        for region, entry in chosen:
            reference = ReferenceRegion(part, region)
            if self.mode == "reference":
                call = PythonCall(reference)
            else:
                exported = self.exported[entry["problem"]]
                if exported.order:
                    register_fake(exported, region, reference)
                    call = OperatorCall(exported, region)
                else:
                    call = PythonCall(ModelNewCall(exported, region))
            calls[region.index] = (entry["problem"], call)
            used.append(entry["problem"])
        self.replaced[signature] = used
        # The model's tensors, kept: the same objects across calls (load_state_dict and .to() change
        # them in place), so a forward does not walk the module tree again.
        return [self._staged(part, calls, False), self._staged(part, calls, True), captured, state, part, calls]
