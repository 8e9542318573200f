"""A region as a KernelBench-form problem file: Model (the model's tensors it reads, as parameters
and buffers named after the model's modules), get_inputs (its live-ins at the model's shapes, in
the model's size variables), get_init_inputs ([]).

Values: parameters are drawn with each one's own mean and standard deviation, except that a
parameter the model holds constant (a norm's weight of ones, a bias of zeros) is drawn around that
constant with a spread (PERTURB), so that a kernel that ignores it fails verification; buffers (a
causal mask, running statistics) and constants the capture made are written exactly when they
compress to at most EXACT_BYTES; a live-in is drawn with the statistics the model's own activation
had there (post-ReLU values stay non-negative), integer live-ins uniformly over the range the
model's had, in the layout the model stores it (regions.input_layout).

Attention is written as F.scaled_dot_product_attention, whatever kernel the capture recorded (the
capture on a GPU records `_scaled_dot_product_flash_attention`, which has no CPU kernel, and the
importer and the emulator run a problem on the CPU too).
"""
import base64
import operator
import re
import zlib

import torch

from .regions import input_layout, op_name, region_graph

EXACT_BYTES = 1 << 20
KNOWN_GLOBALS = {"torch", "device", "inf", "nan", "builtins", "operator", "math"}


class RegionWriteError(Exception):
    pass


def _dtype(dtype):
    return "torch." + str(dtype).split(".")[-1]


def _exact(tensor):
    raw = tensor.detach().cpu().contiguous()
    flat = raw.reshape(-1)
    data = zlib.compress((flat.view(torch.uint8) if raw.dtype != torch.bool else flat.to(torch.uint8)).numpy().tobytes(), 9)
    if len(data) > EXACT_BYTES:
        return None
    text = base64.b64encode(data).decode()
    lines = "\n".join(f"    {text[i:i + 96]!r}" for i in range(0, len(text), 96))
    return f"_exact((\n{lines}\n), {tuple(raw.shape)!r}, {_dtype(raw.dtype)})"


def _float_stats(tensor):
    values = tensor.detach().double()
    finite = values[torch.isfinite(values)]
    if finite.numel() == 0:
        return 0.0, 1.0, None
    mean, std = finite.mean().item(), (finite.std().item() if finite.numel() > 1 else 0.0)
    low = finite.min().item()
    return mean, std, low


# A parameter whose spread is under NEAR_CONSTANT of its mean's size (or that is all zeros) is drawn
# with PERTURB of its mean's size (or PERTURB itself around zero) instead: a kernel that treats it as
# the constant it is in a freshly built model must not pass.
NEAR_CONSTANT = 0.01
PERTURB = 0.1


def _draw(tensor, shape_text, exact_ok, perturb_constant=False):
    """Python that makes a tensor like `tensor` with shape `shape_text`."""
    dtype = tensor.dtype
    if exact_ok:
        text = _exact(tensor)
        if text is not None:
            return text
    if dtype == torch.bool:
        return f"torch.rand({shape_text}) < {tensor.float().mean().item():.6g}"
    if not dtype.is_floating_point:
        low, high = int(tensor.min().item()), int(tensor.max().item())
        return f"torch.randint({low}, {high + 1}, {shape_text}, dtype={_dtype(dtype)})"
    mean, std, low = _float_stats(tensor)
    if perturb_constant and std <= NEAR_CONSTANT * abs(mean):
        spread = PERTURB * abs(mean) if mean != 0.0 else PERTURB
        return f"(torch.randn({shape_text}) * {spread:.6g} + {mean:.6g}).to({_dtype(dtype)})"
    if std == 0.0:
        return f"torch.full({shape_text}, {mean!r}, dtype={_dtype(dtype)})"
    nonnegative = low is not None and low >= 0
    draw = f"torch.randn({shape_text}) * {std:.6g} + {mean:.6g}"
    if nonnegative:
        draw = f"({draw}).abs()"
    return f"({draw}).to({_dtype(dtype)})"


# Where each attention kernel's arguments sit: (positions of dropout_p, is_causal, attn bias or None;
# the attention mask keyword or None). Only its output (element 0) may be read for the rewrite.
_ATTENTION_ARGS = {
    "_scaled_dot_product_flash_attention": (3, 4, None, None),
    "_scaled_dot_product_flash_attention_for_cpu": (3, 4, None, "attn_mask"),
    "_scaled_dot_product_efficient_attention": (5, 6, 3, None),
    "_scaled_dot_product_cudnn_attention": (5, 6, 3, None),
}


def portable_attention(gm):
    """Rewrites each device-specific attention kernel of `gm` whose output alone is read as
    F.scaled_dot_product_attention with the same arguments (in place)."""
    graph = gm.graph
    for node in list(graph.nodes):
        where = _ATTENTION_ARGS.get(op_name(node)) if node.op == "call_function" else None
        if where is None or not node.users:
            continue
        if any(u.target is not operator.getitem or u.args[1] != 0 for u in node.users):
            continue  # its log-sum-exp is read (a backward): the kernel stays as captured
        dropout_at, causal_at, bias_at, mask_key = where
        args = node.args

        def arg(i, default):
            return args[i] if i is not None and i < len(args) else default

        mask = arg(bias_at, None) if bias_at is not None else node.kwargs.get(mask_key) if mask_key else None
        kwargs = {"attn_mask": mask, "dropout_p": arg(dropout_at, 0.0), "is_causal": arg(causal_at, False)}
        if node.kwargs.get("scale") is not None:
            kwargs["scale"] = node.kwargs["scale"]
        with graph.inserting_before(node):
            portable = graph.call_function(torch.nn.functional.scaled_dot_product_attention, tuple(args[:3]), kwargs)
        for user in list(node.users):
            user.replace_all_uses_with(portable)
            graph.erase_node(user)
        graph.erase_node(node)
    graph.lint()
    gm.recompile()


