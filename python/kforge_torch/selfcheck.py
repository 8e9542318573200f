"""`python3 -m kforge_torch.selfcheck FIXTURES_DIR`: the CPU check of the importer and the reference process.

FIXTURES_DIR holds problem files, `bad/` files, `expected.json` (what each import must yield) and
`formulas.py` (independent fp64 formulas of the problems). For every problem the real command line
imports it and its facts are checked: the symbols and every argument as expected, shapes that follow
the documented rules (bench the file's values, a tiny test, odd scaled tests under about 2^20
elements, a distinct held-out shape under about 2^24), a check per output, the bytes expression.
Then the reference process, started as a GPU worker starts it (fds 3/4), writes into `file`
locations: the same seed gives the same inputs and another seed other ones, the expected outputs
agree to the last bit of their dtype with the formula applied to the tensors it wrote, the
program's own outputs pass the recorded tolerance, and wrong locations are refused with a message.
Every bad file must fail its import with its documented error. Prints one line per check and a
count; exits 1 if any check failed.
"""
import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

from .checks import ITEMSIZE
from .reference_client import PACKAGE_ROOT, ReferenceClient

NUMPY_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8, "u8": np.uint8,
                "i16": np.int16, "i32": np.int32, "i64": np.int64, "bf16": np.int16}
ULP = {"f32": 2.0 ** -23, "f64": 2.0 ** -52, "bf16": 2.0 ** -7, "f16": 2.0 ** -10}


class Report:
    def __init__(self):
        self.passed, self.failed = 0, []

    def check(self, condition, what):
        if condition:
            self.passed += 1
        else:
            self.failed.append(what)
        print(("ok    " if condition else "FAIL  ") + what, flush=True)
        return condition


def evaluate(expr, sizes):
    """An expression of the facts (symbols, integers, + - * / and parentheses) at `sizes`, or a float
    literal."""
    try:
        return int(expr) if expr.lstrip("-").isdigit() else float(expr)
    except ValueError:
        pass
    allowed = set("0123456789+-*/() ._") | {c for s in sizes for c in s}
    if not set(expr) <= allowed:
        raise ValueError(f"unexpected characters in {expr!r}")
    return eval(expr.replace("/", "//"), {"__builtins__": {}}, dict(sizes))


def run_importer(path, python):
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
    began = time.perf_counter()
    done = subprocess.run([python, "-m", "kforge_torch.importer", path], capture_output=True, text=True, env=env,
                          timeout=600)
    try:
        return done.returncode, json.loads(done.stdout), time.perf_counter() - began
    except ValueError:
        return done.returncode, {"error": "no JSON on stdout; stderr: " + done.stderr[-500:]}, 0.0


def _odd_non_power(v):
    return v % 2 == 1 and v & (v - 1) != 0


