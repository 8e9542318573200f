#!/usr/bin/env python3
"""The GEMM check on a GPU machine, driven by scripts/gpu/checks/gemm.sh (read its header).

Phases, each reporting every point it reaches and never stopping at the first failure:
  compile  `kforge eval --compile-only --json` of every seed of hgemm_bf16 and sgemm_f32 (all their
           param points): NVRTC verdict, registers, spill bytes, static shared memory per point;
           and `kforge task check` of both specs (reference correct, bad candidates refused).
  points   every param point of the new seeds (hgemm_bf16/seed_ws_tma and seed_ws_persistent,
           sgemm_f32/seed_frag_pipeline), each pinned in its own copy of the seed, plus one known
           point of each older seed as a same-run baseline, through `kforge eval --held-out --json`:
           verdict (correct on the tests and held-out shapes, which include non-multiples of every
           tile), message, per bench shape the median, x cuBLAS, % of roofline. Most promising
           points first, round-robin over the tasks, until POINTS_BUDGET_S.
  profile  `kforge eval --profile --json` of each task's best correct point (CUPTI metrics).
  bench    `kforge_bench tasks` for the two GEMM tasks (builtin proposer over all seeds for
           BENCH_TIME each): reference, cuBLAS, torch eager, torch.compile, best found, % roofline.
Everything lands in WORK (JSON, logs, pinned sources, table.txt); the table is printed last.
"""
import itertools
import json
import math
import os
import re
import subprocess
import sys
import time

here, kf, bench_bin, work = sys.argv[1:5]
phases = os.environ.get("PHASES", "compile points profile bench").split()
points_budget = float(os.environ.get("POINTS_BUDGET_S", "200"))
eval_timeout = float(os.environ.get("EVAL_TIMEOUT", "120"))
bench_time = os.environ.get("BENCH_TIME", "60s")
TASKS = ["hgemm_bf16", "sgemm_f32"]
PLAN = re.compile(r"/\* kforge:plan(.*?)\*/", re.S)
out_lines = []


def emit(line=""):
    print(line, flush=True)
    out_lines.append(line)


def spec(task):
    return f"{here}/tasks/{task}.json"


def seed_path(task, seed):
    return f"{here}/tasks/{task}/{seed}.cu"


def seed_params(task, seed):
    return json.loads(PLAN.search(open(seed_path(task, seed)).read()).group(1))["params"]


def all_points(task, seed):
    params = seed_params(task, seed)
    return [dict(zip(params, values)) for values in itertools.product(*params.values())]


def ws_effective(p):
    """seed_ws_persistent clamps STAGES to what fits beside its 18 KB epilogue staging."""
    stage_bytes = (256 + 128 * (p["TILE"] != 0)) * 128
    return dict(p, STAGES=min(p["STAGES"], (231424 - 18432 - 256) // stage_bytes))


def new_seed_points(task):
    """The new seed's points, duplicates (same effective config) left out, most promising first."""
    if task == "hgemm_bf16":
        seen, points = set(), []
        for p in all_points(task, "seed_ws_tma"):
            key = tuple(sorted(ws_effective(p).items()))
            if key not in seen:
                seen.add(key)
                points.append(p)
        # 128x256 first (cuBLAS's usual Hopper tile), then 256x128, then 128x128.
        order = {1: 0, 2: 1, 0: 2}
        points.sort(key=lambda p: (order[p["TILE"]], -p["STAGES"], p["GROUP_M"]))
        # Both warp-specialised seeds share params: TMA and cp.async producers point by point.
        return [(seed, p) for p in points for seed in ("seed_ws_tma", "seed_ws_persistent")]
    points = all_points(task, "seed_frag_pipeline")
    points.sort(key=lambda p: (p["BK"], p["LM"], p["GROUP_M"]))
    return [("seed_frag_pipeline", p) for p in points]


# One known point of each older seed, timed in the same run as the baseline the new seeds must beat.
OLD_POINTS = {
    "hgemm_bf16": [("seed_wgmma", {"BN": 256, "STAGES": 4, "WAIT": 1})],
    "sgemm_f32": [("seed_cp_async", {"BN": 128, "BK": 8, "STAGES": 3}), ("seed_warptile", {"BN": 128, "LM": 4})],
}


def completed(task, seed, point):
    """`point` with every param it leaves out at the seed's first value."""
    return {name: point.get(name, values[0]) for name, values in seed_params(task, seed).items()}


def label_of(seed, point):
    return seed + "--" + "-".join(f"{k}{v}" for k, v in sorted(point.items()))


def pinned(task, seed, point):
    text = open(seed_path(task, seed)).read()
    m = PLAN.search(text)
    plan = json.loads(m.group(1))
    plan["params"] = {k: [v] for k, v in point.items()}
    path = f"{work}/points/{task}--{label_of(seed, point)}.cu"
    with open(path, "w") as f:
        f.write(text[:m.start()] + "/* kforge:plan\n" + json.dumps(plan, indent=1) + "\n*/" + text[m.end():])
    return path


def run(cmd, log, timeout):
    """Runs cmd; returns (rc, stdout). stderr goes to log. rc 124 on a timeout."""
    with open(log, "w") as err:
        try:
            done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, timeout=timeout, text=True)
            return done.returncode, done.stdout
        except subprocess.TimeoutExpired as e:
            return 124, (e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout) or ""


def parse_json(text):
    try:
        return json.loads(text)
    except ValueError:
        return None


def log_tail(log, n=3):
    try:
        lines = [l.strip() for l in open(log) if l.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])