def _shape_text(dims):
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


HELPERS = '''

def _exact(chunks, shape, dtype):
    """A tensor written exactly (zlib, base64): a buffer or constant of the model."""
    import base64, zlib
    raw = bytearray(zlib.decompress(base64.b64decode("".join(chunks))))
    if dtype == torch.bool:
        tensor = torch.frombuffer(raw, dtype=torch.uint8).reshape(shape).bool()
    else:
        tensor = torch.frombuffer(raw, dtype=dtype).reshape(shape).clone()
    return tensor.to(torch.empty(0).device)  # where the program's tensors are made (kforge's device mode)
'''


def write_problem(path, model_file, partition, region, occurrences, names, size_fit, base_nodes, state_values,
                  module_names):
    """Writes `region`'s problem file to `path`. `base_nodes` maps each graph node to its index (for
    the fitted dims), `state_values` the model's tensors by state name."""
    captured = partition.captured
    gm = region_graph(partition, region, names, state_as="attr", physical=True)
    portable_attention(gm)
    code = gm.graph.python_code(root_module="self")
    unknown = {g for g in set(code.globals) - KNOWN_GLOBALS if re.search(r"\b" + re.escape(g) + r"\b", code.src)}
    if unknown:
        raise RegionWriteError(f"its code needs {', '.join(sorted(unknown))}, which a problem file cannot import")
    body = code.src.strip("\n")
    index_of = {n: i for i, n in enumerate(captured.placeholders())}
    lines = [f'"""Region {region.index} ({region.name}) of {model_file}: kforge model extract wrote it.',
             "",
             f"It runs {occurrences} time(s) in one forward of the model; it reads {', '.join(module_names) or 'no module'}.",
             "Its tensors are the model's (names from its modules), drawn with the model's statistics;",
             "its inputs are the activations the model hands it, at the model's sizes.",
             '"""',
             "import torch",
             "import torch.nn as nn",
             "from torch import device  # noqa: F401  (fx writes device(...) literals)",
             "",
             "inf = float('inf')",
             "nan = float('nan')"]
    for name, value in sorted(size_fit.symbols.items()):
        lines.append(f"{name} = {value}")
    lines += ["", "", "class Model(nn.Module):", "    def __init__(self):", "        super().__init__()"]
    if "self._device" in body:  # the device forward names: where kforge builds the model
        lines.append("        self._device = torch.empty(0).device")
    for node in region.state:
        state_name = captured.state_names[index_of[node]]
        tensor = state_values[state_name]
        shape_text = _shape_text([str(d) for d in tensor.shape])
        if captured.state_kinds[state_name] == "param":
            lines.append(f"        self.{names[state_name]} = nn.Parameter({_draw(tensor, shape_text, False, True)})"
                         f"  # {state_name}")
        else:
            lines.append(f"        self.register_buffer({names[state_name]!r}, {_draw(tensor, shape_text, True)})"
                         f"  # {state_name}")
    for attr in [n.target for n in gm.graph.nodes if n.op == "get_attr" and n.target.startswith("const_")]:
        text = _exact(getattr(gm, attr))
        if text is None:
            raise RegionWriteError(f"it reads a constant {attr} too large to write")
        lines.append(f"        self.register_buffer({attr!r}, {text})")
    lines += [""] + ["    " + line if line.strip() else "" for line in body.splitlines()]
    lines += ["", "", "def get_inputs():", "    return ["]
    for node in region.inputs:
        dims = size_fit.dims.get(base_nodes[node]) or [str(d) for d in node.meta["kforge_meta"][0]]
        layout = input_layout(node)
        if layout is not None and layout[0] == "permute":  # drawn as it lies in memory
            dims = [dims[d] for d in layout[1]]
        lines.append(f"        {_draw(node.meta['kforge_value'], _shape_text(dims), False)},")
    lines += ["    ]", "", "", "def get_init_inputs():", "    return []"]
    text = "\n".join(lines) + "\n" + HELPERS
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return text


def attr_names(state_names):
    """`blocks.0.attn.c_attn.weight` -> `blocks_0_attn_c_attn_weight` (unique, identifiers)."""
    out, used = {}, set()
    for name in state_names:
        attr = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
        if not attr or attr[0].isdigit():
            attr = "t_" + attr
        base, k = attr, 2
        while attr in used:
            attr = f"{base}_{k}"
            k += 1
        used.add(attr)
        out[name] = attr
    return out


def module_names_of(region, captured):
    index_of = {n: i for i, n in enumerate(captured.placeholders())}
    modules = []
    for node in region.state:
        name = captured.state_names[index_of[node]].rsplit(".", 1)[0]
        if name not in modules:
            modules.append(name)
    return modules

