#!/usr/bin/env python3
"""Runs every recorded reply of the torch and level-2 fixtures on the CPU and checks what it gets.

For each problem in tests/fixtures/torch/replies/expected.json and tests/fixtures/level2/replies/
expected.json: imports the program with `kforge task import` (once; the specs are kept in --specs),
then runs the problem's replies under the emulator (tasks/tools/emulate, built as
tasks/tools/README.md says) against the PyTorch program itself (inputs, parameters and fp64 expected
outputs from the reference process on the CPU): the test shapes, the problem's `emulate_shapes`
(shapes that take the kernels' vector paths) and the held-out shape, every param point. The level-2
replies keep their GEMM or convolution in a library step, which the emulator computes on the CPU.
Each reply's outcome, in the GPU's words (correct, incorrect, runtime_error, compile_error,
plan_error, ...), must equal the reply's `cpu` entry. A kernel that crashes or hangs the emulator is
run again on its own so the others still get their outcome.

A level-2 problem from KernelBench (its `kernelbench` entry) is read from --kernelbench (default
.kb/level2, as scripts/gpu/checks/level2.sh; fetched, never committed); one that is not there is listed as
not fetched and left out of the count.

usage: scripts/emulate-torch-replies.py [--emulate /tmp/emulate] [--kforge build/dev/src/cli/kforge]
                                        [--specs /tmp/kforge-torch-specs] [--kernelbench .kb/level2]
                                        [--problems a,b] [--points N]
Exit status 0 when every outcome that ran is as expected. Prints one table at the end. On two cores
the torch replies take about 15 minutes and the level-2 ones about an hour, most of it the held-out
shapes (their GEMMs and convolutions, and the reference's fp64 run).
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

root = pathlib.Path(__file__).resolve().parent.parent
fixtures = root / "tests/fixtures"
# The folders of recorded replies, each with the folder of its own programs.
reply_sets = [(fixtures / "torch/replies", fixtures / "torch"), (fixtures / "level2/replies", fixtures / "level2")]


def program_path(entry, problem, programs, kernelbench):
    """The problem's PyTorch program: ours beside the replies, or KernelBench's file."""
    if "kernelbench" in entry:
        return kernelbench / pathlib.Path(entry["kernelbench"]).name
    return programs / f"{problem}.py"


def import_spec(kforge, problem, program, specs):
    spec = specs / problem / f"{problem}.json"
    if not spec.is_file():
        print(f"[{problem}] importing", flush=True)
        subprocess.run([str(kforge), "task", "import", str(program), "-o", str(spec)], check=True,
                       stdout=subprocess.DEVNULL)
    return spec


def emulate(emulator, spec, files, shapes, points, timeout):
    """Runs the emulator on `files`; returns {file name: (verdict, message)} or None if it died."""
    with tempfile.TemporaryDirectory() as tmp:
        summary = pathlib.Path(tmp) / "summary.json"
        command = [str(emulator), str(spec), *map(str, files), "--shapes", "all", "--json", str(summary)]
        for shape in shapes:
            command += ["--shape", shape]
        if points:
            command += ["--points", str(points)]
        try:
            run = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {pathlib.Path(f).name: ("timeout", f"the emulator did not finish within {timeout} s") for f in files}
        if run.returncode not in (0, 1) or not summary.is_file():
            if len(files) == 1:
                why = f"the emulator ended with status {run.returncode}: " + (run.stderr.strip().splitlines() or [""])[-1]
                return {pathlib.Path(files[0]).name: ("crashed", why)}
            return None
        return {pathlib.Path(e["file"]).name: (e["verdict"], e["message"]) for e in json.loads(summary.read_text())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--emulate", default="/tmp/emulate")
    parser.add_argument("--kforge", default=str(root / "build/dev/src/cli/kforge"))
    parser.add_argument("--specs", default=os.path.join(tempfile.gettempdir(), "kforge-torch-specs"))
    parser.add_argument("--kernelbench", default=str(root / ".kb/level2"),
                        help="folder of KernelBench's level-2 programs (default .kb/level2)")
    parser.add_argument("--problems", default="")
    parser.add_argument("--points", type=int, default=0, help="param points per kernel (default: all)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds one emulator run may take")
    args = parser.parse_args()
    if not pathlib.Path(args.emulate).is_file():
        sys.exit(f"no emulator at {args.emulate}: build it as tasks/tools/README.md says")
    problems = {}  # problem: (its replies folder, its program, its expected.json entry)
    for replies_dir, programs in reply_sets:
        for problem, entry in json.loads((replies_dir / "expected.json").read_text())["problems"].items():
            problems[problem] = (replies_dir, program_path(entry, problem, programs, pathlib.Path(args.kernelbench)),
                                 entry)
    wanted = [p for p in args.problems.split(",") if p] or list(problems)
    unknown = [p for p in wanted if p not in problems]
    if unknown:
        sys.exit(f"no such problem: {', '.join(unknown)}")
    specs = pathlib.Path(args.specs)
    rows = []
    not_fetched = []
    for problem in wanted:
        replies_dir, program, entry = problems[problem]
        if not program.is_file():
            print(f"[{problem}] {program} is not there: not fetched, left out", flush=True)
            not_fetched.append(problem)
            continue
        spec = import_spec(args.kforge, problem, program, specs)
        files = [replies_dir / problem / r["file"] for r in entry["replies"] if r["file"]]
        start = time.time()
        print(f"[{problem}] emulating {len(files)} kernels", flush=True)
        shapes = entry.get("emulate_shapes", [])
        outcomes = emulate(args.emulate, spec, files, shapes, args.points, args.timeout)
        if outcomes is None:  # one of them took the emulator down: each on its own
            outcomes = {}
            for f in files:
                outcomes.update(emulate(args.emulate, spec, [f], shapes, args.points, args.timeout))
        seconds = time.time() - start
        for reply in entry["replies"]:
            name = reply["file"] or "(no code)"
            got, message = outcomes.get(name, ("no_code", "")) if reply["file"] else ("no_code", "")
            rows.append((problem, name, reply["cpu"], got, message, seconds))
    failures = [r for r in rows if r[2] != r[3]]
    print()
    wp = max([18] + [len(r[0]) for r in rows])
    wr = max([26] + [len(r[1]) for r in rows])
    print(f"{'problem':<{wp}} {'reply':<{wr}} {'expected':<14} {'emulated':<14} ok")
    for problem, name, want, got, message, _ in rows:
        print(f"{problem:<{wp}} {name:<{wr}} {want:<14} {got:<14} {'yes' if want == got else 'NO'}")
    for problem, name, want, got, message, _ in failures:
        print(f"\n{problem}/{name}: expected {want}, emulated {got}: {message}")
    print(f"\n{len(rows) - len(failures)} of {len(rows)} replies as expected on the CPU")
    if not_fetched:
        print(f"not fetched (KernelBench programs not in {args.kernelbench}), left out: {', '.join(not_fetched)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
