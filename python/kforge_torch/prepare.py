"""The reference process's `prepare` request: inputs, parameters and outputs into the worker's buffers.

Order matters for memory and for correctness. The model (kept between requests while the sizes and
the parameter seed stay) and the inputs are made on the device; every input and parameter the
worker names is written first, before any forward can touch them (a forward may write its inputs in
place). For `expected` the inputs are then converted to fp64 and the device copies in the program's
dtype dropped, so that the fp64 forward has the memory; the outputs are written rounded to each
output's dtype. When the program cannot run in fp64 (an op without a double kernel, a forward that
insists on its dtype) or fp64 does not fit, the outputs come from the program's own dtype and the
reply says so (`"precision": "own"` and the reason). `program` writes the own-dtype outputs.

Integer outputs are the exception: their expected values are always the program's own. An integer
that a float computation rounds or compares into being (a quantized value, an index, a count) can
come out differently from fp64 inputs (a value that rounds to a tie in fp32 and not in fp64), and
PyTorch, which these tasks take as the reference, computes it in the program's dtype; an exact
check against the fp64 run refused kernels that did exactly what the program does. So `expected`
runs the own-dtype forward too, on copies of the inputs, and keeps its integer outputs.
"""
import time

import torch

from .checks import INTEGER_DTYPES
from .layout import inputs_to_fp64, model_to_fp64
from .locations import Location, LocationError, Writer
from .model_state import model_tensors
from .problem import ProblemError, dtype_name
from .request_error import RequestError
from .timing import OUT_OF_MEMORY

WHAT = ("inputs", "expected", "program")


