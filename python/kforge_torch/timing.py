"""Timing the program itself: torch eager and `torch.compile`, the baselines kforge's kernels face.

On CUDA this times the way kforge times kernels (and bench/torch_baselines.py times PyTorch):
before every sample the L2 is flushed by reading a buffer of `flush_bytes` (a read, not a memset,
which would leave dirty lines for the timed work to write back), CUDA events bracket the forward
alone, a few warm-up calls come first, and sampling stops once `target_seconds` of samples and
`min_samples` are in (or `max_samples`, or a wall-clock cap). The median and quartiles are reported.
On the CPU it degrades to wall-clock time per forward (`"method": "cpu wall clock"`, no flush), so
the path runs in tests without a GPU.

`torch.compile` compiles on the first call, under `compile_limit_seconds` (an alarm interrupts
it); a compile that fails or passes its limit is that mode's `{"error": ...}`, never the request's.
`warm_compile` does that compile's CPU work ahead, on stand-in tensors and without running anything
on the GPU, so that a worker sharing its GPU (evaluator/worker/share.hpp) holds the GPU for
the rest only.
"""
import contextlib
import signal
import time

import torch

from .device_mode import DeviceMode

CUDA_METHOD = "cuda events, L2 flushed by reading"
CPU_METHOD = "cpu wall clock"
WARMUP_CALLS = 3
OUT_OF_MEMORY = (MemoryError,) + ((torch.cuda.OutOfMemoryError,) if hasattr(torch.cuda, "OutOfMemoryError") else ())


class TimeLimit(Exception):
    pass


class Settings:
    """The `time` request's sampling settings, validated."""

    def __init__(self, request):
        def number(name, default, kind=float, low=0):
            value = request.get(name, default)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < low:
                raise ValueError(f"\"{name}\" must be a number >= {low}, not {value!r}")
            return kind(value)

        self.flush_bytes = number("flush_bytes", 0, int)
        self.min_samples = number("min_samples", 20, int, 1)
        self.max_samples = max(self.min_samples, number("max_samples", 400, int, 1))
        self.target_seconds = number("target_seconds", 0.3)
        self.compile_limit_seconds = number("compile_limit_seconds", 300)
        self.cap_seconds = max(10.0, 20 * self.target_seconds)