def first_lines(text, n=2, width=160):
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    return " / ".join(lines[:n])[:width]


# ---- compile -----------------------------------------------------------------------------------

def phase_compile():
    emit("== compile: NVRTC for sm_90a, every param point of every GEMM seed ==")
    jobs = []
    for task in TASKS:
        for seed in json.load(open(spec(task)))["seeds"]:
            name = os.path.basename(seed)[:-3]
            log = f"{work}/compile--{task}--{name}.log"
            cmd = [kf, "eval", spec(task), f"{here}/tasks/{seed}", "--compile-only", "--arch", "sm_90a", "--json"]
            jobs.append((task, name, log, subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                                           stderr=open(log, "w"), text=True)))
    # The spec check on the GPU: the reference passes, the built-in bad candidates fail.
    checks = {task: subprocess.Popen([kf, "task", "check", spec(task)], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True) for task in TASKS}
    emit(f"  {'task/seed':38} {'params':44} {'ok':4} {'regs':>5} {'spill st/ld':>12} {'smem':>6}  message")
    for task, name, log, proc in jobs:
        try:
            stdout, _ = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout = ""
        report = parse_json(stdout)
        if not report or "variants" not in report:
            msg = (report or {}).get("message") or log_tail(log)
            emit(f"  {task + '/' + name:38} {'(all)':44} {'NO':4} {'':>5} {'':>12} {'':>6}  "
                 f"{(report or {}).get('verdict', 'no result')}: {first_lines(msg)}")
            continue
        for v in report["variants"]:
            res = (v.get("resources") or [{}])[0]
            spills = (f"{res.get('spill_store_bytes')}/{res.get('spill_load_bytes')}" if "spill_store_bytes" in res
                      else f"? {res.get('stack_frame_bytes', '?')}B stk")
            emit(f"  {task + '/' + name:38} {v['params'][:44]:44} {'ok' if v['ok'] else 'NO':4} "
                 f"{res.get('registers', '-'):>5} {spills:>12} {res.get('static_smem_bytes', '-'):>6}  "
                 f"{first_lines(v.get('message', ''))}")
    for task, proc in checks.items():
        try:
            text, _ = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            proc.kill()
            text = "timed out after 300 s"
        with open(f"{work}/task-check--{task}.log", "w") as f:
            f.write(text)
        emit(f"  kforge task check {task}: rc={proc.returncode}: {first_lines(text.splitlines()[-1] if text else '', 1, 200)}")


# ---- points ------------------------------------------------------------------------------------

def bench_labels(task):
    return [b.get("label") or ",".join(f"{k}={v}" for k, v in sorted(b.items()) if k != "seed")
            for b in json.load(open(spec(task)))["shapes"]["bench"]]


def vendor_geomean(report):
    ratios = [s["vendor_speedup"] for s in (report or {}).get("shapes") or [] if s.get("vendor_speedup")]
    return math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else 0.0


def shape_cells(task, report):
    found = {s["shape"]: s for s in (report or {}).get("shapes") or []}
    cells = []
    for name in bench_labels(task):
        s = found.get(name)
        if not s:
            cells.append(f"{'-':>23}")
            continue
        ratio = f"{s['vendor_speedup']:.2f}x" if s.get("vendor_speedup") else "  -  "
        cells.append(f"{s['median_ns'] / 1e3:8.1f}u {ratio} {100 * s['roofline_fraction']:3.0f}%")
    return cells