def check_facts(report, name, facts, expected):
    p = name + ":"
    report.check(facts["symbols"] == expected["symbols"], f"{p} symbols {facts['symbols']}")
    got = [[a["name"], a["role"], a["dtype"], a["dims"] if a["kind"] == "tensor" else a["value"]]
           for a in facts["args"]]
    report.check(got == expected["args"], f"{p} args {got}" + ("" if got == expected["args"]
                                                               else f" (expected {expected['args']})"))
    report.check(facts["output_tuple"] == expected["output_tuple"], f"{p} output_tuple {facts['output_tuple']}")
    shapes, module_vars = facts["shapes"], facts["module_vars"]
    bench = {s: module_vars[s] for s in facts["symbols"]}
    report.check(shapes["bench"] == [bench], f"{p} bench is the file's values {bench}")
    tests, held_out = shapes["tests"], shapes["held_out"]
    every = [bench] + tests + held_out
    report.check(len(tests) == 3 and len(held_out) == 1 and all(every.count(z) == 1 for z in every),
                 f"{p} three tests and a held-out shape, all distinct")
    tensors = [a for a in facts["args"] if a["kind"] == "tensor"]

    def largest(z):
        return max(math.prod(evaluate(d, z) for d in a["dims"]) for a in tensors)

    report.check(all(min(evaluate(d, z) for a in tensors for d in a["dims"]) >= 1 for z in every),
                 f"{p} every dim is at least 1 at every shape")
    odd = all(_odd_non_power(v) or v == bench[s] for z in tests[1:] + held_out for s, v in z.items())
    report.check(odd, f"{p} scaled shapes have odd, non-power-of-two values (or the file's)")
    report.check(all(v <= w for s, v in tests[0].items() for w in [z[s] for z in tests[1:]]),
                 f"{p} the tiny test shape is the smallest: {tests[0]}")
    report.check(max(largest(z) for z in tests) <= 1.25 * 2 ** 20 and largest(held_out[0]) <= 1.25 * 2 ** 24,
                 f"{p} tests under about 2^20 elements, held-out under about 2^24")
    outputs = [a for a in facts["args"] if a["role"] == "output"]
    report.check(sorted(facts["checks"]) == sorted(a["name"] for a in outputs), f"{p} a check per output")
    for a in outputs:
        check = facts["checks"][a["name"]]
        if a["dtype"].startswith(("i", "u")):
            report.check(check == {"metric": "exact"}, f"{p} {a['name']} is checked exactly")
        else:
            k, tail = check["atol"].split(" * ", 1) if " * " in check["atol"] else (check["atol"], "")
            tail, _, floor = tail.partition(" + ")
            bound = 1.1 * float(k) * check.get("measured", {}).get("max_abs_ref", 0)  # the floor rounded up
            report.check(tail == "max_abs_ref" and float(k) <= 1e-2 and float(floor or 0) <= bound + 1e-12
                         and float(check["rtol"]) <= 1e-2,
                         f"{p} {a['name']} atol {check['atol']}, rtol {check['rtol']} (at most 1e-2)")
    total = sum(ITEMSIZE[a["dtype"]] * math.prod(evaluate(d, bench) for d in a["dims"]) for a in tensors)
    report.check(evaluate(facts["bytes"], bench) == total, f"{p} bytes {facts['bytes']} = {total} at bench")
    report.check(facts["flops"] == [] and any("flop" in n.lower() for n in facts["notes"])
                 or len(facts["flops"]) == len(every), f"{p} flops per shape, or none with a note")


def read_tensor(path, location, dtype, dims):
    data = np.fromfile(path, dtype=NUMPY_DTYPES[dtype], count=location["bytes"] // ITEMSIZE[dtype],
                       offset=location["offset"])
    tensor = torch.from_numpy(data.copy())
    if dtype == "bf16":
        tensor = tensor.view(torch.bfloat16)
    return tensor.reshape(dims)


class Buffers:
    """One file holding a buffer per tensor arg at `sizes`, laid out back to back."""

    def __init__(self, directory, facts, sizes):
        self.path = os.path.join(directory, "buffers.bin")
        self.locations, self.dims, offset = {}, {}, 0
        for a in facts["args"]:
            if a["kind"] == "tensor":
                self.dims[a["name"]] = [evaluate(d, sizes) for d in a["dims"]]
                nbytes = ITEMSIZE[a["dtype"]] * math.prod(self.dims[a["name"]])
                self.locations[a["name"]] = {"file": self.path, "offset": offset, "bytes": nbytes}
                offset += nbytes
        self.dtypes = {a["name"]: a["dtype"] for a in facts["args"]}
        with open(self.path, "wb") as f:
            f.truncate(offset)

    def read(self, name):
        return read_tensor(self.path, self.locations[name], self.dtypes[name], self.dims[name])

    def read_all(self, names):
        return {n: self.read(n) for n in names}


def _differs(a, b):
    return a.shape != b.shape or not torch.equal(a, b)


