#!/usr/bin/env python3
"""GPU check of kforge_torch's reference process: IPC locations, CUDA timing, the cost of a bench shape.

Plays the GPU worker's part in Python: device memory is allocated here with the driver API (ctypes,
cuMemAlloc), exported with cuIpcGetMemHandle, and the reference process is started on the same GPU
with `ipc` locations on it (fds 3/4, as the worker starts it).

Part 1, per fixture problem at its second test shape: every input, parameter and output is written
into two allocations laid out like the worker's (several tensors per allocation, at offsets, with
canary bytes between them), then read back and checked: the inputs and parameters are exactly what
the problem makes on this GPU under the same seeds, the canaries are untouched, the expected outputs
agree to one ulp with the fixture's independent fp64 formula, the program's own outputs pass the
imported tolerance, bad locations (a wrong size, a range past the allocation, a garbage handle) are
refused while the process lives on, and `time` answers with CUDA-event statistics.

Part 2, per fixture at its bench shape (the file's own sizes): the wall time of a `prepare expected`
request into fresh allocations, once cold (building the model) and once warm (a new input seed, the
model kept), against plain PyTorch in this process making the inputs and running the forward (fp32)
and making the inputs and running the forward in fp64 (what the expected outputs need); and the
eager and torch.compile timings of the `time` request.

    python3 scripts/gpu/checks/torch_ipc.py                      # both parts, a table last
    python3 scripts/gpu/checks/torch_ipc.py --only rmsnorm_bf16.py --no-compile

Exit status 0 when every part-1 check passed; the table's ratio columns are the issue's cost target
(warm prepare at most 2x PyTorch's own).
"""
import argparse
import ctypes
import math
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))  # scripts/gpu/checks/ -> the repository
sys.path.insert(0, os.path.join(ROOT, "python"))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "torch")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from kforge_torch.checks import ITEMSIZE  # noqa: E402
from kforge_torch.cuda_driver import CUdeviceptr, Driver, IpcMemHandle  # noqa: E402
from kforge_torch.device_mode import DeviceMode  # noqa: E402
from kforge_torch.facts import import_problem  # noqa: E402
from kforge_torch.layout import inputs_to_fp64, model_to_fp64  # noqa: E402
from kforge_torch.problem import ProblemFile  # noqa: E402
from kforge_torch.reference_client import ReferenceClient  # noqa: E402
from kforge_torch.selfcheck import (NUMPY_DTYPES, Report, check_equal_to_formula, check_tolerance,  # noqa: E402
                                    evaluate, load_formulas)

CANARY = 0xA5
GAP = 256  # bytes of canary before, between and after the tensors of an allocation
EXTRA_CALLS = {
    "cuMemAlloc_v2": [ctypes.POINTER(CUdeviceptr), ctypes.c_size_t],
    "cuMemFree_v2": [CUdeviceptr],
    "cuIpcGetMemHandle": [ctypes.POINTER(IpcMemHandle), CUdeviceptr],
    "cuMemcpyDtoH_v2": [ctypes.c_void_p, CUdeviceptr, ctypes.c_size_t],
    "cuMemsetD8_v2": [CUdeviceptr, ctypes.c_ubyte, ctypes.c_size_t],
}


class Allocation:
    """cuMemAlloc'd device memory, exported for IPC, as the GPU worker allocates it."""

    def __init__(self, driver, size):
        self.driver, self.size = driver, size
        ptr = CUdeviceptr()
        driver.call("cuMemAlloc_v2", ctypes.byref(ptr), size)
        self.ptr = ptr.value
        handle = IpcMemHandle()
        driver.call("cuIpcGetMemHandle", ctypes.byref(handle), CUdeviceptr(self.ptr))
        self.handle = ctypes.string_at(ctypes.addressof(handle), ctypes.sizeof(handle)).hex()  # NULs included
        driver.call("cuMemsetD8_v2", CUdeviceptr(self.ptr), CANARY, size)

    def read(self, offset, nbytes):
        out = np.empty(nbytes, dtype=np.uint8)
        self.driver.call("cuMemcpyDtoH_v2", out.ctypes.data_as(ctypes.c_void_p), CUdeviceptr(self.ptr + offset),
                         nbytes)
        return out

    def free(self):
        self.driver.call("cuMemFree_v2", CUdeviceptr(self.ptr))