def phase_points(results):
    queues = []
    for task in TASKS:
        new = new_seed_points(task)
        old = [(s, completed(task, s, p)) for s, p in OLD_POINTS[task]]
        queues.append([(task, s, p) for s, p in new[:2] + old + new[2:]])
    # A shorter queue (sgemm) would otherwise leave the longer one's tail for last; that is the
    # intent: the most promising points of both tasks run before anyone's tail.
    runlist = [q[i] for i in range(max(map(len, queues))) for q in queues if i < len(q)]
    emit(f"== points: kforge eval --held-out, one pinned param point per run "
         f"({len(runlist)} points, budget {points_budget:.0f} s) ==")
    begin, took = time.time(), {}
    for task, seed, point in runlist:
        label = label_of(seed, point)
        elapsed = time.time() - begin
        if elapsed + took.get(task, 20) > points_budget:
            emit(f"  {task}/{label}: skipped (budget: {elapsed:.0f} s used)")
            continue
        path = pinned(task, seed, point)
        log = f"{work}/{task}--{label}.log"
        start = time.time()
        rc, stdout = run([kf, "eval", spec(task), path, "--held-out", "--json"], log, eval_timeout)
        took[task] = time.time() - start
        report = parse_json(stdout)
        with open(f"{work}/{task}--{label}.json", "w") as f:
            f.write(stdout)
        results.append({"task": task, "seed": seed, "point": point, "label": label, "rc": rc, "report": report,
                        "path": path, "log": log, "seconds": took[task]})
        verdict = (report or {}).get("verdict") or ("timeout (script)" if rc == 124 else f"rc={rc}, no JSON")
        emit(f"  {task}/{label}: {verdict} in {took[task]:.0f} s")
        if verdict != "correct":
            emit(f"      {first_lines((report or {}).get('message') or log_tail(log), 4, 400)}")


def best_of(results, task):
    correct = [r for r in results if r["task"] == task and (r["report"] or {}).get("verdict") == "correct"]
    return max(correct, key=lambda r: vendor_geomean(r["report"]), default=None)


# ---- profile -----------------------------------------------------------------------------------

def phase_profile(results, profiles):
    emit("== profile: kforge eval --profile of each task's best correct point ==")
    for task in TASKS:
        best = best_of(results, task)
        if not best:
            emit(f"  {task}: no correct point to profile")
            continue
        log = f"{work}/profile--{task}.log"
        rc, stdout = run([kf, "eval", spec(task), best["path"], "--profile", "--json"], log, eval_timeout)
        with open(f"{work}/profile--{task}.json", "w") as f:
            f.write(stdout)
        report = parse_json(stdout) or {}
        profile = (report.get("metrics") or {}).get("profile")
        profiles[task] = (best["label"], profile)
        if not profile:
            emit(f"  {task} {best['label']}: no profile (rc={rc}): {first_lines(report.get('message') or log_tail(log))}")
            continue
        emit(f"  {task} {best['label']}:")
        for key, value in sorted(profile.items()):
            emit(f"      {key}: {value}")


# ---- bench -------------------------------------------------------------------------------------

def phase_bench():
    emit(f"== bench: kforge_bench tasks, builtin proposer, {bench_time} per task ==")
    log = f"{work}/bench.log"
    cmd = [bench_bin, "--kforge", kf, "tasks", "--task", "hgemm_bf16", "--task", "sgemm_f32",
           "--time", bench_time, "--archives", f"{work}/bench-archives"]
    rc, stdout = run(cmd, log, 420)
    with open(f"{work}/bench.md", "w") as f:
        f.write(stdout)
    rows = [l for l in stdout.splitlines() if l.startswith("|")]
    if rc != 0 or not rows:
        emit(f"  kforge_bench rc={rc}: {log_tail(log, 5)}")
    return rows


# ---- the table ---------------------------------------------------------------------------------

def summary(results, profiles, bench_rows):
    emit("")
    emit("==== GEMM summary (the target: bf16 >= 0.95x cuBLAS, fp32 >= 0.98x on every bench shape) ====")
    for task in TASKS:
        names = bench_labels(task)
        emit(f"{task}: per bench shape median us, x cuBLAS, % roofline; geomean x cuBLAS")
        emit(f"  {'seed--point':46} {'verdict':15} " + " ".join(f"{n[:23]:>23}" for n in names) + "  geo")
        rows = [r for r in results if r["task"] == task]
        rows.sort(key=lambda r: -vendor_geomean(r["report"]))
        for r in rows:
            verdict = (r["report"] or {}).get("verdict") or ("timeout" if r["rc"] == 124 else f"rc={r['rc']}")
            geo = vendor_geomean(r["report"])
            emit(f"  {r['label'][:46]:46} {verdict[:15]:15} " + " ".join(shape_cells(task, r["report"])) +
                 (f"  {geo:.2f}x" if geo else ""))
        if task in profiles and profiles[task][1]:
            label, profile = profiles[task]
            short = ", ".join(f"{k}={v:.3g}" if isinstance(v, (int, float)) else f"{k}={v}"
                              for k, v in sorted(profile.items()) if k != "shape")
            emit(f"  profile of {label}: {short[:600]}")
    if bench_rows:
        emit("kforge_bench tasks (builtin proposer over all seeds):")
        for row in bench_rows:
            emit("  " + row)


def main():
    os.makedirs(f"{work}/points", exist_ok=True)
    results, profiles, bench_rows = [], {}, []
    if "compile" in phases:
        phase_compile()
    if "points" in phases:
        phase_points(results)
    if "profile" in phases:
        phase_profile(results, profiles)
    if "bench" in phases:
        bench_rows = phase_bench()
    summary(results, profiles, bench_rows)
    with open(f"{work}/table.txt", "w") as f:
        f.write("\n".join(out_lines) + "\n")


main()