def check_reference(report, name, facts, formula, python, directory):
    p = name + ":"
    sizes = facts["shapes"]["tests"][2]
    buffers = Buffers(directory, facts, sizes)
    args = facts["args"]
    inputs = [a["name"] for a in args if a["role"] == "input" and a["kind"] == "tensor"]
    params = [a["name"] for a in args if a["role"] == "param"]
    outputs = [a["name"] for a in args if a["role"] == "output"]
    loc = buffers.locations

    def prepare(what, names, input_seed=101, param_seed=7, **overrides):
        request = {"op": "prepare", "sizes": sizes, "input_seed": input_seed, "param_seed": param_seed,
                   "what": what, "buffers": {n: loc[n] for n in names}}
        request.update(overrides)
        return client.ask(request)

    with ReferenceClient(python) as client:
        reply = client.ask({"op": "setup", "problem": facts["problem"], "symbols": facts["symbols"], "args": args,
                            "device": "cpu"})
        if not report.check(reply.get("ok"), f"{p} setup {reply}"):
            return
        reply = prepare("inputs", inputs + params)
        report.check(reply.get("ok"), f"{p} prepare inputs {reply}")
        first = buffers.read_all(inputs + params)
        prepare("inputs", inputs + params)
        again = buffers.read_all(inputs + params)
        report.check(not any(_differs(first[n], again[n]) for n in first), f"{p} the same seeds give the same values")
        prepare("inputs", inputs + params, input_seed=102, param_seed=8)
        other = buffers.read_all(inputs + params)
        report.check(all(_differs(first[n], other[n]) for n in first),
                     f"{p} other seeds give other values of {', '.join(first)}")

        reply = prepare("expected", inputs + params + outputs)
        report.check(reply.get("ok") and reply["precision"] == "fp64", f"{p} prepare expected {reply}")
        given = buffers.read_all(inputs + params)
        report.check(not any(_differs(first[n], given[n]) for n in given),
                     f"{p} expected writes the same inputs and parameters as inputs did")
        expected = buffers.read_all(outputs)
        values = {n: t.double() if t.is_floating_point() else t for n, t in given.items()}
        for a in args:
            if a["kind"] == "scalar":
                values[a["name"]] = float(evaluate(a["value"], sizes))
        independent = formula(values, facts["module_vars"])
        for a in args:
            if a["role"] == "output":
                check_equal_to_formula(report, p, a, expected[a["name"]], independent[a["name"]])

        reply = prepare("program", outputs)
        report.check(reply.get("ok") and reply["precision"] == "own", f"{p} prepare program {reply}")
        program = buffers.read_all(outputs)
        for a in args:
            if a["role"] == "output":
                check_tolerance(report, p, a, facts["checks"][a["name"]], program[a["name"]], expected[a["name"]])

        check_refusals(report, p, facts, prepare, loc, inputs, outputs, sizes, client)
        reply = client.ask({"op": "time", "sizes": sizes, "input_seed": 1, "param_seed": 2,
                            "modes": ["eager", "compile"], "min_samples": 5, "target_seconds": 0.02})
        eager = reply.get("eager", {})
        report.check(reply.get("ok") and eager.get("method") == "cpu wall clock" and eager.get("samples", 0) >= 5
                     and eager["q1_ns"] <= eager["median_ns"] <= eager["q3_ns"], f"{p} time eager {eager}")
        compiled = reply.get("compile", {})
        report.check("error" in compiled or compiled.get("samples", 0) >= 5, f"{p} time compile {compiled}")
    report.check(client.process.returncode == 0, f"{p} the reference process exits 0 when its pipe closes")


def check_equal_to_formula(report, p, arg, got, want):
    name, dtype = arg["name"], arg["dtype"]
    want = want.reshape(got.shape)
    if dtype.startswith(("i", "u")):
        report.check(torch.equal(got.long(), want.long()), f"{p} expected {name} equals the independent formula")
        return
    exact = want.to(got.dtype).double()
    err = (got.double() - exact).abs()
    bound = ULP[dtype] * exact.abs() + torch.finfo(got.dtype).tiny
    worst = int(torch.argmax(err - bound))
    report.check(bool((err <= bound).all()), f"{p} expected {name} equals the independent fp64 formula to one {dtype} "
                                             f"ulp (worst index {worst}: {float(got.reshape(-1)[worst])!r} vs "
                                             f"{float(want.reshape(-1)[worst])!r})")


