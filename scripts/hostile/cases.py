#!/usr/bin/env python3
"""Hostile input, first round: every case against a built kforge, on the CPU.

Builds each hostile input in a temporary folder, runs the command under /usr/bin/time and prints
one row per case: exit code (and whether it is the one expected), wall seconds, peak memory, and
the first line kforge printed about it. The bound is under 2 s and 200 MB a case; a row
over either, or with another exit code, is marked with '!' and the script exits 1.

    scripts/hostile/cases.py [KFORGE]     (default build/dev/src/cli/kforge)

No GPU is needed: eval runs --compile-only (NVRTC only), resume is expected to fail for want of a
GPU *without changing the archive* (the script compares the file's bytes). The archives are made
from one six-candidate softmax run on a simulated GPU (KFORGE_SIMULATE_GPUS=1; about a minute).
"""
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # scripts/hostile/ -> the repository
kforge = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "build/dev/src/cli/kforge"))
spec_path = os.path.join(here, "tasks/softmax_f32.json")
k_kernel = 'extern "C" __global__ void softmax(const float* x, float* y, int M, int N) { if (M + N) y[0] = x[0]; }\n'
rows = []
failed = False


def run(name, args, expect_rc, env=None, check=None, max_seconds=2.0):
    """Runs kforge ARGS under /usr/bin/time; records rc, seconds, MB and the first message line.
    MAX_SECONDS None: the case does real work that scales with the machine (NVRTC compiles)."""
    global failed
    timing = os.path.join(work, "time.txt")
    full_env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"), KFORGE_NO_KNOWLEDGE="1", **(env or {}))
    try:
        done = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", timing, kforge] + args, capture_output=True,
                              text=True, errors="replace", env=full_env, timeout=120, stdin=subprocess.DEVNULL)
        rc = done.returncode
        text = (done.stderr + done.stdout).strip()
    except subprocess.TimeoutExpired:
        rc, text = "timeout", "(killed after 120 s)"
    seconds, kb = (open(timing).read().split()[-2:] if os.path.exists(timing) else ("?", "0"))
    mb = int(kb) / 1024
    lines = [line for line in text.splitlines() if line.strip()]
    first = next((line for line in lines if "error" in line or "verdict" in line or "damaged" in line
                  or "plan_error" in line or "compile_error" in line), lines[0] if lines else "")
    extra = check() if check else ""
    slow = seconds == "?" or (max_seconds is not None and float(seconds) >= max_seconds)
    bad = rc != expect_rc or slow or mb >= 200 or extra.startswith("!")
    failed = failed or bad
    rows.append((("! " if bad else "  ") + name, f"{rc}/{expect_rc}", seconds, f"{mb:.0f}", (extra + " " if extra else "")
                 + first.replace(work, "$TMP")[:110]))
    if os.path.exists(timing):
        os.remove(timing)


def spec_variant(name, change, files=None):
    """A copy of softmax_f32's spec, changed by CHANGE(spec), in a folder with its kernel files."""
    folder = os.path.join(work, name)
    shutil.copytree(os.path.join(here, "tasks/softmax_f32"), os.path.join(folder, "softmax_f32"))
    spec = json.load(open(spec_path))
    change(spec)
    for file, text in (files or {}).items():
        open(os.path.join(folder, file), "w").write(text)
    path = os.path.join(folder, "spec.json")
    open(path, "w").write(json.dumps(spec))
    return path


def candidate(name, plan, body=k_kernel):
    path = os.path.join(work, name)
    open(path, "w").write("/* kforge:plan\n" + json.dumps(plan) + "\n*/\n" + body)
    return path


def launch(**change):
    plan = {"kernel": "softmax", "grid": ["M"], "block": [256], "args": ["x", "y", "M", "N"]}
    plan.update(change)
    return {"launches": [plan]}


def set_path(spec, keys, value):
    node = spec
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = value


def digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


