#!/usr/bin/env python3
"""Runs `kforge model extract` on every KernelBench level-3 program and tabulates what came out.

usage: scripts/model-extract-kb.py KERNELBENCH_LEVEL3_DIR OUT_DIR [--kforge BIN] [--device cpu]
       [--time-limit S] [--only NAME,...]

KernelBench is test input fetched for the run (never committed): pass the folder of its level-3
programs. Per program: exit code, regions (all / unique / written as problems), the size variables
that follow into the regions, and the first line of the error where extract refused it. Prints a
markdown table and its totals last; writes OUT_DIR/summary.json.
"""
import argparse
import json
import os
import pathlib
import subprocess
import time

parser = argparse.ArgumentParser()
parser.add_argument("level3")
parser.add_argument("out")
parser.add_argument("--kforge", default=str(pathlib.Path(__file__).resolve().parent.parent / "build/dev/src/cli/kforge"))
parser.add_argument("--device", default="cpu")
parser.add_argument("--time-limit", type=float, default=300)
parser.add_argument("--only", default="")
parser.add_argument("--jobs", type=int, default=1, help="programs extracted at once")
parser.add_argument("--sizes", default="", help="kforge model extract --sizes for every program that has them all")
args = parser.parse_args()

files = sorted(p for p in pathlib.Path(args.level3).glob("*.py"))
if args.only:
    wanted = set(args.only.split(","))
    files = [f for f in files if f.stem in wanted or f.stem.split("_")[0] in wanted]
pathlib.Path(args.out).mkdir(parents=True, exist_ok=True)
progress = open(pathlib.Path(args.out) / "rows.jsonl", "a")


def one(f):
    out = pathlib.Path(args.out) / f.stem
    start = time.time()
    command = [args.kforge, "model", "extract", str(f), "-o", str(out), "--device", args.device, "--no-measure",
               "--min-share", "0", "--time-limit", str(args.time_limit)]
    text = f.read_text()
    given = [s for s in args.sizes.split(",") if s and f"\n{s.split('=')[0]} = " in "\n" + text]
    if given:
        command += ["--sizes", ",".join(given)]
    run = subprocess.run(command, capture_output=True, text=True)
    row = {"problem": f.stem, "rc": run.returncode, "seconds": round(time.time() - start, 1), "sizes": ",".join(given)}
    doc = out / "model.json"
    if run.returncode == 0 and doc.exists():
        d = json.loads(doc.read_text())
        row.update(regions=d["regions_total"], unique=len(d["regions"]),
                   written=sum(1 for r in d["regions"] if "problem" in r),
                   not_written=[r["why_not"] for r in d["regions"] if "problem" not in r and r.get("compute")],
                   symbols=list(d["size_symbols"]), kinds=sorted({r["kind"] for r in d["regions"]}))
    else:
        err = [l for l in run.stderr.splitlines() if l.strip()]
        row["error"] = (err[-1] if err else run.stdout.strip()[-300:])[:300]
    print(json.dumps(row), flush=True)
    progress.write(json.dumps(row) + "\n")
    progress.flush()
    return row


from concurrent.futures import ThreadPoolExecutor  # noqa: E402
with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
    rows = list(pool.map(one, files))
(pathlib.Path(args.out) / "summary.json").write_text(json.dumps(rows, indent=1))
print("\n| problem | rc | regions | unique | written | size variables | note |\n|---|---|---|---|---|---|---|")
for r in rows:
    note = r.get("error", "") or "; ".join(sorted(set(r.get("not_written", []))))[:120]
    print(f"| {r['problem']} | {r['rc']} | {r.get('regions', '-')} | {r.get('unique', '-')} | {r.get('written', '-')} | "
          f"{', '.join(r.get('symbols', [])) or '-'} | {note} |")
ok = [r for r in rows if r["rc"] == 0]
print(f"\n{len(ok)} of {len(rows)} programs extract; {sum(r['regions'] for r in ok)} regions, "
      f"{sum(r['unique'] for r in ok)} unique, {sum(r['written'] for r in ok)} written as problems")
