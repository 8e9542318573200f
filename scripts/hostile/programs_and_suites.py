#!/usr/bin/env python3
"""Hostile input, second round: programs, suites and manifests that misbehave, run
against a built kforge on the CPU (simulated GPUs). One row per case: exit code (and the one
expected), wall seconds, processes the case left behind, and the first line kforge printed about
it. A row with another exit code, a leftover process or a run past its bound is marked '!' and the
script exits 1.

    scripts/hostile/programs_and_suites.py [KFORGE]     (default build/dev/src/cli/kforge; needs python3 with torch)

Every program is imported with `kforge task import` (the importer runs it about 60 times); every
process a program starts records its pid in a file, and each row checks that none is left.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # scripts/hostile/ -> the repository
kforge = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "build/dev/src/cli/kforge"))
rows = []
failed = False

PROGRAM = """import os, subprocess, sys, time, signal
import torch
rows = 64
{top}
class Model(torch.nn.Module):
    def forward(self, x):
{forward}
def get_inputs():
{inputs}
def get_init_inputs():
    return []
"""


def program(name, top="", forward="        return x * 2", inputs="    return [torch.randn(rows, 8)]"):
    path = os.path.join(work, name + ".py")
    with open(path, "w") as f:
        f.write(PROGRAM.format(top=top, forward=forward, inputs=inputs))
    return path


def note_pid(expr="os.getpid()"):
    return f"open({os.path.join(work, 'pids.txt')!r}, 'a').write(str({expr}) + '\\n')"


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError):
        return False


def leftovers():
    """Processes the case's programs started that still run (after a short grace)."""
    path = os.path.join(work, "pids.txt")
    if not os.path.exists(path):
        return []
    pids = [int(x) for x in open(path).read().split()]
    deadline = time.time() + 3
    while time.time() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    left = [p for p in pids if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    os.remove(path)
    return left


def record(name, rc, expect_rc, seconds, max_seconds, text, extra=""):
    global failed
    left = leftovers()
    lines = [line for line in text.splitlines() if line.strip()]
    first = next((line for line in lines if any(w in line for w in ("error", "failed", "stopped", "unreadable", "damaged"))),
                 lines[-1] if lines else "")
    bad = rc != expect_rc or seconds > max_seconds or bool(left) or extra.startswith("!")
    failed = failed or bad
    rows.append((("! " if bad else "  ") + name, f"{rc}/{expect_rc}", f"{seconds:.1f}", str(len(left)),
                 (extra + " " if extra else "") + first.replace(work, "$TMP")[:120]))


def run(name, args, expect_rc, max_seconds=60, env=None, check=None, signal_after=None):
    full_env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"), KFORGE_NO_KNOWLEDGE="1", **(env or {}))
    began = time.time()
    proc = subprocess.Popen([kforge] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", env=full_env, stdin=subprocess.DEVNULL)
    if signal_after:
        when, sig, ready = signal_after
        while time.time() - began < when and not (ready and ready()):
            time.sleep(0.05)
        proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=180)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        rc = "timeout"
    seconds = time.time() - began
    record(name, rc, expect_rc, seconds, max_seconds, err + out, check() if check else "")


def imported(name, path, expect_rc, max_seconds=60, extra=(), **kw):
    spec = os.path.join(work, name + ".json")
    run(name, ["task", "import", path, "-o", spec, "--force", *extra], expect_rc, max_seconds, **kw)


def main():
    daemon = ("_d = subprocess.Popen(['sleep', '61'], start_new_session=True)\n" + note_pid("_d.pid"))
    double_fork = """
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        """ + note_pid() + """
        time.sleep(61)
    os._exit(0)
"""
    # -- programs ------------------------------------------------------------------------------
    imported("daemon-at-import", program("p1", top=daemon), 0)
    imported("double-fork-daemon", program("p2", top=double_fork), 0)
    imported("fork-and-continue", program("p3", top=note_pid("os.fork() or os.getpid()")), 0)
    imported("hang-in-get_inputs+daemon", program("p4", top=daemon, inputs="    time.sleep(3600)"), 3, 15,
             extra=["--time-limit", "5"])
    imported("hang-in-forward", program("p5", forward="        time.sleep(3600)"), 3, 15, extra=["--time-limit", "5"])
    imported("hang-at-import-sigterm", program("p6", top=daemon + "\ntime.sleep(3600)"), 130, 15,
             signal_after=(30, signal.SIGTERM, lambda: os.path.exists(os.path.join(work, "pids.txt"))))
    imported("os._exit(0)-in-get_inputs", program("p7", inputs="    os._exit(0)"), 3)
    imported("sys.exit(3)-at-import", program("p8", top="sys.exit(3)"), 3)
    imported("SIGKILL-self-in-forward", program("p9", forward="        os.kill(os.getpid(), 9)"), 3)
    imported("SIGSEGV-self-at-import", program("p10", top="os.kill(os.getpid(), signal.SIGSEGV)"), 3)
    imported("closes-stdout-at-import", program("p11", top="os.close(1)"), 3)
    imported("100MB-on-stderr", program("p12", top="sys.stderr.write('x' * (100 << 20))"), 0, 90)
    imported("torch.empty(10**13)", program("p13", top="big = torch.empty(10 ** 13)"), 3)
    imported("bytearray(10**13)", program("p14", top="big = bytearray(10 ** 13)"), 3)
    imported("cuda-inputs-on-cpu-import", program("p15", inputs="    return [torch.randn(rows, 8, device='cuda')]"), 0,
             check=lambda: "(made on the import's device, as documented in device_mode.py)")
    imported("meta-inputs", program("p16", inputs="    return [torch.empty(rows, 8, device='meta')]"), 3)
    imported("forward-returns-numpy", program("p17", forward="        return (x * 2).numpy()"), 3)
    imported("chdir-root-at-import", program("p18", top="os.chdir('/')"), 0)
    outside = os.path.join(work, "outside", "written.txt")
    os.makedirs(os.path.dirname(outside))
    imported("writes-outside-its-folder", program("p19", top=f"open({outside!r}, 'w').write('x')"), 0,
             check=lambda: "(the file was written: a program runs as you, unsandboxed; docs/torch-tasks.md)"
             if os.path.exists(outside) else "")
    with open(os.path.join(work, "nul.py"), "wb") as f:
        f.write(PROGRAM.format(top="x = 1\0", forward="        return x", inputs="    return []").encode())
    imported("NUL-byte", os.path.join(work, "nul.py"), 3)
    os.makedirs(os.path.join(work, "folder.py"))
    imported("a-folder", os.path.join(work, "folder.py"), 3)
    imported("/dev/zero", "/dev/zero", 3)
    os.mkfifo(os.path.join(work, "fifo.py"))
    imported("a-FIFO", os.path.join(work, "fifo.py"), 3, 10)

    # -- suites whose folders change under them ------------------------------------------------
    sim = {"KFORGE_SIMULATE_GPUS": "1"}
    tasks = [os.path.join(here, "tasks", t + ".json") for t in ("axpy_f32", "transpose_f32", "reduce_sum_f32")]

    def garbage_manifest(root):
        open(os.path.join(root, "suite.json"), "w").write("{not json")

    def remove_archive(root):
        os.remove(os.path.join(root, "runs", "axpy_f32.kforge"))

    def remove_manifest(root):
        os.remove(os.path.join(root, "suite.json"))

    def hostile_path(root):
        m = json.load(open(os.path.join(root, "suite.json")))
        m["problems"][0]["archive"] = "../../escaped.kforge"
        json.dump(m, open(os.path.join(root, "suite.json"), "w"))

    def damage_archive(root):
        with open(os.path.join(root, "runs", "transpose_f32.kforge"), "r+b") as f:
            f.seek(100)
            f.write(b"\xff" * 4096)

    for name, change, again in (("suite: manifest made garbage", garbage_manifest, 3),
                                ("suite: a finished archive deleted", remove_archive, 1),
                                ("suite: manifest deleted", remove_manifest, 2),
                                ("suite: an archive path edited to ../..", hostile_path, 3),
                                ("suite: an archive overwritten", damage_archive, 1)):  # rc 1: no result
        root = os.path.join(work, name.split(":")[1].strip().replace(" ", "-").replace("/", "-"))
        run(name, ["suite", "run", *tasks, "-o", root, "--budget", "3", "--progress", "lines"], 0, 120, env=sim)
        change(root)
        run(name + ", run again", ["suite", "run", "-o", root, "--progress", "lines"], again, 120, env=sim,
            check=lambda: "! wrote outside the suite" if os.path.exists(os.path.join(work, "escaped.kforge")) else "")

    # A suite folder removed while its runs run: the runs fail, the suite ends, nothing hangs.
    root = os.path.join(work, "vanishing")
    began = time.time()
    proc = subprocess.Popen([kforge, "suite", "run", *tasks, "-o", root, "--time", "15s", "--progress", "lines"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                            env=dict(os.environ, **sim, XDG_CACHE_HOME=os.path.join(work, "cache")))
    time.sleep(4)
    shutil.rmtree(root, ignore_errors=True)
    try:
        out, err = proc.communicate(timeout=120)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        rc = "timeout"
    record("suite: folder removed mid-run", rc, rc if rc in (3, 4) else "3 or 4", time.time() - began, 60, err + out)

    widths = [max(len(str(r[i])) for r in rows + [("case", "rc/want", "s", "left", "")]) for i in range(4)]
    header = ("case", "rc/want", "s", "left", "first line")
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths + [0])))
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths + [0])))
    return 1 if failed else 0


if __name__ == "__main__":
    work = tempfile.mkdtemp(prefix="kforge-hostile35-")
    try:
        code = main()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(code)
