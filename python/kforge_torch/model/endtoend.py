"""The model and the assembled model timed side by side, in one process, as users run them: eager,
as a CUDA graph, under torch.compile (default and max-autotune); then the assembled model eager, as
a CUDA graph and under torch.compile.

Method: every variant is built (compiled, captured) and warmed up first; then ROUNDS rounds each time
every variant in turn, `iterations` forwards each, one forward between two CUDA events with the host
waiting for the end (a forward's latency, launches included, as PIKE and do_bench time a call); a
variant's time is the median over rounds of its rounds' medians, so a drift of the GPU's clocks
during the run falls on every variant alike. The GPU work of one assembled forward (the union of
its kernels' intervals, from torch.profiler) says how much of its time is between kernels.
"""
import os
import statistics

import torch

WARMUP = 3
ROUNDS = 5

# The ways, in the order of the table.
BASELINES = ("eager", "eager_graph", "compile", "compile_max_autotune")
ASSEMBLED = ("assembled", "assembled_graph", "assembled_compile", "assembled_compile_max_autotune")
LABELS = {
    "eager": "torch eager",
    "eager_graph": "eager as a CUDA graph",
    "compile": "torch.compile",
    "compile_max_autotune": "torch.compile max-autotune",
    "assembled": "assembled",
    "assembled_graph": "assembled as a CUDA graph",
    "assembled_compile": "assembled under torch.compile",
    "assembled_compile_max_autotune": "assembled under torch.compile max-autotune",
}


def _once(fn):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1000.0


def time_side_by_side(variants, iterations=20, rounds=ROUNDS):
    """{key: seconds} for {key: callable}, interleaved in rounds (module docstring)."""
    for fn in variants.values():
        for _ in range(WARMUP):
            fn()
    torch.cuda.synchronize()
    per_round = {k: [] for k in variants}
    for _ in range(rounds):
        for key, fn in variants.items():
            per_round[key].append(statistics.median(_once(fn) for _ in range(iterations)))
    return {k: statistics.median(v) for k, v in per_round.items()}


def kernel_seconds(fn, calls=5):
    """Seconds per call during which the GPU ran a kernel, a copy or a fill of `fn` (the union of
    their intervals, from torch.profiler), or None where the profiler saw no device activity."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    spans = []
    for event in prof.events():
        if str(getattr(event, "device_type", "")).endswith("CUDA") and event.time_range.end > event.time_range.start:
            spans.append((event.time_range.start, event.time_range.end))
    if not spans:
        return None
    spans.sort()
    busy, (start, end) = 0.0, spans[0]
    for s, e in spans[1:]:
        if s > end:
            busy += end - start
            start, end = s, e
        else:
            end = max(end, e)
    busy += end - start
    return busy / calls / 1e6  # the profiler's times are microseconds


def build_variants(original, assembled, inputs, graphed, autotune, log):
    """{key: callable} of every variant that builds, and {key: error} of those that do not (a model
    torch.compile cannot take, a forward that cannot be captured as a graph)."""
    built, errors = {}, {}

    def attempt(key, make):
        try:
            fn = make()
            fn()  # compiles, captures: a failure shows here, not in the timing loop
            built[key] = fn
        except Exception as e:  # say it, time the others
            errors[key] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300] if str(e).strip() else ''}"
            log(f"{LABELS[key]}: {errors[key]}")

    def compiled(model, **kw):
        c = torch.compile(model, **kw)
        return lambda: c(*inputs)

    def as_graph(model):
        g = graphed(model, inputs)
        return lambda: g(*inputs)

    attempt("eager", lambda: (lambda: original(*inputs)))
    attempt("eager_graph", lambda: as_graph(original))
    attempt("compile", lambda: compiled(original))
    if autotune:
        attempt("compile_max_autotune", lambda: compiled(original, mode="max-autotune"))
    attempt("assembled", lambda: (lambda: assembled(*inputs)))
    attempt("assembled_graph", lambda: as_graph(assembled))
    attempt("assembled_compile", lambda: compiled(assembled))
    # KFORGE_MODEL_ASSEMBLED_AUTOTUNE=0 leaves out the longest build of all (a check on a short lease).
    if autotune and os.environ.get("KFORGE_MODEL_ASSEMBLED_AUTOTUNE", "1") != "0":
        attempt("assembled_compile_max_autotune", lambda: compiled(assembled, mode="max-autotune"))
    return built, errors


# A region stays an operator under torch.compile only when adding it makes the compiled model
# faster by more than this share (the spread of a compiled forward's median between builds).
UNDER_COMPILE_MARGIN = 0.01


def select_under_compile(assembled, inputs, candidates, iterations, log):
    """Which replaced problems help the assembled model under torch.compile: forward selection from
    none, in the order given (the best against torch.compile on its own region first), each added
    only when the compiled model, compiled again, is faster by more than UNDER_COMPILE_MARGIN.
    Returns (chosen, trials); leaves the assembly set to `chosen` and dynamo reset."""
    assembly = assembled.__dict__["_kforge_assembly"]

    def compiled_time(problems):
        assembly.set_under_compile(problems)
        torch._dynamo.reset()
        compiled = torch.compile(assembled)
        compiled(*inputs)
        return time_side_by_side({"x": lambda: compiled(*inputs)}, iterations, rounds=3)["x"]

    chosen, trials = [], []
    best = compiled_time([])
    trials.append({"problems": [], "seconds": best})
    for problem in candidates:
        seconds = compiled_time(chosen + [problem])
        kept = seconds < best * (1 - UNDER_COMPILE_MARGIN)
        trials.append({"problems": chosen + [problem], "seconds": seconds, "kept": kept})
        log(f"under torch.compile, {problem}: {seconds * 1e6:.1f} us with it, {best * 1e6:.1f} us without: "
            f"{'kept' if kept else 'left to Inductor'}")
        if kept:
            chosen.append(problem)
            best = seconds
    assembly.set_under_compile(chosen)
    torch._dynamo.reset()
    return chosen, trials
