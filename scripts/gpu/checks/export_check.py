#!/usr/bin/env python3
"""Checks kforge's shipped kernels on a GPU: `kforge export --launcher` and `--torch`.

For each run archive given, the best candidate is exported twice:
  (a) --launcher: a small C++ driver, built with nvcc against the exported FILE.h/FILE.cu, reads
      inputs written by this script, calls kforge_<task>() and writes the outputs back; they are
      compared with PyTorch's computation of the task (torch.softmax, layer_norm, a @ b.T).
  (b) --torch: the extension is built with the exported loader (cpp_extension.load, or nvcc
      directly without ninja), called on the same inputs and compared the same way, then timed
      with CUDA events after an L2 flush per sample (median of --samples) against the median
      kforge recorded for the shape (`kforge inspect --json`).
Each is run on one test shape and one bench shape. A table is printed last:
task, shape, check, max error, launcher, torch-ext time, kforge time, ratio.

usage: export_check.py --kforge PATH [--out DIR] [--samples N] ARCHIVE...
Exit status: 0 when every check passed, 1 when one failed, 2 when the tools are missing.
"""
import argparse
import importlib.util
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))  # scripts/gpu/checks/ -> the repository

try:
    import torch
    import torch.nn.functional as F
except Exception as error:  # the checks below need it; say so once, clearly
    torch = None
    TORCH_PROBLEM = f"PyTorch is not importable ({error})"
else:
    TORCH_PROBLEM = None if torch.cuda.is_available() else "PyTorch sees no CUDA device"

# The task semantics in PyTorch, in float64: inputs by name -> outputs by name.
REFERENCES = {
    "softmax_f32": lambda t, s: {"y": torch.softmax(t["x"].double(), dim=1)},
    "layernorm_f32": lambda t, s: {"y": F.layer_norm(t["x"].double(), (s["N"],), t["gamma"].double(),
                                                     t["beta"].double(), s["eps"])},
    "hgemm_bf16": lambda t, s: {"C": t["A"].double() @ t["B"].double().T},
    "rmsnorm_bf16": lambda t, s: {"y": t["x"].double() * torch.rsqrt(
        t["x"].double().pow(2).mean(dim=1, keepdim=True) + s["eps"]) * t["w"].double()},
    "axpy_f32": lambda t, s: {"z": s["a"] * t["x"].double() + t["y"].double()},
    "transpose_f32": lambda t, s: {"out": t["in"].double().T},
}

TORCH_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
                "i8": "int8", "u8": "uint8", "i16": "int16", "i32": "int32", "i64": "int64",
                "u16": "uint16", "u32": "uint32", "u64": "uint64"}
SIZES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4,
         "u32": 4, "i64": 8, "u64": 8}


def fail(message, status=2):
    print(f"export_check: {message}", file=sys.stderr)
    sys.exit(status)


def run(command, **kwargs):
    """Runs a command; returns its stdout, or raises with its stderr in the message."""
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout


def evaluate(expr, names, integer=False):
    """A kforge expression in Python: ceil_div/min/max/sqrt/abs/log2; `/` truncates when integer."""
    text = str(expr).replace("&&", " and ").replace("||", " or ")
    text = re.sub(r"!(?!=)", " not ", text)
    if integer:
        text = re.sub(r"(?<![/])/(?![/])", "//", text)  # the operands here are never negative
    scope = {"ceil_div": lambda a, b: -(-a // b), "cdiv": lambda a, b: -(-a // b), "min": min,
             "max": max, "sqrt": math.sqrt, "abs": abs, "log2": math.log2}
    scope.update(names)
    value = eval(text, {"__builtins__": {}}, scope)  # task specs are kforge's own files
    return int(value) if integer else float(value)


def shape_label(spec, shape):
    if "label" in shape:
        return shape["label"]
    free = sorted(name for name, sym in spec["symbols"].items() if "value" not in sym)
    return ",".join(f"{name}={shape[name]}" for name in free)


def sizes_of(spec, shape):
    sizes = {name: shape[name] for name, sym in spec["symbols"].items() if "value" not in sym}
    for name, sym in spec["symbols"].items():
        if "value" in sym:
            sizes[name] = evaluate(sym["value"], sizes, integer=True)
    names = dict(sizes)
    names.update(spec.get("constants", {}))
    for arg in spec["args"]:
        if "shape" not in arg:
            integer = not arg["dtype"].startswith(("f", "bf"))
            names[arg["name"]] = evaluate(arg["value"], names, integer=integer)
    return names


def make_inputs(spec, names, seed):
    """Inputs after the task's generators (uniform, normal, constant, randint, plants)."""
    generator = torch.Generator(device="cuda").manual_seed(seed)
    tensors = {}
    for arg in spec["args"]:
        if "shape" not in arg or arg.get("intent", "in") == "out":
            continue
        dims = [evaluate(d, names, integer=True) for d in arg["shape"]]
        dtype = getattr(torch, TORCH_DTYPES[arg["dtype"]])
        gen = arg.get("gen", {})
        dist = gen.get("dist", "uniform" if arg["dtype"].startswith(("f", "bf")) else "randint")
        if dist == "normal":
            data = torch.randn(dims, generator=generator, device="cuda", dtype=torch.float64)
            data = data * gen.get("std", 1) + gen.get("mean", 0)
        elif dist == "constant":
            data = torch.full(dims, float(gen.get("value", 0)), device="cuda", dtype=torch.float64)
        elif dist == "randint":
            data = torch.randint(int(gen.get("low", 0)), int(gen.get("high", 100)), dims,
                                 generator=generator, device="cuda", dtype=torch.int64)
        elif dist == "uniform":
            low, high = gen.get("low", -1), gen.get("high", 1)
            data = torch.rand(dims, generator=generator, device="cuda", dtype=torch.float64)
            data = data * (high - low) + low
        else:
            raise RuntimeError(f"{arg['name']}: generator '{dist}' is not implemented here")
        flat = data.reshape(-1)
        for plant in gen.get("plants", []):
            flat[evaluate(plant["at"], names, integer=True)] = plant["value"]
        tensors[arg["name"]] = data.to(dtype).contiguous()
    return tensors


def compare(spec, names, tensors, outputs, reference):
    """Max abs error over the checked outputs, and whether all are within the task's tolerance."""
    worst, ok = 0.0, True
    for arg in spec["args"]:
        if arg.get("intent", "in") == "in" or "shape" not in arg:
            continue
        got, want = outputs[arg["name"]].double(), reference[arg["name"]]
        check = arg.get("check", {})
        scope = dict(names)
        scope["max_abs_ref"] = want.abs().max().item()
        for name, tensor in tensors.items():
            scope["sum_abs_" + name] = tensor.double().abs().sum().item()
        if check.get("metric") == "exact":
            atol, rtol = 0.0, 0.0
        else:
            atol = evaluate(check.get("atol", 0), scope)
            rtol = evaluate(check.get("rtol", 0), scope)
        error = (got - want).abs()
        worst = max(worst, error.max().item())
        ok = ok and bool(torch.all(error <= atol + rtol * want.abs()).item()) and \
            not bool(torch.isnan(got).any().item())
    return worst, ok


def parse_params(header, function):
    match = re.search(r"^\w+ " + re.escape(function) + r"\(([^)]*)\);", header, re.M)
    if not match:
        raise RuntimeError(f"{function} is not declared in the header")
    params = [p.strip() for p in match.group(1).split(",") if p.strip() and p.strip() != "void"]
    return [re.split(r"[\s*]+", p)[-1] for p in params]


def build_driver(spec, header_path, cu_path, work):
    """A C++ program calling the launcher: argv = dir, tensor byte counts, then the scalars."""
    task = spec["name"]
    header = open(header_path).read()
    params = parse_params(header, f"kforge_{task}")[:-3]  # workspace, bytes, stream come last
    sizes = parse_params(header, f"kforge_{task}_workspace_bytes")
    tensors = [a for a in spec["args"] if "shape" in a]
    names = {a["name"]: a for a in spec["args"]}
    lines = []
    for i, arg in enumerate(tensors):
        name = arg["name"]
        load = "1" if arg.get("intent", "in") != "out" else "0"
        lines.append(f'    void* t_{i} = buffer(argv[1], "{name}", strtoull(argv[{2 + i}], 0, 10), {load});')
    scalar_at, values = 2 + len(tensors), []
    for name in params + sizes:
        if name not in [v[0] for v in values] and not (name in names and "shape" in names[name]):
            values.append((name, scalar_at + len(values)))
    index = dict(values)

    def value(name):
        if name in names and "shape" in names[name]:
            return f"AnyPtr{{t_{tensors.index(names[name])}}}"
        real = name in names and names[name]["dtype"].startswith(("f", "bf"))
        return f"AnyReal{{atof(argv[{index[name]}])}}" if real else f"AnyInt{{atoll(argv[{index[name]}])}}"

    outputs = [f'    save(argv[1], "{a["name"]}", t_{i}, strtoull(argv[{2 + i}], 0, 10));'
               for i, a in enumerate(tensors) if a.get("intent", "in") != "in"]
    source = DRIVER.format(header=os.path.basename(header_path), task=task,
                           loads="\n".join(lines), sizes=", ".join(value(n) for n in sizes),
                           args=", ".join(value(n) for n in params), saves="\n".join(outputs))
    driver = os.path.join(work, f"{task}_driver.cu")
    with open(driver, "w") as out:
        out.write(source)
    exe = os.path.join(work, f"{task}_driver")
    run(["nvcc", "-O2", "-std=c++17", "-gencode", f"arch=compute_{ARCH[3:]},code={ARCH}", "-I", os.path.dirname(header_path),
         driver, cu_path, "-o", exe])
    return exe, [name for name, _ in values]


DRIVER = r"""// Calls the exported launcher on inputs from files; writes the outputs back.
#include "{header}"
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

struct AnyPtr {{ void* p; template <class T> operator T*() const {{ return static_cast<T*>(p); }} }};
struct AnyInt {{ long long v; template <class T> operator T() const {{ return (T)v; }} }};
struct AnyReal {{ double v; template <class T> operator T() const {{ return T(v); }} }};

static void check(cudaError_t status, const char* what)
{{
    if (status != cudaSuccess) {{
        fprintf(stderr, "%s: %s (%s)\n", what, cudaGetErrorString(status), kforge_{task}_last_error());
        exit(1);
    }}
}}

static void* buffer(const char* dir, const char* name, size_t bytes, int load)
{{
    std::vector<char> host(bytes, (char)0xff);  // outputs start as NaN-like garbage
    if (load) {{
        FILE* in = fopen((std::string(dir) + "/" + name + ".bin").c_str(), "rb");
        if (!in || fread(host.data(), 1, bytes, in) != bytes) {{ fprintf(stderr, "cannot read %s\n", name); exit(1); }}
        fclose(in);
    }}
    void* device = nullptr;
    check(cudaMalloc(&device, bytes), "cudaMalloc");
    check(cudaMemcpy(device, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    return device;
}}

static void save(const char* dir, const char* name, void* device, size_t bytes)
{{
    std::vector<char> host(bytes);
    check(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy back");
    FILE* out = fopen((std::string(dir) + "/" + name + ".out.bin").c_str(), "wb");
    fwrite(host.data(), 1, bytes, out);
    fclose(out);
}}

int main(int argc, char** argv)
{{
    (void)argc;
{loads}
    size_t workspace_bytes = kforge_{task}_workspace_bytes({sizes});
    if (workspace_bytes == SIZE_MAX) {{ fprintf(stderr, "sizes refused: %s\n", kforge_{task}_last_error()); return 1; }}
    void* workspace = nullptr;
    if (workspace_bytes > 0)
        check(cudaMalloc(&workspace, workspace_bytes), "cudaMalloc workspace");
    check(kforge_{task}({args}, workspace, workspace_bytes, 0), "kforge_{task}");
    check(cudaDeviceSynchronize(), "the kernels");
{saves}
    return 0;
}}
"""


def run_driver(exe, spec, names, tensors, value_names, work):
    folder = os.path.join(work, "io")
    os.makedirs(folder, exist_ok=True)
    byte_counts = []
    for arg in (a for a in spec["args"] if "shape" in a):
        count = math.prod(evaluate(d, names, integer=True) for d in arg["shape"])
        byte_counts.append(str(count * SIZES[arg["dtype"]]))
        if arg["name"] in tensors:
            tensors[arg["name"]].cpu().contiguous().view(torch.uint8).numpy().tofile(
                os.path.join(folder, arg["name"] + ".bin"))
    values = [repr(names[n]) for n in value_names]
    run([exe, folder] + byte_counts + values)
    outputs = {}
    for arg in spec["args"]:
        if "shape" in arg and arg.get("intent", "in") != "in":
            dims = [evaluate(d, names, integer=True) for d in arg["shape"]]
            raw = open(os.path.join(folder, arg["name"] + ".out.bin"), "rb").read()
            dtype = getattr(torch, TORCH_DTYPES[arg["dtype"]])
            outputs[arg["name"]] = torch.frombuffer(bytearray(raw), dtype=dtype).reshape(dims).cuda()
    return outputs


def load_loader(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def op_arguments(op, names, tensors):
    """The operator's arguments, by schema name: tensors, then sizes and scalars."""
    return [tensors[a.name] if a.name in tensors else names[a.name]
            for a in op.default._schema.arguments]


def call_op(op, spec, names, tensors):
    """Calls the operator; returns the outputs by task name."""
    result = op(*op_arguments(op, names, tensors))
    outs = [a["name"] for a in spec["args"] if "shape" in a and a.get("intent", "in") == "out"]
    result = result if isinstance(result, (tuple, list)) else [result]
    outputs = dict(zip(outs, result))
    for arg in spec["args"]:
        if "shape" in arg and arg.get("intent", "in") == "inout":
            outputs[arg["name"]] = tensors[arg["name"]]
    return outputs


def time_op(op, spec, names, tensors, samples):
    """Median over `samples` of CUDA-event time, each sample after an L2 flush (a read)."""
    properties = torch.cuda.get_device_properties(0)
    l2 = getattr(properties, "L2_cache_size", 0) or 64 << 20
    flush = torch.ones(max(2 * l2, 256 << 20) // 4, dtype=torch.float32, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    arguments = op_arguments(op, names, tensors)
    for _ in range(3):
        op(*arguments)
    times = []
    for _ in range(samples):
        flush.sum()
        start.record()
        op(*arguments)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e6)
    return statistics.median(times)


def check_archive(kforge, archive, out, samples):
    info = json.loads(run([kforge, "inspect", archive, "--json"]))
    task = info["run"]["task"]
    if not info.get("best"):
        raise RuntimeError(f"{archive}: no correct candidate to export")
    best = str(info["best"]["id"])
    times = next((row.get("times_ns", {}) for row in info["top"] if str(row["id"]) == best), {})
    spec = json.load(open(os.path.join(ROOT, "tasks", task + ".json")))
    work = os.path.join(out, task)
    os.makedirs(work, exist_ok=True)
    launch_cu = os.path.join(work, f"{task}_launch.cu")
    torch_cu = os.path.join(work, f"{task}_torch.cu")
    run([kforge, "export", archive, "--candidate", best, "--launcher", "-o", launch_cu])
    run([kforge, "export", archive, "--candidate", best, "--torch", "-o", torch_cu])
    exe, value_names = build_driver(spec, launch_cu[:-3] + ".h", launch_cu, work)
    op = load_loader(torch_cu[:-3] + "_load.py").load_op()
    reference = REFERENCES.get(task)
    rows = []
    shapes = [("test", spec["shapes"]["tests"][-1]), ("bench", spec["shapes"]["bench"][0])]
    for index, (kind, shape) in enumerate(shapes):
        names = sizes_of(spec, shape)
        label = shape_label(spec, shape)
        tensors = make_inputs(spec, names, seed=1000 + index)
        want = reference(tensors, names) if reference else None
        launched = run_driver(exe, spec, names, {k: v.clone() for k, v in tensors.items()},
                              value_names, work)
        op_tensors = {k: v.clone() for k, v in tensors.items()}
        got = call_op(op, spec, names, op_tensors)
        row = {"task": task, "shape": f"{kind} {label}", "candidate": best}
        if want is None:
            row.update(check="no torch reference", error=float("nan"), launcher="ran")
        else:
            error, ok = compare(spec, names, tensors, got, want)
            launcher_error, launcher_ok = compare(spec, names, tensors, launched, want)
            row.update(check="ok" if ok else "FAIL", error=error,
                       launcher=f"{'ok' if launcher_ok else 'FAIL'} {launcher_error:.2e}")
        row["torch_ns"] = time_op(op, spec, names, tensors, samples)
        row["kforge_ns"] = times.get(label)
        rows.append(row)
    return rows


def main():
    global ARCH
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("archives", nargs="+", metavar="ARCHIVE")
    parser.add_argument("--kforge", default=os.path.join(ROOT, ".gpu", "kforge"))
    parser.add_argument("--out", default="/tmp/kforge-export-check")
    parser.add_argument("--samples", type=int, default=200)
    options = parser.parse_args()
    if TORCH_PROBLEM:
        fail(TORCH_PROBLEM + "; the checks compare with PyTorch and build a PyTorch extension")
    if not shutil.which("nvcc"):
        fail("nvcc is not on PATH; it builds the launcher's driver and the extension")
    if not os.access(options.kforge, os.X_OK):
        fail(f"{options.kforge} is not an executable kforge (build it, or scripts/pack-gpu.sh)")
    major, minor = torch.cuda.get_device_capability()
    ARCH = f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")
    rows, problems = [], []
    for archive in options.archives:
        try:
            rows += check_archive(options.kforge, archive, options.out, options.samples)
        except Exception as error:  # one task's failure must not hide the others' results
            problems.append(f"{archive}: {error}")
    print(f"{'task':<15} {'shape':<28} {'check':<6} {'max error':>10} {'launcher':>14} "
          f"{'torch-ext':>11} {'kforge':>11} {'ratio':>6}")
    for r in rows:
        kforge_time = f"{r['kforge_ns'] / 1e3:.2f} us" if r["kforge_ns"] else "-"
        ratio = f"{r['torch_ns'] / r['kforge_ns']:.3f}" if r["kforge_ns"] else "-"
        print(f"{r['task']:<15} {r['shape']:<28} {r['check']:<6} {r['error']:>10.2e} "
              f"{r['launcher']:>14} {r['torch_ns'] / 1e3:>8.2f} us {kforge_time:>11} {ratio:>6}")
    for problem in problems:
        print(f"FAILED {problem}")
    bad = problems or [r for r in rows if r["check"] == "FAIL" or "FAIL" in r["launcher"]]
    return 1 if bad else 0


ARCH = "sm_90a"

if __name__ == "__main__":
    sys.exit(main())