class Preparation:
    """One prepare request, from validation to the reply."""

    def __init__(self, process, request):
        self.process = process
        self.device = process.device
        self.sizes = process._sizes(request)
        self.input_seed = process._seed(request, "input_seed")
        self.param_seed = process._seed(request, "param_seed")
        self.what = request.get("what")
        if self.what not in WHAT:
            raise RequestError(f"what must be one of {', '.join(WHAT)}, not {self.what!r}")
        buffers = request.get("buffers", {})
        if not isinstance(buffers, dict):
            raise RequestError("buffers must be an object of NAME: LOCATION")
        self.writes, self.outputs_wanted = [], []
        for name, spec in buffers.items():
            arg = process.args.get(name)
            if arg is None:
                raise RequestError(f"buffer {name}: no arg of that name (args: {', '.join(process.args)})")
            if arg.kind != "tensor":
                raise RequestError(f"buffer {name}: {arg.describe()} is a scalar and has no buffer")
            if arg.role == "output" and self.what == "inputs":
                raise RequestError(f"buffer {name}: outputs are written by expected or program, not inputs")
            location = Location(name, spec)
            (self.outputs_wanted if arg.role == "output" else self.writes).append((arg, location))
        self.seconds = {"model": 0.0, "inputs": 0.0, "forward": 0.0, "write": 0.0}
        self.precision, self.note = "own", ""

    def _timed(self, step, fn, *args):
        began = time.perf_counter()
        result = fn(*args)
        self.process._synchronize()
        self.seconds[step] += time.perf_counter() - began
        return result

    def run(self):
        process = self.process
        program = process._program(self.sizes)
        model = None
        try:
            with Writer(self.device, process.driver) as writer:
                if self.outputs_wanted or any(arg.role == "param" for arg, _ in self.writes):
                    model = self._timed("model", process._model, program, self.sizes, self.param_seed)
                self.inputs = self._timed("inputs", program.make_inputs, self.input_seed, self.device)
                self._timed("write", self._write_given, writer, model)
                if self.outputs_wanted:
                    outputs = self._timed("forward", self._outputs, program, model)
                    self.inputs = None
                    self._timed("write", self._write_outputs, writer, outputs)
                    del outputs
        finally:
            self.inputs = None
            process._free()
        return {"ok": True, "precision": self.precision, "note": self.note,
                "seconds": {k: round(v, 6) for k, v in self.seconds.items()}}

    def _write_given(self, writer, model):
        state = model_tensors(model) if model is not None else {}
        for arg, location in self.writes:
            if arg.role == "param":
                if arg.key not in state:
                    raise RequestError(f"{arg.describe()}: the model holds no tensor {arg.key!r}")
                value = state[arg.key]
            else:
                if arg.index >= len(self.inputs):
                    raise RequestError(f"{arg.describe()}: get_inputs() returns {len(self.inputs)} values")
                value = self.inputs[arg.index]
                if not isinstance(value, torch.Tensor):
                    raise RequestError(f"{arg.describe()}: get_inputs() gives a {type(value).__name__} there, "
                                       "not a tensor")
            self._check_dtype(arg, value)
            writer.write(location, value, arg.dtype, arg.describe())

    @staticmethod
    def _check_dtype(arg, value):
        name = dtype_name(value.dtype, arg.describe())
        if name != arg.dtype:
            raise LocationError(f"{arg.describe()} is {name} here, but the task says {arg.dtype}")

    def _outputs(self, program, model):
        if self.what == "expected":
            own_integers = self._own_integer_outputs(program, model)
            try:
                return self._with_own_integers(self._fp64_outputs(program), own_integers)
            except ProblemError as e:
                self.note = f"the program does not run in fp64 ({e}); the expected outputs are in its own dtype"
            except OUT_OF_MEMORY:
                self.note = "fp64 does not fit in the GPU's free memory; the expected outputs are in the own dtype"
            self.process.model64 = None
            self.process._free()
            self.inputs = program.make_inputs(self.input_seed, self.device)  # the same values, as before
        outputs, _ = program.run_forward(model, self.inputs, self.device)
        return outputs

    def _own_integer_outputs(self, program, model):
        """{output index: the own-dtype forward's value} for the integer outputs wanted; the forward
        runs on copies, since it may write its inputs in place and the fp64 run converts them after."""
        indices = {arg.index for arg, _ in self.outputs_wanted if arg.dtype in INTEGER_DTYPES}
        if not indices:
            return {}
        try:
            inputs = [t.clone() if isinstance(t, torch.Tensor) else t for t in self.inputs]
            outputs, _ = program.run_forward(model, inputs, self.device)
        except OUT_OF_MEMORY:
            inputs = outputs = None
            self.process._free()
            self.note = ("the own-dtype forward for the integer outputs does not fit beside the inputs; they are "
                         "the fp64 forward's")
            return {}
        del inputs
        return {i: outputs[i] for i in indices if i < len(outputs)}

    def _with_own_integers(self, outputs, own_integers):
        differ = []
        for i, own in sorted(own_integers.items()):
            if i < len(outputs):
                if not torch.equal(outputs[i].to(own.dtype), own):
                    differ.append(str(i))
                outputs[i] = own
        if differ:
            note = (f"integer output(s) {', '.join(differ)} are the program's own: its dtype rounds them "
                    "differently from fp64, and PyTorch computes them in its dtype")
            self.note = f"{self.note}; {note}" if self.note else note
        return outputs

    def _fp64_outputs(self, program):
        process = self.process
        for attempt in range(2):
            try:
                if process.model64 is None:
                    process.model64 = model_to_fp64(program, self.param_seed, self.device)
                inputs64 = inputs_to_fp64(self.inputs)
                self.inputs = None  # the own-dtype copies are written already; the fp64 forward needs the room
                outputs, _ = program.run_forward(process.model64, inputs64, self.device)
                break
            except OUT_OF_MEMORY:
                inputs64 = None
                process.model64 = None
                process._free()
                if attempt == 1:
                    raise
                if self.inputs is None:
                    self.inputs = program.make_inputs(self.input_seed, self.device)
        self.precision = "fp64"
        lower = [str(i) for i, t in enumerate(outputs) if t.is_floating_point() and t.dtype != torch.float64]
        if lower:
            self.note = (f"output(s) {', '.join(lower)} come out of the fp64 forward in a lower precision (the "
                         "forward casts); they are its rounding of fp64 values")
        return outputs

    def _write_outputs(self, writer, outputs):
        for arg, location in self.outputs_wanted:
            if arg.index >= len(outputs):
                raise RequestError(f"{arg.describe()}: the forward returns {len(outputs)} outputs")
            value = outputs[arg.index]
            if self.precision == "own":
                self._check_dtype(arg, value)
            writer.write(location, value, arg.dtype, arg.describe())
