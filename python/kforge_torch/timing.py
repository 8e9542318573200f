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
