#!/usr/bin/env python3
"""Runs every recorded reply kernel of the torch fixtures on the CPU and checks what it gets.

For each problem in tests/fixtures/torch/replies/expected.json: imports the fixture with
`kforge task import` (once; the specs are kept in --specs), then runs the problem's kernels under the
emulator (tasks/tools/emulate, built as tasks/tools/README.md says) against the PyTorch program itself
(inputs, parameters and fp64 expected outputs from the reference process on the CPU): the test
shapes, the problem's `emulate_shapes` (shapes that take the kernels' vector paths) and the held-out
shape, every param point. Each kernel's outcome, in the GPU's words (correct, incorrect,
runtime_error, compile_error, ...), must equal the reply's `cpu` entry. A kernel that crashes or
hangs the emulator is run again on its own so the others still get their outcome.

usage: scripts/emulate-torch-replies.py [--emulate /tmp/emulate] [--kforge build/dev/src/cli/kforge]
                                        [--specs /tmp/kforge-torch-specs] [--problems a,b] [--points N]
Exit status 0 when every outcome is as expected. Prints one table at the end.
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
replies_dir = root / "tests/fixtures/torch/replies"


def import_spec(kforge, problem, specs):
    spec = specs / problem / f"{problem}.json"
    if not spec.is_file():
        print(f"[{problem}] importing", flush=True)
        subprocess.run([str(kforge), "task", "import", str(root / "tests/fixtures/torch" / f"{problem}.py"),
                        "-o", str(spec)], check=True, stdout=subprocess.DEVNULL)
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
    parser.add_argument("--problems", default="")
    parser.add_argument("--points", type=int, default=0, help="param points per kernel (default: all)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds one emulator run may take")
    args = parser.parse_args()
    if not pathlib.Path(args.emulate).is_file():
        sys.exit(f"no emulator at {args.emulate}: build it as tasks/tools/README.md says")
    expected = json.loads((replies_dir / "expected.json").read_text())["problems"]
    wanted = [p for p in args.problems.split(",") if p] or list(expected)
    specs = pathlib.Path(args.specs)
    rows = []
    for problem in wanted:
        entry = expected[problem]
        spec = import_spec(args.kforge, problem, specs)
        files = [replies_dir / problem / r["file"] for r in entry["replies"] if r["file"]]
        start = time.time()
        print(f"[{problem}] emulating {len(files)} kernels", flush=True)
        outcomes = emulate(args.emulate, spec, files, entry["emulate_shapes"], args.points, args.timeout)
        if outcomes is None:  # one of them took the emulator down: each on its own
            outcomes = {}
            for f in files:
                outcomes.update(emulate(args.emulate, spec, [f], entry["emulate_shapes"], args.points, args.timeout))
        seconds = time.time() - start
        for reply in entry["replies"]:
            name = reply["file"] or "(no code)"
            got, message = outcomes.get(name, ("no_code", "")) if reply["file"] else ("no_code", "")
            rows.append((problem, name, reply["cpu"], got, message, seconds))
    failures = [r for r in rows if r[2] != r[3]]
    print()
    print(f"{'problem':<18} {'reply':<26} {'expected':<14} {'emulated':<14} ok")
    for problem, name, want, got, message, _ in rows:
        print(f"{problem:<18} {name:<26} {want:<14} {got:<14} {'yes' if want == got else 'NO'}")
    for problem, name, want, got, message, _ in failures:
        print(f"\n{problem}/{name}: expected {want}, emulated {got}: {message}")
    print(f"\n{len(rows) - len(failures)} of {len(rows)} replies as expected on the CPU")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