def check_tolerance(report, p, arg, check, got, expected):
    name = arg["name"]
    if check.get("metric") == "exact":
        report.check(torch.equal(got, expected), f"{p} program {name} equals expected exactly")
        return
    ref = expected.double()
    k = float(check["atol"].split(" * ")[0])
    atol = k * float(ref.abs().max())
    err = (got.double() - ref).abs()
    ok = bool((err <= atol + float(check["rtol"]) * ref.abs()).all())
    report.check(ok, f"{p} program {name} passes atol {check['atol']} rtol {check['rtol']} "
                     f"(max error {float(err.max()):.3g})")


def check_refusals(report, p, facts, prepare, loc, inputs, outputs, sizes, client):
    first = inputs[0]
    cases = [
        ("a location one element short", {first: dict(loc[first], bytes=loc[first]["bytes"] - 1)}, "bytes"),
        ("a location of another dtype", {first: dict(loc[first], dtype="f64" if facts["args"][0]["dtype"] != "f64"
                                                     else "f32")}, "the location is"),
        ("a location past the file's end", {first: dict(loc[first], offset=1 << 40)}, "bytes, the location ends"),
        ("a buffer no arg has", {"no_such_arg": loc[first]}, "no arg of that name"),
        ("a location without ipc or file", {first: {"offset": 0, "bytes": 4}}, "exactly one of"),
        ("an output with what=inputs", {outputs[0]: loc[outputs[0]]}, "outputs are written by"),
    ]
    for what, buffers, phrase in cases:
        reply = prepare("inputs", [], buffers=buffers)
        report.check(not reply.get("ok") and phrase in reply.get("error", ""),
                     f"{p} refuses {what}: {reply.get('error')}")
    reply = client.ask({"op": "prepare", "sizes": {}, "input_seed": 1, "param_seed": 1, "what": "inputs",
                        "buffers": {}})
    report.check(not reply.get("ok") and "sizes must give exactly" in reply.get("error", ""),
                 f"{p} refuses sizes without the symbols: {reply.get('error')}")


def load_formulas(directory):
    spec = importlib.util.spec_from_file_location("kforge_fixture_formulas", os.path.join(directory, "formulas.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.FORMULAS


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m kforge_torch.selfcheck", description=__doc__.splitlines()[0])
    parser.add_argument("fixtures", help="a directory with problems, bad/, expected.json and formulas.py")
    parser.add_argument("--only", action="append", default=[], help="check only this file (repeatable)")
    parser.add_argument("--python", default=sys.executable, help="the python3 that runs importer and reference")
    args = parser.parse_args(argv)
    directory = os.path.abspath(args.fixtures)
    with open(os.path.join(directory, "expected.json")) as f:
        expected = json.load(f)
    formulas = load_formulas(directory)
    report = Report()
    chosen = lambda name: not args.only or name in args.only or os.path.basename(name) in args.only
    for name, want in expected["problems"].items():
        if not chosen(name):
            continue
        status, facts, seconds = run_importer(os.path.join(directory, name), args.python)
        if not report.check(status == 0 and "error" not in facts,
                            f"{name}: import in {seconds:.1f} s {facts.get('error', '')}"):
            continue
        check_facts(report, name, facts, want)
        with tempfile.TemporaryDirectory(prefix="kforge-selfcheck-") as scratch:
            check_reference(report, name, facts, formulas[name], args.python, scratch)
    for name, phrase in expected["bad"].items():
        if not chosen(name):
            continue
        status, facts, _ = run_importer(os.path.join(directory, name), args.python)
        report.check(status == 1 and phrase in facts.get("error", ""),
                     f"{name}: import fails with \"{phrase}\": {facts.get('error')}")
    print(f"selfcheck: {report.passed} checks passed, {len(report.failed)} failed")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
