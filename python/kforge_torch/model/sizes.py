"""Which literals of a captured graph follow the model's size variables, as expressions.

make_fx takes every Python decision at the model's sizes, so a captured graph says `view(x, [1024,
512])` where the program said `x.view(B * T, C)`. A region's problem must be tested at other sizes
(kforge's importer varies size symbols to catch kernels that assume one), so extract captures the
model again with each size variable moved alone to smaller values and fits each int literal that
moved, and each live-in's dims, with the importer's dims forms (dims.py): `batch_size * 256`.

A size variable is used only where it is safe: moving it must leave the graph's operators, every
float literal and every parameter and buffer shape as they were (a width that sizes a weight is a
model change, not a size), and every literal it moves must fit a form; otherwise it keeps its file
value in every region and the reason is recorded.
"""
from ..dims import fit_dim
from .capture import capture, record


class Expr:
    """An int literal that fx writes as an expression in the problem file's size variables."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def python_expression(text):
    """kforge's expression language uses `/` for integer division; Python needs `//`."""
    return text.replace(" / ", " // ")


def literal_paths(value, path=()):
    """(path, value) of every int and float in a node's args/kwargs (not bools, not nodes)."""
    from torch.fx.node import Node
    if isinstance(value, Node):
        return
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield path, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from literal_paths(item, path + (i,))
    elif isinstance(value, dict):
        for key in sorted(value):
            yield from literal_paths(value[key], path + (key,))


def node_literals(node):
    return dict(literal_paths((node.args, node.kwargs)))


def replace_at(value, path, new):
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, tuple):
        items = list(value)
        items[head] = replace_at(items[head], rest, new)
        return tuple(items)
    if isinstance(value, list):
        items = list(value)
        items[head] = replace_at(items[head], rest, new)
        return items
    if isinstance(value, dict):
        items = dict(value)
        items[head] = replace_at(items[head], rest, new)
        return items
    raise TypeError(f"no literal at {path}")


