#!/usr/bin/env python3
"""The short table of a `kforge_bench scale` run, and whether each multi-GPU fixed-work row meets its
target (1.8x on 2 GPUs, 3.5x on 4, 6.5x on 8, each GPU at least 90% busy).

    python3 scripts/scale-summary.py scale.json

scripts/gpu/checks/scale.sh (real GPUs) and scripts/sim-scale.sh (simulated ones) print it last.
"""
import json
import sys

TARGETS = {2: 1.8, 4: 3.5, 8: 6.5}


def main():
    try:
        scale = json.load(open(sys.argv[1]))
    except (IndexError, OSError, ValueError) as e:
        print(f"scale-summary: no scale.json ({e}); see bench.log")
        return 1
    simulated = scale.get("simulated") or {}
    where = "SIMULATED GPUs (" + ", ".join(f"{k}={v}" for k, v in simulated.items()) + ")" if simulated else scale["device"]
    print(f"\n{scale['task']} on {where} ({scale['gpus_visible']} visible); "
          f"fixed work: {scale['candidates']} recorded candidates; builtin: a budget of {scale['budget']}")
    verdicts = []
    for table, title in (("fixed", "fixed work"), ("builtin", "builtin proposer")):
        rows = [r for r in scale["rows"] if r["table"] == table]
        print(f"\n{title}\n| GPUs | mode | wall s | speedup | GPU evaluations | busy % per GPU |\n|---:|---|---:|---:|---:|---|")
        for r in rows:
            mode = "mpirun -n %d" % r["gpus"] if r["launch"] == "mpirun" else "one process"
            if "skipped" in r or "error" in r:
                print(f"| {r['gpus']} | {mode} | - | - | - | {r.get('skipped') or r.get('error')} |")
                continue
            busy = " ".join("%.0f" % (100 * g["busy"]) for g in r["per_gpu"])
            speedup = "%.2fx" % r["speedup"] if r.get("speedup") else "-"
            note = " (%s)" % r["note"] if "note" in r else ""
            print(f"| {r['gpus']} | {mode} | {r['search_s']:.1f} | {speedup} | {r['evaluations']} | {busy}{note} |")
            if table == "fixed" and r["gpus"] in TARGETS:
                ok = (r.get("speedup") or 0) >= TARGETS[r["gpus"]] and r["least_busy"] >= 0.9 and "note" not in r
                verdicts.append(f"{r['gpus']} GPUs, {mode}: {speedup} (target {TARGETS[r['gpus']]}x), least busy "
                                f"{100 * r['least_busy']:.0f}% (target 90%): {'MEETS' if ok else 'MISSES'}")
    print("\n" + ("\n".join(verdicts) if verdicts else "no multi-GPU fixed-work row was measured"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