class Layout:
    """Tensors packed into allocations: {name: (allocation, offset, bytes, dtype, dims)}."""

    def __init__(self, driver, facts, sizes, groups):
        self.places, self.allocations = {}, []
        args = {a["name"]: a for a in facts["args"] if a["kind"] == "tensor"}
        for names in groups:
            offset, spans = GAP, []
            for name in names:
                dims = [evaluate(d, sizes) for d in args[name]["dims"]]
                nbytes = ITEMSIZE[args[name]["dtype"]] * math.prod(dims)
                spans.append((name, offset, nbytes, args[name]["dtype"], dims))
                offset += (nbytes + GAP + 255) // 256 * 256
            allocation = Allocation(driver, offset)
            self.allocations.append(allocation)
            for name, start, nbytes, dtype, dims in spans:
                self.places[name] = (allocation, start, nbytes, dtype, dims)

    def location(self, name, **changes):
        allocation, offset, nbytes, _, _ = self.places[name]
        return dict({"ipc": allocation.handle, "offset": offset, "bytes": nbytes}, **changes)

    def read(self, name):
        allocation, offset, nbytes, dtype, dims = self.places[name]
        data = torch.from_numpy(allocation.read(offset, nbytes).view(NUMPY_DTYPES[dtype]).copy())
        return (data.view(torch.bfloat16) if dtype == "bf16" else data).reshape(dims)

    def canaries_intact(self):
        for allocation in self.allocations:
            raw = allocation.read(0, allocation.size)
            mask = np.ones(allocation.size, dtype=bool)
            for a, offset, nbytes, _, _ in self.places.values():
                if a is allocation:
                    mask[offset:offset + nbytes] = False
            if not (raw[mask] == CANARY).all():
                return False
        return True

    def free(self):
        for allocation in self.allocations:
            allocation.free()


def import_facts(name):
    return import_problem(os.path.join(FIXTURES, name))


def part1(report, driver, name, facts, formula):
    p = f"{name}:"
    sizes = facts["shapes"]["tests"][1]
    args = facts["args"]
    given = [a["name"] for a in args if a["kind"] == "tensor" and a["role"] != "output"]
    outputs = [a["name"] for a in args if a["role"] == "output"]
    layout = Layout(driver, facts, sizes, [given, outputs])
    try:
        with ReferenceClient() as client:
            reply = client.ask({"op": "setup", "problem": facts["problem"], "symbols": facts["symbols"],
                                "args": args, "device": "cuda"})
            if not report.check(reply.get("ok"), f"{p} setup {reply}"):
                return
            request = {"op": "prepare", "sizes": sizes, "input_seed": 11, "param_seed": 12, "what": "expected",
                       "buffers": {n: layout.location(n) for n in given + outputs}}
            reply = client.ask(request)
            report.check(reply.get("ok") and reply["precision"] == "fp64", f"{p} prepare expected over ipc {reply}")
            report.check(layout.canaries_intact(), f"{p} every canary byte around the tensors is untouched")
            written = {n: layout.read(n) for n in given}
            program = ProblemFile(facts["problem"]).load(sizes)
            inputs = program.make_inputs(11, "cuda")
            state = program.build_model(12, "cuda").state_dict()
            for a in args:
                if a["name"] in written:
                    mine = inputs[a["index"]] if a["role"] == "input" else state[a["key"]]
                    report.check(torch.equal(written[a["name"]], mine.cpu().reshape(written[a["name"]].shape)),
                                 f"{p} {a['name']} is what the problem makes on this GPU under the same seed")
            values = {n: t.double() if t.is_floating_point() else t for n, t in written.items()}
            for a in args:
                if a["kind"] == "scalar":
                    values[a["name"]] = float(evaluate(a["value"], sizes))
            independent = formula(values, facts["module_vars"])
            expected = {n: layout.read(n) for n in outputs}
            for a in args:
                if a["role"] == "output":
                    check_equal_to_formula(report, p, a, expected[a["name"]], independent[a["name"]])
            reply = client.ask(dict(request, what="program", buffers={n: layout.location(n) for n in outputs}))
            report.check(reply.get("ok") and reply["precision"] == "own", f"{p} prepare program {reply}")
            for a in args:
                if a["role"] == "output":
                    check_tolerance(report, p, a, facts["checks"][a["name"]], layout.read(a["name"]),
                                    expected[a["name"]])
            first = given[0]
            allocation = layout.places[first][0]
            refusals = [("a wrong size", layout.location(first, bytes=layout.places[first][2] + 4), "bytes"),
                        ("a range past the allocation", layout.location(first, offset=allocation.size + (1 << 30)),
                         "allocation has"),
                        ("a garbage handle", layout.location(first, ipc="ab" * 64), "cuIpcOpenMemHandle")]
            for what, location, phrase in refusals:
                reply = client.ask(dict(request, what="inputs", buffers={first: location}))
                report.check(not reply.get("ok") and phrase in reply.get("error", ""),
                             f"{p} refuses {what}: {reply.get('error')}")
            reply = client.ask(dict(request, what="inputs", buffers={first: layout.location(first)}))
            report.check(reply.get("ok"), f"{p} the process works on after the refusals")
            reply = client.ask({"op": "time", "sizes": sizes, "input_seed": 1, "param_seed": 2, "modes": ["eager"],
                                "flush_bytes": 256 << 20, "min_samples": 10, "target_seconds": 0.05})
            eager = reply.get("eager", {})
            report.check(eager.get("method") == "cuda events, L2 flushed by reading" and eager.get("samples", 0) >= 10,
                         f"{p} time eager {eager}")
        report.check(client.process.returncode == 0, f"{p} the reference process exits 0")
    finally:
        layout.free()


