#!/usr/bin/env python3
"""PyTorch eager and torch.compile on kforge's bundled tasks, at their bench shapes.

What a user would otherwise run: each task's operation written in PyTorch with the task's exact
semantics (dtypes, constants, layouts; TF32 and reduced-precision reductions off where the task
demands fp32 accumulation), on inputs of the task's shapes, timed the way kforge times kernels:
an L2 flush (a read of a buffer four times the L2, at least 256 MiB) before every sample, CUDA
events around the operation alone, the median of enough samples. Each result is also checked
against an fp64 computation of the task's formula under the task's own tolerance, so a PyTorch
call that does not do what the task asks is reported, not compared.

Values do not change the timing, except where the task's structure does: histogram inputs carry the
task's share of one hot byte, and SpMV matrices follow the task's row-length law (lognormal weights
within groups of 4096 rows) and column band, but are not kforge's exact matrices.

torch.compile runs in a child process per task, with a time cap per shape; a shape whose compile
fails or passes the cap is reported as such.

    python3 bench/torch_baselines.py --task softmax_f32        # a table for the bench shapes
    python3 bench/torch_baselines.py --all --json              # what kforge_bench tasks reads

Without a usable torch + CUDA it prints why (JSON: {"available": false, "reason": ...}) and exits 0.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TASKS_DIR = os.path.join(os.path.dirname(HERE), "tasks")
DEVICE = "cuda"  # --device cpu: a dry run of the cases on small --shapes, without a GPU


def torch_or_reason():
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        return None, f"python3 cannot import torch ({type(e).__name__}: {e})"
    if DEVICE == "cuda" and not torch.cuda.is_available():
        return None, f"torch {torch.__version__} sees no CUDA device"
    return torch, ""


# ---------------------------------------------------------------------------------------------
# Tasks: bench shapes from the spec, and per task the inputs, the operation and an fp64 check.


def load_task(tasks_dir, name):
    with open(os.path.join(tasks_dir, name + ".json")) as f:
        return json.load(f)


def bench_shapes(spec):
    """[(label, {symbol: value})] as kforge labels them (NAME=value joined by commas, or 'label')."""
    names = list(spec["symbols"].keys())
    shapes = []
    for entry in spec["shapes"]["bench"]:
        sizes = {n: int(entry[n]) for n in names}
        label = entry.get("label") or ",".join(f"{n}={sizes[n]}" for n in names)
        shapes.append((label, sizes))
    return shapes


def tolerance(spec, arg_name, scope):
    """(atol, rtol) of an output, evaluating the spec's expressions (numbers, sizes, sqrt)."""
    for arg in spec["args"]:
        if arg["name"] == arg_name:
            check = arg.get("check", {})
            if check.get("metric") == "exact":
                return 0.0, 0.0
            env = {"sqrt": math.sqrt, "max": max, "min": min, **scope}
            value = lambda v: float(eval(str(v), {"__builtins__": {}}, env)) if v is not None else 0.0
            return value(check.get("atol", 0)), value(check.get("rtol", 0))
    raise KeyError(arg_name)


class Case:
    """One task at one shape: inputs, the operation (eager), its fp64 reference, the output name."""

    def __init__(self, inputs, op, reference, output, note="", scope=None):
        self.inputs, self.op, self.reference, self.output, self.note = inputs, op, reference, output, note
        self.scope = scope or {}


