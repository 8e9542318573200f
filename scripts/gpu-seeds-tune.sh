#!/usr/bin/env bash
# Times every param point of the tuned seeds on a GPU machine, each point on its own, so that the winners
# per bench shape can be picked in one GPU call: layernorm_f32/seed_row_regs (PERSIST, STREAM),
# transpose_f32/seed_smem_tile (GROUP) and seed_tile_vec4, scan_u32/seed_decoupled_lookback (PIPELINE).
# Each point is a copy of the seed with its params pinned, run through `kforge eval --held-out --json`
# (correctness on the tests and held-out shapes, confirmation timing against the reference and the
# task's vendor routine). A few extra points outside the seeds' lists test one hypothesis each
# (layernorm with STREAM=0: default caching, as Triton does).
#
# The runs go round-robin over the tasks, most informative points first, and stop starting new ones
# once BUDGET_S (default 320) seconds have passed, so the whole script stays under 6 minutes on one
# H100; skipped points are listed. TORCH=1 also times torch eager and torch.compile on the same bench
# shapes at the end, once with kforge's kind of L2 flush (a 256 MiB read) and once with a memset flush
# (as scripts/gpu-seeds-norm.sh and bench/torch_baselines.py do), which leaves dirty lines for the
# timed operation to write back; compiling takes minutes, so BUDGET_S=0 TORCH=1 runs torch alone.
# Everything (JSON, logs, pinned sources, the table) is packed into $OUT/seeds-tune.tar.gz, one file;
# the table is printed and also written to $OUT/seeds-tune-table.txt.
# usage: [BUDGET_S=320] [TORCH=1] scripts/gpu-seeds-tune.sh [TASK...]   (default: the three tasks)
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
# Work outside $OUT: only the tarball and the table go there (the GPU tool returns few files).
out="${SEEDS_TUNE_DIR:-/tmp/kforge-seeds-tune}/seeds-tune"
rm -rf "$out" && mkdir -p "$out/points"
mkdir -p "${OUT:-/tmp}"
tasks=("$@")
[ ${#tasks[@]} -eq 0 ] && tasks=(scan_u32 layernorm_f32 transpose_f32)
budget=${BUDGET_S:-320}
begin=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader | tee "$out/device.txt"

# The run list, one line per pinned point: LABEL SPEC FILE, in the order to run.
python3 - "$here" "$out/points" "${tasks[@]}" >"$out/runlist.txt" <<'EOF'
import itertools, json, re, sys
here, folder, tasks = sys.argv[1], sys.argv[2], sys.argv[3:]

# Per task: (seed, priority of a point: lower runs first) and extra points outside the seed's lists.
def scan_key(p):
    return (p["PIPELINE"] == 0, (p["BLOCK"], p["ITEMS"]) != (512, 24), -p["ITEMS"], -p["BLOCK"])
def layernorm_key(p):   # THREADS 1024, VPT 8, PERSIST 1 runs as VPT 4 (see the seed): last
    duplicate = p["PERSIST"] == 1 and p["THREADS"] * p["VPT"] > 4096
    return (duplicate, p["PERSIST"] == 0, (p["THREADS"], p["VPT"]) != (512, 8), -p["VPT"])
def tile_key(p):   # each (TILE, ROWS, STREAM) with GROUP 16, then the same with GROUP 1
    return (p["STREAM"] == 0, p["TILE"] == 32, p["ROWS"], p["GROUP"] == 1)
def vec4_key(p):
    return (p["GROUP"] == 1, p["STREAM"] == 0)
plans = {
    "scan_u32": [("seed_decoupled_lookback", scan_key, [])],
    "layernorm_f32": [("seed_row_regs", layernorm_key,
                       [{"THREADS": 512, "VPT": 8, "PERSIST": 1, "STREAM": 0},
                        {"THREADS": 512, "VPT": 8, "PERSIST": 0, "STREAM": 0}])],
    "transpose_f32": [("seed_tile_vec4", vec4_key, []), ("seed_smem_tile", tile_key, [])],
}

def pinned(task, seed, point):
    src = f"{here}/tasks/{task}/{seed}.cu"
    text = open(src).read()
    m = re.search(r"/\* kforge:plan(.*?)\*/", text, re.S)
    plan = json.loads(m.group(1))
    plan["params"] = {k: [v] for k, v in point.items()}
    tag = "-".join(f"{k}{v}" for k, v in sorted(point.items()))
    path = f"{folder}/{task}--{seed}--{tag}.cu"
    with open(path, "w") as f:
        f.write(text[:m.start()] + "/* kforge:plan\n" + json.dumps(plan, indent=1) + "\n*/" + text[m.end():])
    return f"{task}--{seed}--{tag}", f"{here}/tasks/{task}.json", path

def interleave(queues):
    merged = []
    for i in range(max(len(q) for q in queues)):
        merged += [q[i] for q in queues if i < len(q)]
    return merged

task_queues = []
for task in tasks:
    seed_queues = []
    for seed, key, extras in plans[task]:
        text = open(f"{here}/tasks/{task}/{seed}.cu").read()
        params = json.loads(re.search(r"/\* kforge:plan(.*?)\*/", text, re.S).group(1))["params"]
        points = [dict(zip(params, values)) for values in itertools.product(*params.values())]
        ranked = sorted(points, key=key)
        # Extras run right after the seed's first point.
        seed_queues.append([pinned(task, seed, p) for p in ranked[:1] + extras + ranked[1:]])
    task_queues.append(interleave(seed_queues))
# Round-robin over the tasks (and within a task over its seeds), each in its own order.
for run in interleave(task_queues):
    print(*run, sep="\t")
EOF

estimate=15   # seconds the next run is assumed to take before one of its task has been timed
declare -A took
while IFS=$'\t' read -r label spec file; do
    task=${label%%--*}
    elapsed=$(( $(date +%s) - begin ))
    need=${took[$task]:-$estimate}
    if (( elapsed + need > budget )); then
        echo "$label skipped (budget: ${elapsed}s used, ~${need}s needed)" | tee -a "$out/runs.txt"
        continue
    fi
    start=$(date +%s)
    timeout "${EVAL_TIMEOUT:-90}" "$KF" eval "$spec" "$file" --held-out --json >"$out/$label.json" 2>"$out/$label.log"
    rc=$?
    took[$task]=$(( $(date +%s) - start ))
    echo "$label rc=$rc in ${took[$task]}s" | tee -a "$out/runs.txt"
done <"$out/runlist.txt"

if [ "${TORCH:-0}" = 1 ]; then
python3 - "$here" "$out" "${tasks[@]}" <<'EOF' 2>"$out/torch.log" || echo "torch timing skipped: $(tail -n 1 "$out/torch.log")"
import json, sys
import torch
here, out, tasks = sys.argv[1], sys.argv[2], sys.argv[3:]
flush = torch.empty(64 * 2**20, dtype=torch.float32, device="cuda")
def median_us(fn, write_flush, reps=50):
    fn(); torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        # kforge flushes L2 by reading 256 MiB (clean lines); a memset flush leaves up to an L2 of dirty
        # lines that the timed operation then writes back. Both are timed to show the difference.
        flush.zero_() if write_flush else flush.sum()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    return sorted(times)[len(times) // 2]
def op(task, s):
    g = torch.Generator(device="cuda").manual_seed(1)
    if task == "layernorm_f32":
        x = torch.randn(s["M"], s["N"], device="cuda", generator=g) + 128
        w = torch.rand(s["N"], device="cuda") + 0.5; b = torch.rand(s["N"], device="cuda") - 0.5
        return lambda: torch.nn.functional.layer_norm(x, (s["N"],), w, b, 1e-5)
    if task == "transpose_f32":
        x = torch.rand(s["M"], s["N"], device="cuda", generator=g)
        return lambda: x.t().contiguous()
    if task == "scan_u32":
        x = torch.randint(0, 2**31 - 1, (s["n"],), dtype=torch.int32, device="cuda", generator=g)
        return lambda: torch.cumsum(x, 0, dtype=torch.int32)
results = {}
for task in tasks:
    for s in json.load(open(f"{here}/tasks/{task}.json"))["shapes"]["bench"]:
        label = ",".join(f"{k}={v}" for k, v in sorted(s.items()) if k not in ("seed", "label"))
        fn = op(task, s)
        compiled = torch.compile(fn)
        results[f"{task}|{label}"] = {"eager_us": median_us(fn, False), "compile_us": median_us(compiled, False),
                                     "eager_wflush_us": median_us(fn, True),
                                     "compile_wflush_us": median_us(compiled, True)}
        del fn
        torch.cuda.empty_cache()
        json.dump(results, open(f"{out}/torch.json", "w"), indent=1)
EOF
fi

python3 - "$here" "$out" "${tasks[@]}" <<'EOF' | tee "$out/table.txt"
import glob, json, math, os, sys
here, out, tasks = sys.argv[1], sys.argv[2], sys.argv[3:]
def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None
try:
    torch_times = json.load(open(f"{out}/torch.json"))
except (OSError, ValueError):
    torch_times = {}
print(open(f"{out}/device.txt").read().strip())
for task in tasks:
    rows = []
    for path in sorted(glob.glob(f"{out}/{task}--*.json")):
        label = os.path.basename(path)[len(task) + 2:-5]
        rows.append((label, load(path), path))
    # Bench shapes labelled as kforge labels them (NAME=value in alphabetical order, or the label).
    names = [b.get("label") or ",".join(f"{k}={v}" for k, v in sorted(b.items()) if k != "seed")
             for b in json.load(open(f"{here}/tasks/{task}.json"))["shapes"]["bench"]]
    def by_shape(r):   # the result's shapes in the order of `names` (None where missing)
        found = {s["shape"]: s for s in (r or {}).get("shapes") or []}
        return [found.get(n) for n in names]
    vendor_name = next((s.get("vendor_subject") for _, r, _ in rows for s in (r or {}).get("shapes") or []
                        if s.get("vendor_subject")), "") or "none"
    print(f"\n{task}: median us (% of measured copy bandwidth, x vendor) per bench shape; vendor = {vendor_name}")
    vend = []
    for i in range(len(names)):
        v = sorted(by_shape(r)[i]["vendor_ns"] / 1e3 for _, r, _ in rows
                   if by_shape(r)[i] and by_shape(r)[i].get("vendor_ns"))
        vend.append(v[len(v) // 2] if v else 0.0)
    print(f"  {'point':58} {'verdict':8} " + " ".join(f"{n[:19]:>19}" for n in names) + "   geomean")
    if any(vend):
        print(f"  {'vendor (median over the runs)':58} {'':8} " + " ".join(f"{v:10.1f}u       " for v in vend))
    tt = [torch_times.get(f"{task}|{n}", {}) for n in names]
    for kind in ("eager_us", "compile_us", "eager_wflush_us", "compile_wflush_us"):
        if any(kind in t for t in tt):
            name = "torch " + kind[:-3].replace("_wflush", " (memset flush)")
            print(f"  {name:58} {'':8} " + " ".join(f"{t.get(kind, 0):10.1f}u       " for t in tt))
    best = {}
    for label, r, path in rows:
        if not r or not r.get("shapes"):
            msg = (r or {}).get("message") or f"no result, see {os.path.basename(path)[:-5]}.log"
            print(f"  {label[:58]:58} {(r or {}).get('verdict', '?'):8} {msg[:90]}"); continue
        cells, logs = [], []
        for i, sh in enumerate(by_shape(r)):
            if sh is None:
                cells.append(f"{'-':>19}"); continue
            med = sh["median_ns"] / 1e3
            ratio = f" {sh['vendor_ns'] / sh['median_ns']:4.2f}x" if sh.get("vendor_ns") else "      "
            cells.append(f"{med:8.1f}u {100 * sh['measured_roofline_fraction']:3.0f}%{ratio}")
            logs.append(math.log(med))
            if r.get("verdict") == "correct" and med < best.get(i, (1e30, ""))[0]:
                best[i] = (med, label)
        held = r.get("metrics", {}).get("notes", {}).get("held_out_runs", 0)
        regs = max((k["registers"] for k in r.get("metrics", {}).get("ptxas", [])), default=0)
        geo = math.exp(sum(logs) / len(logs)) if logs else 0.0
        print(f"  {label[:58]:58} {r.get('verdict', '?')[:8]:8} " + " ".join(cells) +
              f" {geo:8.1f}u  ho{held} {regs}r")
    for i, n in enumerate(names):
        if i in best:
            print(f"  best at {n}: {best[i][1]} {best[i][0]:.1f} us")
print()
print(open(f"{out}/runs.txt").read().strip() if os.path.exists(f"{out}/runs.txt") else "no runs")
EOF
echo "total $(( $(date +%s) - begin ))s"
cp "$out/table.txt" "${OUT:-/tmp}/seeds-tune-table.txt"
tar czf "${OUT:-/tmp}/seeds-tune.tar.gz" -C "$(dirname "$out")" "$(basename "$out")" && echo "packed ${OUT:-/tmp}/seeds-tune.tar.gz"
