#!/usr/bin/env bash
# check: the sgemm, spmv, histogram, jacobi, transpose, reduce and axpy seeds verified and timed
# claim: tasks/README.md's seed figures
# device time: about 5 min
#
# Verifies and times the seeds of sgemm_f32, spmv_csr_f32, histogram_u8, jacobi2d_f32, transpose_f32,
# reduce_sum_f32 and axpy_f32 on a GPU machine: `kforge eval --held-out --json` per seed (the
# param sweep, correctness on the tests and held-out shapes, confirmation timing of the best point
# against the reference and the task's vendor routine), then one compact table.
# usage: scripts/gpu/checks/seeds-misc.sh [TASK...]   (default: the seven tasks; JSON per seed in $OUT)
set -uo pipefail
source "$(dirname "$0")/../env.sh"
out="${OUT:-/tmp}/seeds-misc"
mkdir -p "$out"
tasks=("$@")
[ ${#tasks[@]} -eq 0 ] && tasks=(sgemm_f32 spmv_csr_f32 histogram_u8 jacobi2d_f32 transpose_f32 reduce_sum_f32 axpy_f32)
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
for task in "${tasks[@]}"; do
    spec="$here/tasks/$task.json"
    for seed in $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["seeds"]))' "$spec"); do
        name=$(basename "$seed" .cu)
        start=$(date +%s)
        timeout "${SEED_TIMEOUT:-600}" "$KF" eval "$spec" "$here/tasks/$seed" --held-out --json \
            >"$out/$task--$name.json" 2>"$out/$task--$name.log"
        echo "$task $name rc=$? in $(( $(date +%s) - start ))s" | tee -a "$out/runs.txt"
    done
done
python3 - "$out" "${tasks[@]}" <<'EOF'
import glob, json, os, sys
out, tasks = sys.argv[1], sys.argv[2:]
print(f"\n{'task/seed':44} {'verdict':9} {'shape':24} {'median':>10} {'vendor':>10} {'vs vend':>7} "
      f"{'vs ref':>7} {'%BW':>6} {'%peak':>6}")
for task in tasks:
    for path in sorted(glob.glob(os.path.join(out, f"{task}--*.json"))):
        label = task + "/" + os.path.basename(path)[len(task) + 2:-5]
        try:
            r = json.load(open(path))
        except (OSError, ValueError):
            print(f"{label:44} no JSON (see {path[:-5]}.log)")
            continue
        verdict = r.get("verdict", "?")
        if not r.get("shapes"):
            print(f"{label:44} {verdict:9} {r.get('message', '')[:120]}")
            continue
        for i, s in enumerate(r["shapes"]):
            us = lambda ns: f"{ns / 1e3:.1f}us" if ns else "-"
            print(f"{label if i == 0 else '':44} {verdict if i == 0 else '':9} {s['shape'][:24]:24} "
                  f"{us(s['median_ns']):>10} {us(s['vendor_ns']):>10} "
                  f"{s['vendor_speedup']:>6.2f}x {s['speedup']:>6.2f}x "
                  f"{100 * s['measured_roofline_fraction']:>5.0f}% {100 * s['roofline_fraction']:>5.0f}%")
        ptxas = r.get("metrics", {}).get("ptxas", [])
        regs = ", ".join(f"{k['kernel']} {k['registers']} regs/{k['spill_store_bytes']} B spill" for k in ptxas)
        sweep = sorted(r.get("metrics", {}).get("sweep", [])[:-1], key=lambda p: -p.get("fitness", 0))
        top = "; ".join(f"{p['params']} {p['fitness']:.2f}x" for p in sweep[:3])
        print(f"{'':44} best {r.get('params')}  {regs}")
        if top:
            print(f"{'':44} sweep top (vs reference): {top}")
EOF
