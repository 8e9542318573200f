"""`python3 -m kforge_torch.reference`: the reference process of a GPU worker (docs/torch-tasks.md).

The GPU worker starts one per GPU and speaks frames (frames.py) over fds 3 (requests) and 4
(replies). For each shape and input set it makes the inputs exactly as `get_inputs()` does, on the
device, under the worker's seed; builds the model from `get_init_inputs()` under the parameter
seed; computes the outputs in fp64 (or in the program's own dtype); and writes whatever the worker
names into the worker's own allocations. It also times the program (eager and `torch.compile`) for
the baselines, and can compile it ahead on stand-in tensors without running anything on the GPU
(`warm_compile`): on a GPU that several runs share, the compile's CPU work is then done before the
worker takes the GPU's measuring lock (evaluator/worker/share.hpp). Requests run one at a
time; a bad request is an `"ok": false` reply and the process carries on. A CUDA error that poisons the context is replied with `"fatal": true`, and the process
exits so the worker can start a fresh one.

Memory is the worker's first: the model of the last (sizes, param_seed) is kept (building one can
cost more than the forward), but inputs and outputs are freed and the allocator's cache emptied
after every request.
"""
import argparse
import sys
import time
import traceback

from .frames import FrameError, read_frame, write_frame
from .request_error import RequestError


class ArgRef:
    """One argument of the task as the reference process needs it: which value of the program it is."""

    def __init__(self, spec):
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise RequestError(f"an arg must be an object with a \"name\", not {spec!r}")
        self.name = spec["name"]
        if "from" in spec:  # the spec's form: "input 0", "param gemm.weight", "output 1"
            parts = str(spec["from"]).split(" ", 1)
            role = {"input": "input", "param": "param", "output": "output"}.get(parts[0])
            if role is None or len(parts) != 2:
                raise RequestError(f"arg {self.name}: \"from\" must be \"input N\", \"param KEY\" or \"output N\"")
            spec = dict(spec, role=role, **({"key": parts[1]} if role == "param" else {"index": parts[1]}))
        self.role = spec.get("role")
        if self.role not in ("input", "param", "output"):
            raise RequestError(f"arg {self.name}: role must be input, param or output, not {self.role!r}")
        if self.role == "param":
            self.key = spec.get("key")
            if not isinstance(self.key, str):
                raise RequestError(f"arg {self.name}: a param needs its state_dict \"key\"")
        else:
            try:
                self.index = int(spec.get("index"))
            except (TypeError, ValueError):
                raise RequestError(f"arg {self.name}: an {self.role} needs an integer \"index\"") from None
        from .problem import TORCH_DTYPES
        self.dtype = spec.get("dtype")
        if self.dtype not in TORCH_DTYPES:
            raise RequestError(f"arg {self.name}: unknown dtype {self.dtype!r}")
        self.kind = spec.get("kind", "scalar" if "value" in spec else "tensor")

    def describe(self):
        where = f"param {self.key}" if self.role == "param" else f"{self.role} {self.index}"
        return f"{self.name} ({where})"


