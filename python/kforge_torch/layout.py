"""What a problem's tensors look like at given sizes: on the meta device for free, on a real device
when the values matter.

The importer needs the dims of every input, parameter and output at many sizes (to find the size
symbols, choose shapes and fit dims expressions), including the file's own sizes, which may be
gigabytes. On the `meta` device the model, the inputs and the forward run without allocating, so
each evaluation costs milliseconds whatever the sizes. Where an operation has no meta kernel (or
needs values, like `.item()`), the forward runs on the real device instead, but only while the
inputs are small; at bigger sizes the outputs stay unknown and their dims come from the fit.

`run_real` runs the program for its values: own dtype and fp64 (`model.double()`, float inputs
`.double()`) on the same inputs, as the tolerances and the reference process need.
"""
import collections
import copy
import math
import time

import torch

from .model_state import model_tensors, to_fp64
from .problem import ProblemError, dtype_name

# dims: a tuple of ints. A 0-dim tensor is held as one element, dims (1,), with zero_dim set so the
# spec can say so (ModelNew then takes and returns a 0-dim tensor where the program does).
TensorFact = collections.namedtuple("TensorFact", "dims dtype zero_dim", defaults=(False,))
ScalarFact = collections.namedtuple("ScalarFact", "value dtype")  # a Python number among the inputs

REAL_FALLBACK_ELEMENTS = 1 << 22  # the most input elements a forward runs on the CPU for its dims


def tensor_fact(tensor, what):
    dims = tuple(int(d) for d in tensor.shape) or (1,)
    return TensorFact(dims, dtype_name(tensor.dtype, what), tensor.dim() == 0)


def scalar_fact(value):
    if isinstance(value, bool):
        return ScalarFact(int(value), "u8")
    if isinstance(value, int):
        return ScalarFact(value, "i64")
    return ScalarFact(float(value), "f32")


class Layout:
    """Dims and dtypes of one evaluation; `outputs` is None where they could not be learned."""

    def __init__(self, inputs, params, outputs, output_tuple):
        self.inputs, self.params, self.outputs, self.output_tuple = inputs, params, outputs, output_tuple

    def tensors(self):
        """(role, index or key, TensorFact) for every tensor."""
        for i, fact in enumerate(self.inputs):
            if isinstance(fact, TensorFact):
                yield "input", i, fact
        for key, fact in self.params:
            yield "param", key, fact
        for i, fact in enumerate(self.outputs or []):
            yield "output", i, fact

    def max_elements(self, only=None):
        """Elements of the largest tensor, or of the largest whose (role, index or key) is in `only`."""
        return max((math.prod(f.dims) for role, key, f in self.tensors() if only is None or (role, key) in only),
                   default=0)

    def has_empty_dim(self):
        return any(0 in f.dims for _, _, f in self.tensors())


def structure(layout):
    """(inputs, params, outputs) of a Layout without their dims: kinds, dtypes, ranks and parameter
    keys (outputs None where unknown). A kernel has one signature: this must not change with sizes."""
    inputs = tuple((type(f).__name__, f.dtype, len(f.dims) if hasattr(f, "dims") else 0) for f in layout.inputs)
    params = tuple((key, f.dtype, len(f.dims)) for key, f in layout.params)
    outputs = None if layout.outputs is None else tuple((f.dtype, len(f.dims)) for f in layout.outputs)
    return inputs, params, outputs