def plain_seconds(program, model, seed, fp64):
    """PyTorch alone: make the inputs on the GPU and run the forward once (in fp64 when asked)."""
    torch.cuda.synchronize()
    began = time.perf_counter()
    inputs = program.make_inputs(seed, "cuda")
    with torch.no_grad(), DeviceMode("cuda"):
        if fp64:
            out = model(*inputs_to_fp64(inputs))
        else:
            out = model(*inputs)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - began
    del inputs, out
    torch.cuda.empty_cache()
    return seconds


def part2(driver, name, facts, compile_modes):
    sizes = facts["shapes"]["bench"][0]
    args = facts["args"]
    names = [a["name"] for a in args if a["kind"] == "tensor"]
    layout = Layout(driver, facts, sizes, [[n] for n in names])
    row = {"problem": name, "shape": ",".join(f"{k}={v}" for k, v in sizes.items())}
    try:
        with ReferenceClient() as client:
            client.ask({"op": "setup", "problem": facts["problem"], "symbols": facts["symbols"], "args": args,
                        "device": "cuda"})
            request = {"op": "prepare", "sizes": sizes, "input_seed": 21, "param_seed": 22, "what": "expected",
                       "buffers": {n: layout.location(n) for n in names}}
            for label, seed in (("cold", 21), ("warm", 23), ("warm2", 25)):
                began = time.perf_counter()
                reply = client.ask(dict(request, input_seed=seed))
                row[label] = time.perf_counter() - began
                if not reply.get("ok"):
                    row["error"] = reply.get("error")
                    return row
                row[label + "_parts"] = reply["seconds"]
            reply = client.ask({"op": "time", "sizes": sizes, "input_seed": 21, "param_seed": 22,
                                "modes": compile_modes, "flush_bytes": 256 << 20, "compile_limit_seconds": 180})
            row["eager"] = reply.get("eager", {})
            row["compile"] = reply.get("compile", {"error": "not run"})
    finally:
        layout.free()
    program = ProblemFile(facts["problem"]).load(sizes)
    model = program.build_model(22, "cuda")
    model64 = model_to_fp64(model)
    row["plain"] = statistics.median(plain_seconds(program, model, s, False) for s in (31, 32, 33))
    row["plain64"] = statistics.median(plain_seconds(program, model64, s, True) for s in (31, 32, 33))
    del model, model64
    torch.cuda.empty_cache()
    return row


def timing_cell(stats):
    if "median_ns" in stats:
        return f"{stats['median_ns'] / 1e3:.1f} us"
    return stats.get("error", "-")[:60]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="a fixture file name (repeatable)")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile in part 2")
    parser.add_argument("--skip-bench", action="store_true", help="part 1 only")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print(f"gpu-torch-ipc: torch {torch.__version__} sees no CUDA device")
        return 1
    torch.empty(1, device="cuda")  # torch's context first; the driver calls below use it
    driver = Driver(EXTRA_CALLS)
    driver.ensure_context()
    formulas = load_formulas(FIXTURES)
    names = [n for n in sorted(formulas) if not args.only or n in args.only]
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}", flush=True)
    report, facts = Report(), {}
    for name in names:
        facts[name] = import_facts(name)
        part1(report, driver, name, facts[name], formulas[name])
    rows = []
    if not args.skip_bench:
        modes = ["eager"] + ([] if args.no_compile else ["compile"])
        for name in names:
            rows.append(part2(driver, name, facts[name], modes))
            print(f"gpu-torch-ipc: {name} bench done", file=sys.stderr, flush=True)
    print(f"\npart 1: {report.passed} checks passed, {len(report.failed)} failed")
    for failure in report.failed:
        print("  FAIL " + failure)
    if rows:
        print("\n| problem | bench shape | prepare cold s | prepare warm s | torch inputs+fwd s | warm / that | "
              "torch inputs+fp64 fwd s | warm / that | eager | torch.compile |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            if "error" in r:
                print(f"| {r['problem']} | {r['shape']} | {r['error'][:80]} | | | | | | | |")
                continue
            warm = min(r["warm"], r["warm2"])
            print(f"| {r['problem']} | {r['shape']} | {r['cold']:.4f} | {warm:.4f} | {r['plain']:.4f} | "
                  f"{warm / r['plain']:.2f} | {r['plain64']:.4f} | {warm / r['plain64']:.2f} | "
                  f"{timing_cell(r['eager'])} | {timing_cell(r['compile'])} |")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