class ReferenceProcess:
    """The state between requests: the problem, the device, the last model."""

    def __init__(self):
        self.problem = None
        self.device, self.symbols, self.args = "cpu", [], {}
        self.program_key = self.program = None
        self.model_key = self.model = self.model64 = None
        self.driver = None
        self.sampler = None

    def handle(self, request):
        op = request.get("op")
        if op == "setup":
            return self.setup(request)
        if self.problem is None:
            raise RequestError(f"the first request must be setup, not {op!r}")
        if op == "prepare":
            return self.prepare(request)
        if op == "time":
            return self.time(request)
        if op == "warm_compile":
            return self.warm_compile(request)
        raise RequestError(f"unknown op {op!r} (setup, prepare, time, warm_compile)")

    # -- setup ------------------------------------------------------------------------------------

    def setup(self, request):
        import torch
        from .problem import ProblemFile
        from .timing import Sampler
        device = request.get("device", "cuda")
        if device not in ("cuda", "cpu"):
            raise RequestError(f"device must be cuda or cpu, not {device!r}")
        if device == "cuda" and not torch.cuda.is_available():
            raise RequestError(f"torch {torch.__version__} sees no CUDA device")
        symbols = request.get("symbols", [])
        if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
            raise RequestError("symbols must be a list of names")
        args = [ArgRef(a) for a in request.get("args", [])]
        names = [a.name for a in args]
        if len(set(names)) != len(names):
            raise RequestError("two args share a name")
        problem = ProblemFile(str(request.get("problem", "")))
        problem.load()  # a file without Model or one that raises fails here, not at the first prepare
        set_precision(torch)
        self.problem, self.symbols, self.device = problem, symbols, device
        self.args = {a.name: a for a in args}
        self.program_key = self.program = self.model_key = self.model = self.model64 = None
        self.sampler = Sampler()
        if device == "cuda":
            from .cuda_driver import Driver
            torch.empty(1, device="cuda")  # torch's context first, so IPC handles open in it
            self.driver = Driver()
            self.driver.ensure_context()
            name = torch.cuda.get_device_name(0)
        else:
            name = "cpu"
        return {"ok": True, "torch": torch.__version__, "device": name}

    # -- shared steps -----------------------------------------------------------------------------

    def _sizes(self, request):
        sizes = request.get("sizes")
        if not isinstance(sizes, dict) or set(sizes) != set(self.symbols):
            raise RequestError(f"sizes must give exactly the symbols {', '.join(self.symbols) or '(none)'}, not "
                               f"{sorted(sizes) if isinstance(sizes, dict) else sizes!r}")
        for name, value in sizes.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RequestError(f"size {name} must be a positive integer, not {value!r}")
        return {s: sizes[s] for s in self.symbols}

    @staticmethod
    def _seed(request, name):
        value = request.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 64:
            raise RequestError(f"{name} must be an unsigned 64-bit integer, not {value!r}")
        return value

    def _program(self, sizes):
        key = tuple(sizes.items())
        if key != self.program_key:
            self.program, self.program_key = self.problem.load(sizes), key
        return self.program

    def _model(self, program, sizes, param_seed):
        key = (tuple(sizes.items()), param_seed)
        if key != self.model_key:
            self.model = self.model64 = None  # free the old one before building the new one
            self.model, self.model_key = program.build_model(param_seed, self.device), key
        return self.model

    def _synchronize(self):
        if self.device == "cuda":
            import torch
            torch.cuda.synchronize()

    def _free(self):
        if self.device == "cuda":
            import torch
            torch.cuda.empty_cache()

    # -- prepare ----------------------------------------------------------------------------------

    def prepare(self, request):
        from .prepare import Preparation
        return Preparation(self, request).run()

    # -- time -------------------------------------------------------------------------------------

    def time(self, request):
        from .timing import Settings, time_mode
        sizes = self._sizes(request)
        input_seed, param_seed = self._seed(request, "input_seed"), self._seed(request, "param_seed")
        modes = request.get("modes", ["eager", "compile"])
        if not isinstance(modes, list) or not modes:
            raise RequestError("modes must be a non-empty list (eager, compile)")
        try:
            settings = Settings(request)
        except ValueError as e:
            raise RequestError(str(e)) from None
        program = self._program(sizes)
        model = self._model(program, sizes, param_seed)
        inputs = program.make_inputs(input_seed, self.device)
        reply = {"ok": True}
        try:
            for mode in modes:
                reply[str(mode)] = time_mode(self.sampler, mode, model, inputs, self.device, settings)
        finally:
            del inputs
            self.sampler.release()
            self._free()
        return reply


    # -- warm_compile -----------------------------------------------------------------------------

    def warm_compile(self, request):
        """torch.compile of the program at these sizes on stand-in tensors, running nothing on the GPU,
        so that the compile a `time` request makes afterwards (under the GPU's measuring lock) finds
        torch's compile caches warm. Its answer is advice, never an error: {"warmed", "seconds", "note"}."""
        from .timing import warm_compile
        sizes = self._sizes(request)
        input_seed, param_seed = self._seed(request, "input_seed"), self._seed(request, "param_seed")
        limit = request.get("limit_seconds", 300)
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit <= 0:
            raise RequestError(f"limit_seconds must be a number above 0, not {limit!r}")
        reply = warm_compile(self._program(sizes), input_seed, param_seed, self.device, float(limit))
        reply["ok"] = True
        return reply


def set_precision(torch):
    """TF32 and reduced-precision reductions off, for everything computed and timed here."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("highest")
    for flag in ("allow_bf16_reduced_precision_reduction", "allow_fp16_reduced_precision_reduction"):
        try:
            setattr(torch.backends.cuda.matmul, flag, False)
        except (AttributeError, AssertionError):  # older torch lacks the flag (and says so with an assert)
            pass


def _is_fatal(error):
    """A CUDA error that leaves the context unusable (an illegal address, a launch failure)."""
    text = str(error)
    return any(s in text for s in ("illegal memory access", "unspecified launch failure", "device-side assert",
                                   "misaligned address", "an illegal instruction"))


def serve(process, requests_fd, replies_fd):
    """Answers requests until the worker closes the pipe; returns the exit status."""
    from .cuda_driver import CudaDriverError
    from .locations import LocationError
    from .problem import ProblemError
    expected = (RequestError, ProblemError, LocationError, CudaDriverError)
    while True:
        try:
            request = read_frame(requests_fd)
        except FrameError as e:
            print(f"kforge_torch.reference: {e}", file=sys.stderr)
            return 2
        if request is None:
            return 0
        began = time.perf_counter()
        fatal = False
        try:
            reply = process.handle(request)
        except expected as e:
            reply = {"ok": False, "error": str(e)}
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            fatal = _is_fatal(e)
            last = (str(e).strip().splitlines() or [""])[-1]
            reply = {"ok": False, "error": f"{type(e).__name__}: {last}"[:2000]}
            try:
                process._free()
            except Exception:  # the context is gone: nothing more can run here
                fatal = True
            if fatal:
                reply["fatal"] = True
        reply.setdefault("wall_seconds", round(time.perf_counter() - began, 6))
        try:
            write_frame(replies_fd, reply)
        except (FrameError, ValueError) as e:
            write_frame(replies_fd, {"ok": False, "error": f"the reply could not be encoded: {e}"})
        except OSError as e:
            print(f"kforge_torch.reference: cannot reply: {e}", file=sys.stderr)
            return 2
        if fatal:
            return 1


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m kforge_torch.reference", description=__doc__.splitlines()[0])
    parser.add_argument("--fds", default="3,4", help="request and reply file descriptors (default 3,4)")
    args = parser.parse_args(argv)
    requests_fd, replies_fd = (int(x) for x in args.fds.split(","))
    return serve(ReferenceProcess(), requests_fd, replies_fd)


if __name__ == "__main__":
    # Run the package's module, not this __main__ copy, so that its exception classes are the ones the
    # other modules raise.
    from kforge_torch.reference import main as package_main
    sys.exit(package_main())