def first_difference(a, b, what):
    """`what i: x vs y` for the first place two structure tuples differ, or their lengths."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"{what} {i}: {x} vs {y}"
    return f"{what}: {len(a)} vs {len(b)}"


def signature_change(a, b):
    """None where Layouts `a` and `b` have one signature; else (part, text): the first part that differs
    ("input", "parameter" or "output", checked in that order; outputs only where both are known) and
    its first difference, as text."""
    for part, what in zip(zip(structure(a), structure(b)), ("input", "parameter", "output")):
        if part[0] is not None and part[1] is not None and part[0] != part[1]:
            return what, first_difference(part[0], part[1], what)
    return None


def input_facts(inputs):
    return [tensor_fact(v, f"input {i}") if isinstance(v, torch.Tensor) else scalar_fact(v)
            for i, v in enumerate(inputs)]


def param_facts(model):
    return [(key, tensor_fact(t, f"parameter {key}")) for key, t in model_tensors(model).items()]


def output_facts(outputs):
    return [tensor_fact(t, f"output {i}") for i, t in enumerate(outputs)]


def _no_meta_kernel(error):
    cause = getattr(error, "cause", None)
    text = str(cause if cause is not None else error).lower()
    return isinstance(cause, NotImplementedError) or "meta" in text


class Evaluator:
    """Evaluates one problem file's layout at any sizes; remembers whether meta forwards work."""

    def __init__(self, problem_file, real_device="cpu"):
        self.file = problem_file
        self.real_device = real_device
        self.meta_forward = True   # False once a forward needed a kernel the meta device lacks
        self.meta_note = ""

    def inputs(self, sizes):
        """Facts of get_inputs() at `sizes` (meta device)."""
        program = self.file.load(sizes)
        return input_facts(program.make_inputs(0, "meta"))

    def layout(self, sizes, outputs=True):
        """The Layout at `sizes`; raises ProblemError where the program fails there. With `outputs`
        False, a program whose forward has no meta kernel is not run for real to learn its outputs
        (choosing shapes needs only a size: a 3D transposed convolution runs 30 s at 2^22 elements)."""
        program = self.file.load(sizes)
        model = program.build_model(0, "meta")
        inputs = program.make_inputs(0, "meta")
        facts = input_facts(inputs)
        params = param_facts(model)
        if self.meta_forward:
            try:
                outputs, is_tuple = program.run_forward(model, inputs, "meta")
                return Layout(facts, params, output_facts(outputs), is_tuple)
            except ProblemError as e:
                if not _no_meta_kernel(e):
                    raise
                self.meta_forward = False
                why = (str(e.cause or e).strip().splitlines() or [""])[0][:200]
                self.meta_note = (f"the forward cannot run on the meta device ({why}); output dims come from "
                                  "real forwards at small sizes")
        elements = sum(math.prod(f.dims) for f in facts if isinstance(f, TensorFact))
        if elements > REAL_FALLBACK_ELEMENTS or not outputs:
            return Layout(facts, params, None, None)
        run = run_real(self.file, sizes, 0, 0, self.real_device, fp64=False)
        return run.layout


class RealRun:
    """One real run: inputs, parameters, outputs in the program's dtype and, where it runs, in fp64."""

    def __init__(self, sizes, inputs, state, outputs, output_tuple, outputs64, fp64_note, seconds, seconds64=0.0):
        self.sizes, self.inputs, self.state = sizes, inputs, state
        self.outputs, self.output_tuple = outputs, output_tuple
        self.outputs64, self.fp64_note, self.seconds = outputs64, fp64_note, seconds
        self.seconds64 = seconds64  # the fp64 forward (with its copies), 0 without one
        self.input_fingerprint = inputs_fingerprint(inputs)  # kept when the inputs are dropped
        self.layout = Layout(input_facts(inputs), [(k, tensor_fact(t, f"parameter {k}")) for k, t in state.items()],
                             output_facts(outputs), output_tuple)


def model_to_fp64(program, param_seed, device):
    """The model in double (floating parameters, buffers and tensor attributes), built afresh under
    the same seed: a deep copy would keep what the model's closures refer to, the fp32 original
    (KernelBench's MiniGPTBlock runs its MLP through `self.mlpf = lambda x: m.c_proj(...)`,
    m = self.mlp)."""
    return to_fp64(program.build_model(param_seed, device), in_place=True)


def inputs_to_fp64(inputs):
    """The inputs with float tensors as doubles; integer tensors and Python numbers as they are."""
    return [v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in inputs]


def free_memory_bytes(device):
    """Bytes the program may allocate on `device`: the GPU's free memory, or the host's MemAvailable."""
    if torch.device(device).type == "cuda":
        return torch.cuda.mem_get_info()[0]
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _gib(n):
    return f"{n / (1 << 30):.3g} GiB"