work = tempfile.mkdtemp(prefix="kforge-hostile-")
try:
    sample_archive = os.path.join(work, "run.kforge")
    print("building a six-candidate softmax archive on a simulated GPU...", file=sys.stderr)
    subprocess.run([kforge, "optimize", spec_path, "--model", "builtin", "--budget", "6", "--no-knowledge",
                    "--progress", "quiet", "-o", sample_archive], check=True, capture_output=True,
                   env=dict(os.environ, KFORGE_SIMULATE_GPUS="1", XDG_CACHE_HOME=os.path.join(work, "cache")))
    # --- a candidate (a model's reply) ---
    deep = "(" * 100000 + "M" + ")" * 100000
    run("plan grid of 100,000 parentheses", ["eval", spec_path, candidate("deep.cu", launch(grid=[deep])),
                                             "--compile-only"], 1)
    params = {f"P{i}": list(range(1, 9)) for i in range(8)}
    # 16.7M points; only the task's max_param_points (64) are ever built, then each is compiled by
    # NVRTC: the time is 64 compiles (not bounded by 2 s), the memory must stay small.
    run("plan of 8 params x 8 values (64 compiled)", ["eval", spec_path, candidate(
        "product.cu", dict(launch(), params=params)), "--compile-only"], 0, max_seconds=None)
    run("2 args to a 4-parameter kernel", ["eval", spec_path, candidate("two_args.cu", launch(args=["x", "y"])),
                                           "--compile-only"], 1)
    doubling = "#define A0 x x\n" + "".join(f"#define A{i} A{i - 1} A{i - 1}\n" for i in range(1, 40))
    run("macro of 2^39 tokens", ["eval", spec_path, candidate("macro.cu", launch(), doubling + "int A39;\n" + k_kernel),
                                 "--compile-only"], 1)

    # --- a shared spec ---
    run("roofline of 100,000 parentheses", ["task", "check", spec_variant(
        "roofline_deep", lambda s: set_path(s, ["roofline", "flops"], deep))], 3)
    run("constraint of 200,000 '!'", ["task", "check", spec_variant(
        "constraint_bang", lambda s: s.update(constraints=["!" * 200000 + "M"]))], 3)
    # task check compiles the reference and both seeds (every param point) with NVRTC: its time is
    # those compiles, as the unchanged spec's row shows; eval screens one candidate and compiles it.
    run("task check of the unchanged spec (baseline)", ["task", "check", spec_path], 0, max_seconds=None)
    bomb = spec_variant("forbid_bomb", lambda s: s["forbid"].append({"pattern": "((((.*)*)*)*)*zq9", "reason": "b"}))
    run("forbid ((((.*)*)*)*)*zq9: task check", ["task", "check", bomb], 0, max_seconds=None)
    run("forbid ((((.*)*)*)*)*zq9: eval", ["eval", bomb, candidate("screened.cu", launch()), "--compile-only"], 0)
    run("forbid with a backreference", ["task", "check", spec_variant(
        "forbid_backref", lambda s: s["forbid"].append({"pattern": "(a)\\1", "reason": "perl only"}))], 3)
    run("reference ../../../../etc/passwd", ["task", "check", spec_variant(
        "escape", lambda s: s.update(reference="../../../../../../etc/passwd"))], 3)
    run("reference /etc/passwd", ["task", "check", spec_variant(
        "absolute", lambda s: s.update(reference="/etc/passwd"))], 3)
    link_spec = spec_variant("link", lambda s: s.update(reference="passwd.cu"))
    os.symlink("/etc/passwd", os.path.join(os.path.dirname(link_spec), "passwd.cu"))
    run("reference: a symlink to /etc/passwd", ["task", "check", link_spec], 3)
    run("roofline divided by zero", ["task", "check", spec_variant(
        "roofline_zero", lambda s: set_path(s, ["roofline", "bytes"], "8 * M * N / (N - N)"))], 3)
    run("rtol 1 / (N - N)", ["task", "check", spec_variant(
        "rtol_zero", lambda s: set_path(s, ["args", 1, "check", "rtol"], "1 / (N - N)"))], 3)
    run("rtol sqrt(-1)", ["task", "check", spec_variant(
        "rtol_sqrt", lambda s: set_path(s, ["args", 1, "check", "rtol"], "sqrt(-1)"))], 3)
    run("plant at M * N", ["task", "check", spec_variant(
        "plant_end", lambda s: set_path(s, ["args", 0, "gen", "plants", 0, "at"], "M * N"))], 3)
    run("plant at -1", ["task", "check", spec_variant(
        "plant_neg", lambda s: set_path(s, ["args", 0, "gen", "plants", 0, "at"], "-1"))], 3)
    run("default_plan block -256", ["task", "check", spec_variant(
        "block_neg", lambda s: set_path(s, ["default_plan", "launches", 0, "block"], [-256]))], 3)
    std_spec = spec_variant("std_huge", lambda s: None)
    open(std_spec, "w").write(open(std_spec).read().replace('"std": 4', '"std": 1e400'))
    run("std 1e400", ["task", "check", std_spec], 3)
    seed_spec = spec_variant("seed_digits", lambda s: None)
    open(seed_spec, "w").write(open(seed_spec).read().replace('"seed": 11', '"seed": ' + "9" * 5000))
    run("seed of 5000 digits", ["task", "check", seed_spec], 3)
    run("task check /dev/zero", ["task", "check", "/dev/zero"], 3)
    run("a directory as the spec", ["task", "check", os.path.join(here, "tasks")], 3)
    run("a directory as the reference", ["task", "check", spec_variant(
        "ref_dir", lambda s: s.update(reference="softmax_f32"))], 3)
    run("a directory as a seed", ["task", "check", spec_variant(
        "seed_dir", lambda s: s.update(seeds=["softmax_f32"]))], 3)

    # --- archives and outputs ---
    for table in ["candidate", "run", "measurement", "llm_call", "elite", "search_state"]:
        damaged = os.path.join(work, f"no_{table}.kforge")
        shutil.copy(sample_archive, damaged)
        with sqlite3.connect(damaged) as db:
            db.execute("PRAGMA foreign_keys = OFF")
            db.execute(f"DROP TABLE {table}")
        for command in (["inspect", damaged], ["report", damaged, "-o", os.path.join(work, f"r_{table}.html")],
                        ["export", damaged, "--best", "-o", os.path.join(work, f"e_{table}.cu")],
                        ["dataset", damaged, "-o", os.path.join(work, f"d_{table}.jsonl")],
                        ["resume", damaged]):
            # dataset's records need neither elite nor search_state, export needs neither those nor
            # llm_call: each says which table is missing and writes what it can read.
            unneeded = {"dataset": ("elite", "search_state"), "export": ("elite", "search_state", "llm_call")}
            needed = table not in unneeded.get(command[0], ())
            run(f"{command[0]}: no '{table}' table", command, 3 if needed else 0)
    old = os.path.join(work, "schema1.kforge")
    shutil.copy(sample_archive, old)
    with sqlite3.connect(old) as db:
        db.execute("PRAGMA foreign_keys = OFF")
        for table in ["candidate_technique", "candidate_plan", "candidate_gpu", "gpu_session", "gpu"]:
            db.execute(f"DROP TABLE IF EXISTS {table}")
        db.execute("DELETE FROM schema_version WHERE version > 1")
    before = digest(old)
    run("resume of a schema-1 archive, no GPU", ["resume", old, "--no-knowledge", "--budget", "+4"], 4,
        check=lambda: "unchanged" if digest(old) == before else "! CHANGED")
    loop = os.path.join(work, "loop.kforge")
    shutil.copy(sample_archive, loop)
    with sqlite3.connect(loop) as db:
        ids = [row[0] for row in db.execute("SELECT id FROM candidate ORDER BY id LIMIT 2")]
        db.execute("UPDATE candidate SET parent_id = ? WHERE id = ?", (ids[1], ids[0]))
        db.execute("UPDATE candidate SET parent_id = ? WHERE id = ?", (ids[0], ids[1]))
    run("inspect --lineage of a parent loop", ["inspect", loop, "--lineage", str(ids[0])], 3)
    fifo = os.path.join(work, "fifo")
    os.mkfifo(fifo)
    for command in (["export", "--best"], ["report"], ["dataset", "--force"]):
        run(f"{command[0]} -o FIFO", command[:1] + [sample_archive] + command[1:] + ["-o", fifo], 2,
            check=lambda: "still a FIFO" if os.path.exists(fifo) and not os.path.isfile(fifo) else "! replaced")
        run(f"{command[0]} -o /dev/full", command[:1] + [sample_archive] + command[1:] + ["-o", "/dev/full"], 2,
            check=lambda: "still a device" if not os.path.isfile("/dev/full") else "! replaced")

    # --- the command line and providers ---
    for model in ("openai:x@notaurl", "openai:x@ftp://host/v1"):
        run(f"--model {model}", ["optimize", spec_path, "--model", model], 2)
    for args in (["inspect", sample_archive, "--top", "-5"], ["inspect", sample_archive, "--limit", "-1"],
                 ["eval", spec_path, "x.cu", "--secret", "-1"], ["optimize", spec_path, "--budget", "1e99"],
                 ["eval", spec_path, candidate("ok.cu", launch()), "--compile-only", "--arch", "sm_banana"]):
        run(" ".join(a for a in args[2:] if not a.startswith("/")), args, 2)
finally:
    shutil.rmtree(work, ignore_errors=True)

width = max(len(row[0]) for row in rows)
print(f"{'case':<{width}}  {'rc/want':>8} {'s':>6} {'MB':>5}  message")
for name, rc, seconds, mb, message in rows:
    print(f"{name:<{width}}  {rc:>8} {seconds:>6} {mb:>5}  {message}")
print(f"{len(rows)} cases, {'some over the bound or with another exit code (!)' if failed else 'all within 2 s and 200 MB with the expected exit code'}")
sys.exit(1 if failed else 0)