def variants(value):
    """Smaller values to move a size to (two, so that a fit is checked by a third point)."""
    if value >= 4:  # not 1: at one, torch takes other paths (a matmul of one row is no bmm)
        out = [value // 2, value * 3 // 4]
    else:
        out = [value + 1, value + 2]
    return [v for v in dict.fromkeys(out) if v >= 1 and v != value]


# The torch release that brought each API a model may call (a model written for a newer torch than
# the one kforge runs it with fails with a bare AttributeError otherwise).
TORCH_API_SINCE = {
    "scaled_dot_product_attention": "2.0", "rms_norm": "2.4", "RMSNorm": "2.4", "compile": "2.0",
    "func": "2.0", "vmap": "2.0", "bitwise_left_shift": "1.10", "Buffer": "2.5", "nested": "1.13",
}


class TorchTooOld(Exception):
    pass


def torch_too_old(error):
    """A TorchTooOld naming the torch version an AttributeError of a torch module says is needed, or
    None when the error is not a torch module lacking an attribute."""
    import re
    import torch
    found = re.match(r"module '(torch[\w.]*)' has no attribute '(\w+)'", str(error))
    if found is None:
        return None
    module, name = found.groups()
    since = TORCH_API_SINCE.get(name)
    need = f"torch {since} or later" if since else "a newer torch"
    return TorchTooOld(f"the model calls {module}.{name}, which this torch ({torch.__version__}) does not have: "
                       f"it needs {need} (KFORGE_PYTHON names the python3 whose torch kforge runs)")


class Point:
    def __init__(self, sizes, captured):
        self.sizes = sizes
        self.captured = captured
        self.nodes = list(captured.gm.graph.nodes)


def _signature(point):
    return [(n.op, str(n.target)) for n in point.nodes]


def _state_shapes(point):
    return [n.meta.get("kforge_meta", (None,))[0] for n in point.nodes[:len(point.captured.state_names)]]


class SizeFit:
    """The accepted size symbols (name -> file value), the notes on refused ones, and the fitted
    expressions: `literals[(node index, path)]` and `dims[node index]` (a list of texts per dim)."""

    def __init__(self, symbols, notes, literals, dims):
        self.symbols, self.notes, self.literals, self.dims = symbols, notes, literals, dims


def capture_point(problem_file, sizes, device, seed=0):
    """The model captured at `sizes` (every node's meta recorded), its model, inputs and state."""
    import torch
    from ..device_mode import DeviceMode
    try:
        program = problem_file.load(sizes)
        model = program.build_model(seed, device)
        inputs = program.make_inputs(seed + 1, device)
        with DeviceMode(device):
            captured = capture(model, [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in inputs])
    except AttributeError as e:
        raise torch_too_old(e) or e
    state = [t.detach().clone() for t in captured.state_of(model)]
    return program, model, inputs, captured, state


def _capture_variant(problem_file, sizes, device, base):
    """(Point, None) for the model captured at `sizes`, or (None, why). Shapes are all a variant is
    for, so it is captured on the meta device first (no arithmetic: a large model's variants cost
    nothing); where the meta capture fails or runs other operators than the base (an operator with
    no meta kernel, a device-specific path), on `device` itself."""
    why = None
    for where in ("meta", device):
        try:
            _, _, inputs, captured, state = capture_point(problem_file, sizes, where)
            record(captured, state + inputs)
        except Exception as e:  # a size the program cannot take is a size it is not moved to
            why = f"the program failed ({type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''})"
            continue
        point = Point(sizes, captured)
        if _signature(point) == _signature(base):
            return point, None
        why = "the model runs other operators"
    return None, why


def fit_sizes(problem_file, base, candidates, device, log):
    """`base` is the captured Point at the file's values; `candidates` the size variables to try."""
    points = [base]
    symbols = {}
    notes = []
    for name in candidates:
        value = base.sizes[name]
        moved = []
        why = None
        for v in variants(value):
            sizes = dict(base.sizes)
            sizes[name] = v
            point, why = _capture_variant(problem_file, sizes, device, base)
            if why:
                why = f"at {name} = {v} {why}"
                break
            if _state_shapes(point) != _state_shapes(base):
                why = f"{name} sizes parameters or buffers"
                break
            floats = [(i, p) for i, n in enumerate(base.nodes) for p, x in node_literals(n).items()
                      if isinstance(x, float) and node_literals(point.nodes[i]).get(p) != x]
            if floats:
                why = f"{name} changes a float constant of the graph (node {base.nodes[floats[0][0]].name})"
                break
            moved.append(point)
        if why or not moved:
            notes.append(f"{name} keeps its value {value}: {why or 'it has no other value to take'}")
            continue
        symbols[name] = value
        points += moved
        log(f"size variable {name} = {value} follows into the regions")
    while True:
        literals, dims, unfit = _fit_all(points, symbols, base)
        if not unfit:
            return SizeFit(symbols, notes, literals, dims)
        drop = unfit[0]
        del symbols[drop[0]]
        notes.append(f"{drop[0]} keeps its value {base.sizes[drop[0]]}: {drop[1]}")
        points = [p for p in points if all(p.sizes[s] == base.sizes[s] for s in base.sizes if s not in symbols)]


def _fit_all(points, symbols, base):
    names = sorted(symbols)
    literals, dims, unfit = {}, {}, []
    for i, node in enumerate(base.nodes):
        values = [node_literals(p.nodes[i]) for p in points]
        for path, value in values[0].items():
            if isinstance(value, float):
                continue
            observed = [(dict(p.sizes), v.get(path)) for p, v in zip(points, values)]
            if all(v == value for _, v in observed):
                continue
            fit = fit_dim([({s: z[s] for s in names}, v) for z, v in observed], names)
            if fit is None:
                moving = [s for s in names if any(z[s] != base.sizes[s] and v != value for z, v in observed)]
                unfit.append((moving[0] if moving else names[0], f"literal {value} of {node.name} fits no form"))
                continue
            literals[(i, path)] = Expr(python_expression(fit.text))
        meta = node.meta.get("kforge_meta")
        if meta is None:
            continue
        texts = []
        for d, size in enumerate(meta[0]):
            observed = [({s: p.sizes[s] for s in names}, p.nodes[i].meta["kforge_meta"][0][d]) for p in points]
            fit = fit_dim(observed, names)
            if fit is None:
                unfit.append((names[0], f"dim {d} of {node.name} fits no form"))
                texts.append(str(size))
            else:
                texts.append(python_expression(fit.text))
        dims[i] = texts
    return literals, dims, unfit