def check_memory(program, sizes, device, fp64):
    """Raises ProblemError where a real run at `sizes` would not fit in the memory free on `device`, so a
    problem whose file shape (or whose parameters, at any shape) holds gigabytes fails with the reason
    instead of exhausting the machine. Estimated on the meta device: the inputs twice (the forward gets
    copies), the parameters and buffers once, the outputs and the forward's temporaries as twice the
    largest input, and all of it twice more for the fp64 run, within half of what is free."""
    free = free_memory_bytes(device)
    if free is None:
        return
    model = program.build_model(0, "meta")
    inputs = [v for v in program.make_inputs(0, "meta") if isinstance(v, torch.Tensor)]
    held = model_tensors(model)
    input_bytes = sum(t.numel() * t.element_size() for t in inputs)
    param_bytes = sum(t.numel() * t.element_size() for t in held.values())
    scale = 3.0 if fp64 else 1.0  # fp64 doubles the floating tensors once more
    largest_input = max((t.numel() * t.element_size() for t in inputs), default=0)
    needed = scale * (2 * input_bytes + param_bytes + 2 * largest_input)
    if needed <= free / 2:
        return
    largest = max(list(held.items()) + [(f"input {i}", t) for i, t in enumerate(inputs)],
                  key=lambda kv: kv[1].numel() * kv[1].element_size())
    where = "the file's values" if not sizes else ", ".join(f"{k}={v}" for k, v in sizes.items())
    raise ProblemError(
        f"running the program at {where} on {torch.device(device).type} needs about {_gib(needed)} (inputs "
        f"{_gib(input_bytes)}, parameters and buffers {_gib(param_bytes)}, the largest tensor {largest[0]} "
        f"{list(largest[1].shape)}{', and an fp64 copy of each' if fp64 else ''}), more than half of the "
        f"{_gib(free)} free here; import on a machine with more memory (--device cuda on a GPU machine), or "
        "make the sizes that do not scale (those not among the size symbols) smaller")


def run_real(problem_file, sizes, input_seed, param_seed, device, fp64=True, program=None):
    """Runs the program at `sizes` on `device` (own dtype, then fp64 when `fp64`); a ProblemError where
    that would not fit in memory (check_memory)."""
    program = program or problem_file.load(sizes)
    check_memory(program, sizes, device, fp64)
    began = time.perf_counter()
    model = program.build_model(param_seed, device)
    inputs = program.make_inputs(input_seed, device)
    fresh = [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]  # the forward may write its inputs
    outputs, is_tuple = program.run_forward(model, fresh, device)
    seconds = time.perf_counter() - began  # model, inputs and the own forward
    outputs64, note, seconds64 = fp64_forward(program, inputs, outputs, param_seed, device) if fp64 else (None, "", 0.0)
    state = model_tensors(model)
    return RealRun(dict(sizes), inputs, state, outputs, is_tuple, outputs64, note, seconds, seconds64)


def with_fp64(problem_file, run, input_seed, param_seed, device):
    """What `run_real(fp64=True)` gives at `run`'s sizes, from `run`, an own-dtype run there with the same
    seeds: only the fp64 forward runs (the own model's build and forward are the slow half for a wide
    model on the CPU). None where the inputs made again differ from the run's (a `get_inputs()` that
    draws from another generator than torch's): run_real must run both forwards on one set."""
    program = problem_file.load(run.sizes)
    check_memory(program, run.sizes, device, True)
    inputs = program.make_inputs(input_seed, device)
    if inputs_fingerprint(inputs) != run.input_fingerprint:
        return None
    full = copy.copy(run)
    full.outputs64, full.fp64_note, full.seconds64 = fp64_forward(program, inputs, run.outputs, param_seed, device)
    return full


def fp64_forward(program, inputs, outputs, param_seed, device):
    """(outputs64, note, seconds): the forward of the model built again under `param_seed` in double, on
    the float `inputs` as doubles, beside the own `outputs`; outputs64 None and a note where the program
    does not run in fp64."""
    began = time.perf_counter()
    outputs64, note = None, ""
    try:
        fresh = [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
        outputs64, _ = program.run_forward(model_to_fp64(program, param_seed, device), inputs_to_fp64(fresh), device)
        if len(outputs64) != len(outputs):
            raise ProblemError(f"the fp64 forward returned {len(outputs64)} outputs, not {len(outputs)}")
        for own, ref in zip(outputs, outputs64):
            if own.shape != ref.shape:
                raise ProblemError(f"the fp64 forward gives dims {list(ref.shape)} where the program's own "
                                   f"give {list(own.shape)}")
    except ProblemError as e:
        outputs64, note = None, f"the program does not run in fp64: {e}"
    return outputs64, note, time.perf_counter() - began


def inputs_fingerprint(inputs):
    """Enough of `inputs` to tell whether two makings of them agree: each tensor's dims, dtype and
    sum (in double), each other value itself."""
    def one(v):
        if isinstance(v, torch.Tensor):
            total = v.double().sum().item() if v.numel() and not v.is_complex() else 0.0
            return ("tensor", tuple(v.shape), str(v.dtype), total)
        return ("value", repr(v))
    return tuple(one(v) for v in inputs)