@contextlib.contextmanager
def time_limit(seconds):
    """Raises TimeLimit in the main thread once `seconds` have passed inside the block."""
    def expire(signum, frame):
        raise TimeLimit()
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Sampler:
    """Samples of one callable on one device; keeps the flush buffer between requests."""

    def __init__(self):
        self.flush = None

    def _flush_buffer(self, nbytes):
        if nbytes <= 0:
            return None
        if self.flush is None or self.flush.numel() * 8 != (nbytes + 7) // 8 * 8:
            self.flush = None
            self.flush = torch.zeros((nbytes + 7) // 8, dtype=torch.int64, device="cuda")
        return self.flush

    def release(self):
        self.flush = None

    def sample(self, fn, device, settings):
        """STATS of `fn()` (median, quartiles, min in ns, the sample count and the method)."""
        cuda = torch.device(device).type == "cuda"
        for _ in range(WARMUP_CALLS):
            fn()
        if cuda:
            torch.cuda.synchronize()
            flush = self._flush_buffer(settings.flush_bytes)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples, spent, began = [], 0.0, time.monotonic()
        while len(samples) < settings.max_samples:
            if cuda:
                if flush is not None:
                    flush.sum()
                start.record()
                fn()
                end.record()
                end.synchronize()
                ns = start.elapsed_time(end) * 1e6
            else:
                t0 = time.perf_counter_ns()
                fn()
                ns = time.perf_counter_ns() - t0
            samples.append(ns)
            spent += ns / 1e9
            enough = len(samples) >= settings.min_samples and spent >= settings.target_seconds
            if enough or time.monotonic() - began > settings.cap_seconds:
                break
        samples.sort()
        n = len(samples)
        stats = {"median_ns": int(round(samples[n // 2] if n % 2 else (samples[n // 2 - 1] + samples[n // 2]) / 2)),
                 "q1_ns": int(round(samples[n // 4])), "q3_ns": int(round(samples[(3 * n) // 4])),
                 "min_ns": int(round(samples[0])), "samples": n, "method": CUDA_METHOD if cuda else CPU_METHOD}
        if n < settings.min_samples:
            stats["note"] = f"stopped at the {settings.cap_seconds:g} s cap after {n} samples"
        return stats


def _forward(model, inputs, device):
    """A callable running the forward; under DeviceMode only if the plain call fails (that mode costs
    host time per operation, which would be timed)."""
    def plain():
        return model(*inputs)

    def placed():
        with DeviceMode(device):
            return model(*inputs)

    try:
        with torch.no_grad():
            plain()
        return plain, ""
    except Exception:
        return placed, "timed under kforge's device mode: the forward makes tensors without naming a device"


def time_mode(sampler, mode, model, inputs, device, settings):
    """STATS of one mode ("eager" or "compile") or {"error": why}."""
    try:
        with torch.no_grad():
            if mode == "eager":
                fn, note = _forward(model, inputs, device)
                stats = sampler.sample(fn, device, settings)
            elif mode == "compile":
                stats, note = _time_compiled(sampler, model, inputs, device, settings)
            else:
                return {"error": f"unknown mode {mode!r} (the modes are eager and compile)"}
    except TimeLimit:
        return {"error": f"torch.compile passed its limit of {settings.compile_limit_seconds:g} s"}
    except OUT_OF_MEMORY as e:
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        return {"error": f"out of memory: {str(e).splitlines()[0]}"}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[-1]}"[:500]}
    if note:
        stats["note"] = note
    return stats


def _time_compiled(sampler, model, inputs, device, settings):
    if not hasattr(torch, "compile"):
        raise RuntimeError(f"torch.compile needs torch 2.0 or newer; this is torch {torch.__version__}")
    try:
        compiled = torch.compile(model, dynamic=False)
        began = time.perf_counter()
        with time_limit(settings.compile_limit_seconds):
            compiled(*inputs)
            if torch.device(device).type == "cuda":
                torch.cuda.synchronize()
        compile_seconds = time.perf_counter() - began
        stats = sampler.sample(lambda: compiled(*inputs), device, settings)
    except Exception:
        torch._dynamo.reset()
        raise
    stats["compile_seconds"] = round(compile_seconds, 3)
    return stats, ""


class _Warmed(Exception):
    """Raised by the warming backend's graph in place of running it: the call ends there."""


def _warming_backend(gm, example_inputs):
    """torch.compile's default backend (inductor's compile_fx, as `torch.compile(model)` calls it),
    except that the compiled graph is never run: calling it raises _Warmed."""
    from torch._inductor.compile_fx import compile_fx
    compile_fx(gm, example_inputs)

    def stop(*args, **kwargs):
        raise _Warmed()
    return stop


def _stand_in(value, device):
    """An uninitialised tensor on `device` shaped like `value` (allocation only, no kernel)."""
    if not isinstance(value, torch.Tensor):
        return value
    out = torch.empty_strided(tuple(value.shape), tuple(value.stride()), dtype=value.dtype, device=device)
    return out.requires_grad_(value.requires_grad)


def _without_gpu_benchmarks():
    """Inductor settings that would benchmark on the GPU while compiling (pad_mm's padding choice)
    switched off; nullcontext where this torch lacks them."""
    from torch._inductor import config
    patches = {name: False for name in ("shape_padding",) if hasattr(config, name)}
    return config.patch(patches) if patches and hasattr(config, "patch") else contextlib.nullcontext()


def warm_compile(program, input_seed, param_seed, device, limit_seconds):
    """Compiles `program` with torch.compile at its current sizes on stand-ins — the model made on the
    meta device and given uninitialised storage on `device`, inputs shaped like get_inputs()' —
    running nothing on the GPU: the compiled graph is never called, a program that would not compile
    into one graph is refused before it runs, and settings under which inductor benchmarks while
    compiling are off. What it leaves is torch's caches (the modules it imports, its
    compile workers, the generated and compiled Triton kernels), so that the real compile that
    `time_mode` makes afterwards, under the GPU's measuring lock, is short; the real compile is the
    same `torch.compile(model, dynamic=False)` as ever, so what is timed does not change. Returns
    {"warmed": bool, "seconds": float, "note": why not (when not)}; never raises for the program's
    sake."""
    began = time.perf_counter()

    def answer(warmed, note=""):
        out = {"warmed": warmed, "seconds": round(time.perf_counter() - began, 3)}
        if note:
            out["note"] = note
        return out

    if torch.device(device).type != "cuda":
        return answer(False, "only a GPU's compile is warmed ahead")
    if not hasattr(torch, "compile"):
        return answer(False, f"torch.compile needs torch 2.0 or newer; this is torch {torch.__version__}")
    try:
        model = program.build_model(param_seed, "meta").to_empty(device=device)
        inputs = [_stand_in(v, device) for v in program.make_inputs(input_seed, "meta")]
        # fullgraph: a program with graph breaks is refused while tracing, before any of it could run
        # eagerly on the stand-ins; its real compile is then simply not warmed.
        compiled = torch.compile(model, dynamic=False, fullgraph=True, backend=_warming_backend)
        with torch.no_grad(), _without_gpu_benchmarks(), time_limit(limit_seconds):
            try:
                compiled(*inputs)
            except _Warmed:
                pass
            else:
                return answer(False, "the program ran no compiled graph")
    except TimeLimit:
        return answer(False, f"passed its limit of {limit_seconds:g} s")
    except Exception as e:
        return answer(False, f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[-1]}"[:500])
    finally:
        # The warming backend's compiled frames must never answer a later torch.compile.
        if hasattr(torch, "_dynamo"):
            torch._dynamo.reset()
    return answer(True)