def make_case(torch, spec, sizes):
    name = spec["name"]
    dev = DEVICE
    f32, bf16, f64 = torch.float32, torch.bfloat16, torch.float64
    constants = spec.get("constants", {})
    F = torch.nn.functional
    s = dict(sizes)

    if name == "softmax_f32":
        x = torch.randn(s["M"], s["N"], device=dev) * 4
        return Case({"x": x}, lambda x: torch.softmax(x, dim=-1),
                    lambda x: torch.softmax(x.double(), dim=-1), "y", scope=s)
    if name == "layernorm_f32":
        M, N = s["M"], s["N"]
        x = torch.randn(M, N, device=dev) + 128
        g = torch.rand(N, device=dev) + 0.5
        b = torch.rand(N, device=dev) * 2 - 1
        eps = float(constants["eps"])
        return Case({"x": x, "gamma": g, "beta": b}, lambda x, gamma, beta: F.layer_norm(x, (N,), gamma, beta, eps),
                    lambda x, gamma, beta: F.layer_norm(x.double(), (N,), gamma.double(), beta.double(), eps), "y",
                    scope=s)
    if name == "rmsnorm_bf16":
        M, N = s["M"], s["N"]
        x = (torch.randn(M, N, device=dev) * 2).to(bf16)
        w = (torch.rand(N, device=dev) + 0.5).to(bf16)
        eps = float(constants["eps"])

        def exact(x, w):
            xd = x.double()
            return xd * torch.rsqrt(xd.square().mean(-1, keepdim=True) + eps) * w.double()

        if hasattr(F, "rms_norm"):
            return Case({"x": x, "w": w}, lambda x, w: F.rms_norm(x, (N,), w, eps), exact, "y",
                        "torch.nn.functional.rms_norm", scope=s)
        return Case({"x": x, "w": w},
                    lambda x, w: (x.float() * torch.rsqrt(x.float().square().mean(-1, keepdim=True) + eps) * w.float()).to(bf16),
                    exact, "y", "fp32 expression (this torch has no rms_norm)", scope=s)
    if name == "transpose_f32":
        x = torch.rand(s["M"], s["N"], device=dev) * 2 - 1
        return Case({"in": x}, lambda x: x.t().contiguous(), lambda x: x.t().contiguous().double(), "out", scope=s)
    if name == "reduce_sum_f32":
        n = s["n"]
        x = torch.randn(n, device=dev) * 2 + 3
        return Case({"x": x}, lambda x: x.sum().reshape(1), lambda x: x.double().sum().reshape(1), "out",
                    scope={**s, "sum_abs_x": float(x.double().abs().sum())})
    if name == "axpy_f32":
        n = s["n"]
        a = float(constants["alpha"])
        x = torch.randn(n, device=dev)
        y = torch.randn(n, device=dev)
        return Case({"x": x, "y": y}, lambda x, y: torch.add(y, x, alpha=a),
                    lambda x, y: y.double() + a * x.double(), "z", "torch.add(y, x, alpha=a), out of place", scope=s)
    if name == "gelu_bf16":
        x = (torch.randn(s["n"], device=dev) * 3).to(bf16)
        return Case({"x": x}, lambda x: F.gelu(x), lambda x: F.gelu(x.double()), "y",
                    "torch.nn.functional.gelu (exact erf form), bf16 in and out", scope=s)
    if name == "sgemm_f32":
        A = torch.rand(s["M"], s["K"], device=dev) * 2 - 1
        B = torch.rand(s["K"], s["N"], device=dev) * 2 - 1
        return Case({"A": A, "B": B}, lambda A, B: A @ B, lambda A, B: A.double() @ B.double(), "C",
                    "TF32 off (torch.backends.cuda.matmul.allow_tf32 = False)", scope=s)
    if name == "hgemm_bf16":
        A = (torch.rand(s["M"], s["K"], device=dev) * 2 - 1).to(bf16)
        B = (torch.rand(s["N"], s["K"], device=dev) * 2 - 1).to(bf16)
        return Case({"A": A, "B": B}, lambda A, B: A @ B.t(), lambda A, B: A.double() @ B.double().t(), "C",
                    "A @ B.T, reduced-precision reductions off", scope=s)
    if name == "scan_u32":
        x = torch.empty(s["n"], device=dev, dtype=torch.int32).random_()  # u32 bit patterns (top bit clear)
        return Case({"in": x}, lambda x: torch.cumsum(x, 0, dtype=torch.int32),
                    lambda x: ((torch.cumsum(x.long() & 0xFFFFFFFF, 0) & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000, "out",
                    "torch.cumsum on int32 (wraps like uint32)", scope=s)
    if name == "histogram_u8":
        n, cold = s["n"], s["COLD"]
        data = torch.empty(n, device=dev, dtype=torch.uint8).random_()  # uniform over 0..255
        if cold < 100:
            hot = torch.randint(0, 100, (n,), device=dev, dtype=torch.uint8) >= cold
            data[hot] = 77
            del hot
        return Case({"data": data}, lambda d: torch.bincount(d, minlength=256),
                    lambda d: torch.bincount(d.int(), minlength=256).double(), "hist",
                    f"torch.bincount (int64 counts); {100 - cold}% of the bytes one hot value, like the task", scope=s)
    if name == "jacobi2d_f32":
        NX, NY, T = s["NX"], s["NY"], s["T"]
        u = torch.rand(NY, NX, device=dev)

        def jacobi(u_in, double=False):
            dtype = f64 if double else f32
            u_in = u_in.to(dtype)
            out, tmp = torch.empty_like(u_in), torch.empty_like(u_in)
            for buf in (out, tmp):  # the boundary never changes: copy it once into both buffers
                buf[0, :] = u_in[0, :]
                buf[-1, :] = u_in[-1, :]
                buf[:, 0] = u_in[:, 0]
                buf[:, -1] = u_in[:, -1]
            src = u_in
            for t in range(1, T + 1):
                dst = out if (T - t) % 2 == 0 else tmp
                dst[1:-1, 1:-1] = 0.25 * (src[:-2, 1:-1] + src[2:, 1:-1] + src[1:-1, :-2] + src[1:-1, 2:])
                src = dst
            return out

        return Case({"u_in": u}, lambda u_in: jacobi(u_in), lambda u_in: jacobi(u_in, True), "u_out",
                    f"{T} steps of slice arithmetic, ping-pong between two buffers", scope=s)
    if name == "spmv_csr_f32":
        R, C, NNZ, SKEW, BAND = s["R"], s["C"], s["NNZ"], s["SKEW"], s["BAND"]
        row_ptr, col_idx = csr_structure(torch, R, C, NNZ, (SKEW - 1) / 10, BAND)
        vals = torch.rand(col_idx.numel(), device=dev) * 2 - 1
        x = torch.rand(C, device=dev) * 2 - 1
        A = torch.sparse_csr_tensor(row_ptr, col_idx, vals, size=(R, C))
        Ad = torch.sparse_csr_tensor(row_ptr, col_idx, vals.double(), size=(R, C))
        ref = Ad @ x.double()
        return Case({"x": x}, lambda x: A @ x, lambda x: ref, "y",
                    f"torch.sparse_csr_tensor @ x; {col_idx.numel()} nonzeros with the task's row-length law and band "
                    "(not kforge's exact matrix)", scope={**s, "max_abs_ref": float(ref.abs().max())})
    raise KeyError(f"no PyTorch equivalent written for task {name}")


def csr_structure(torch, R, C, NNZ, sigma, band):
    """Row pointers and sorted column indices: groups of up to 4096 rows share their share of NNZ in
    proportion to exp(sigma * z); each row's columns lie in a window of `band` around r * C / R."""
    dev = DEVICE
    group = 4096
    groups = (R + group - 1) // group
    w = torch.exp(sigma * torch.randn(groups * group, device=dev, dtype=torch.float64))
    w[R:] = 0
    w = w.view(groups, group)
    sizes = torch.full((groups,), group, device=dev, dtype=torch.float64)
    sizes[-1] = R - (groups - 1) * group
    expected = (w / w.sum(1, keepdim=True) * (NNZ * sizes / R).unsqueeze(1)).flatten()[:R]
    counts = torch.floor(expected).long()
    short = NNZ - int(counts.sum())
    if short > 0:
        counts[torch.topk(expected - counts, short).indices] += 1
    width = min(band, C)
    counts.clamp_(max=width)
    row_ptr = torch.zeros(R + 1, device=dev, dtype=torch.int64)
    row_ptr[1:] = torch.cumsum(counts, 0)
    rows = torch.repeat_interleave(torch.arange(R, device=dev), counts)
    start = torch.clamp(rows * C // R - width // 2, 0, C - width)
    cols = start + torch.randint(0, width, (rows.numel(),), device=dev)
    order = torch.argsort(rows * C + cols)
    return row_ptr.int(), cols[order].int()


# ---------------------------------------------------------------------------------------------
# Timing: an L2 flush per sample, events around the operation alone, the median.


class Timer:
    def __init__(self, torch):
        self.torch = torch
        if DEVICE == "cuda":
            l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 60 << 20)
            # Flushed by reading, as kforge flushes: a memset would leave L2 full of dirty lines that
            # the timed operation would pay to write back.
            self.flush = torch.zeros(max(256 << 20, 4 * l2) // 8, dtype=torch.int64, device="cuda")

    def sample_ms(self, fn, args):
        if DEVICE != "cuda":
            began = time.perf_counter()
            fn(*args)
            return (time.perf_counter() - began) * 1e3
        self.flush_sink = self.flush.sum()
        self.start.record()
        fn(*args)
        self.end.record()
        self.end.synchronize()
        return self.start.elapsed_time(self.end)

    def median_ns(self, fn, args, min_samples=20, max_samples=400, target_s=0.3, cap_s=10.0):
        torch = self.torch
        for _ in range(3):  # warm-up: lazy loading, clock ramp, allocator
            fn(*args)
        synchronize(torch)
        if DEVICE == "cuda":
            self.start, self.end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples, spent, began = [], 0.0, time.monotonic()
        while len(samples) < max_samples:
            ms = self.sample_ms(fn, args)
            samples.append(ms)
            spent += ms / 1e3
            if len(samples) >= min_samples and (spent >= target_s or time.monotonic() - began > cap_s):
                break
        samples.sort()
        return samples[len(samples) // 2] * 1e6, len(samples)


def synchronize(torch):
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def check(torch, case, got, spec):
    """'ok' or what is wrong, under the task's tolerance for the output."""
    want = case.reference(*case.inputs.values())
    got = got.double().reshape(want.shape)
    atol, rtol = tolerance(spec, case.output, case.scope)
    err = (got - want).abs()
    bad = err > atol + rtol * want.abs()
    bad |= ~torch.isfinite(got)
    if int(bad.sum()) == 0:
        return "ok"
    return f"FAILS the task's check: {int(bad.sum())} of {bad.numel()} elements, max error {float(err.max()):.3g}"


def setup_precision(torch):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False


def run_task(torch, spec, shapes, mode):
    """Per shape: {'label', 'ns', 'samples', 'check', 'note'} or {'label', 'error'}; mode eager|compile."""
    setup_precision(torch)
    timer = Timer(torch)
    rows = []
    for label, sizes in shapes:
        row = {"label": label}
        try:
            torch.manual_seed(1)
            case = make_case(torch, spec, sizes)
            fn = torch.compile(case.op, dynamic=False) if mode == "compile" else case.op
            args = list(case.inputs.values())
            began = time.monotonic()
            out = fn(*args)  # compiles, in compile mode
            synchronize(torch)
            if mode == "compile":
                row["compile_s"] = round(time.monotonic() - began, 1)
            row["check"] = check(torch, case, out, spec)
            del out
            row["ns"], row["samples"] = timer.median_ns(fn, args)
            row["note"] = case.note
            del case, fn, args
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
        if DEVICE == "cuda":
            torch.cuda.empty_cache()
        rows.append(row)
        if mode == "compile":  # one line per shape, so a parent that kills a slow compile keeps the rest
            print(json.dumps(row), flush=True)
    return rows


def compile_in_child(args, name, shapes, cap_s):
    """torch.compile per shape in a child process, `cap_s` seconds per shape at most."""
    cmd = [sys.executable, os.path.abspath(__file__), "--compile-child", "--task", name, "--tasks-dir", args.tasks_dir,
           "--device", DEVICE, "--shapes", json.dumps([{"label": l, **s} for l, s in shapes])]
    rows, timed_out = [], False
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=cap_s * len(shapes) + 60)
        stdout, stderr = done.stdout, done.stderr
    except subprocess.TimeoutExpired as e:
        stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        stderr, timed_out = "", True
    for line in stdout.splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            pass
    seen = {r["label"] for r in rows}
    for label, _ in shapes:
        if label not in seen:
            why = f"compile timed out (cap {cap_s} s per shape)" if timed_out else \
                "compile failed: " + (stderr.strip().splitlines() or ["the child process died"])[-1][:200]
            rows.append({"label": label, "error": why})
    return rows


def measure(args, torch, name):
    spec = load_task(args.tasks_dir, name)
    if args.shapes:
        shapes = [(s["label"], {k: int(v) for k, v in s.items() if k != "label"}) for s in json.loads(args.shapes)]
    else:
        shapes = bench_shapes(spec)
    result = {"task": name, "shapes": []}
    eager = run_task(torch, spec, shapes, "eager")
    compiled = compile_in_child(args, name, shapes, args.compile_cap) if not args.no_compile else \
        [{"label": l, "error": "not run (--no-compile)"} for l, _ in shapes]
    by_label = {r["label"]: r for r in compiled}
    for row in eager:
        result["shapes"].append({"label": row["label"], "eager": row, "compile": by_label.get(row["label"], {})})
    return result


def cell(row):
    if "error" in row:
        return row["error"]
    text = f"{row['ns'] / 1e3:.2f} us"
    if row.get("check", "ok") != "ok":
        text += " (" + row["check"] + ")"
    return text


def print_table(results):
    print("| task | shape | torch eager | torch.compile | notes |")
    print("|---|---|---:|---:|---|")
    for r in results:
        for s in r["shapes"]:
            note = s["eager"].get("note", "")
            if "compile_s" in s["compile"]:
                note = (note + "; " if note else "") + f"compile {s['compile']['compile_s']} s"
            print(f"| {r['task']} | {s['label']} | {cell(s['eager'])} | {cell(s['compile'])} | {note} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", action="append", default=[], help="a bundled task (repeatable)")
    parser.add_argument("--all", action="store_true", help="every task in --tasks-dir")
    parser.add_argument("--tasks-dir", default=DEFAULT_TASKS_DIR)
    parser.add_argument("--shapes", help="JSON list of {label, SYMBOL: value}; default: the task's bench shapes")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--compile-cap", type=float, default=180, help="seconds per shape for torch.compile")
    parser.add_argument("--compile-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    global DEVICE
    DEVICE = args.device

    torch, reason = torch_or_reason()
    if torch is None:
        print(json.dumps({"available": False, "reason": reason}) if args.json or args.compile_child
              else f"PyTorch baselines skipped: {reason}")
        return 0
    if args.compile_child:
        spec = load_task(args.tasks_dir, args.task[0])
        shapes = [(s["label"], {k: int(v) for k, v in s.items() if k != "label"}) for s in json.loads(args.shapes)]
        run_task(torch, spec, shapes, "compile")
        return 0
    names = args.task
    if args.all:
        names = sorted(f[:-5] for f in os.listdir(args.tasks_dir) if f.endswith(".json"))
    if not names:
        parser.error("name a --task or pass --all")
    results = []
    for name in names:
        try:
            results.append(measure(args, torch, name))
        except Exception as e:
            results.append({"task": name, "error": f"{type(e).__name__}: {e}"[:300], "shapes": []})
        print(f"torch baselines: {name} done", file=sys.stderr, flush=True)
    device = torch.cuda.get_device_properties(0).name if DEVICE == "cuda" else "cpu (dry run)"
    doc = {"available": True, "torch": torch.__version__, "device": device, "tasks": results}
    if args.json:
        print(json.dumps(doc))
    else:
        print(f"torch {torch.__version__} on {device}\n")
        print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
