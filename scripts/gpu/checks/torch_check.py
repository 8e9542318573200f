#!/usr/bin/env python3
"""The Python steps of scripts/gpu/checks/torch.sh (imported PyTorch programs on a GPU machine).

    gpu-torch-check.py prewarm SPEC                 torch.compile the program once at its bench shape
                                                    through the reference process (fills the inductor
                                                    caches, so the timed compiles later are warm)
    gpu-torch-check.py verdicts PROBLEM DATASET OUT check every candidate of a replayed optimize run
                                                    (`kforge dataset` lines) against expected.json; the
                                                    fastest correct one's source goes to best.cu beside OUT
    gpu-torch-check.py modelnew SPEC EXPORT OUT [--build-only]
                                                    build the exported operator (EXPORT = the .cu
                                                    `export --torch` wrote); unless --build-only, check
                                                    ModelNew against Model at the bench shape
    gpu-torch-check.py prepare OUT SPEC...          the reference process's `prepare expected` at each
                                                    bench shape through IPC, cold and warm, against
                                                    PyTorch alone (scripts/gpu/checks/torch_ipc.py's part 2)
    gpu-torch-check.py table OUT                    the final table from the steps' JSON files in OUT

Each step writes what it found as JSON (OUT) for the table; exit status 0 when the step passed.
"""
import copy
import importlib.util
import json
import math
import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[3]  # scripts/gpu/checks/ -> the repository
sys.path.insert(0, str(ROOT / "python"))
REPLIES = ROOT / "tests/fixtures/torch/replies"


def load_spec(path):
    spec = json.loads(pathlib.Path(path).read_text())
    spec["_dir"] = pathlib.Path(path).resolve().parent
    return spec


def free_symbols(spec):
    return [name for name, s in spec["symbols"].items() if "value" not in s]


def bench_sizes(spec):
    shape = spec["shapes"]["bench"][0]
    return {name: shape[name] for name in free_symbols(spec)}


def write_json(path, value):
    pathlib.Path(path).write_text(json.dumps(value, indent=1) + "\n")


# ---- prewarm ----------------------------------------------------------------------------------------
def prewarm(spec_path):
    from kforge_torch.reference_client import ReferenceClient
    spec = load_spec(spec_path)
    began = time.time()
    with ReferenceClient() as client:
        reply = client.ask({"op": "setup", "problem": str(spec["_dir"] / spec["reference"]["torch"]),
                            "symbols": free_symbols(spec), "args": spec["args"], "device": "cuda"})
        if not reply.get("ok"):
            print(f"prewarm {spec['name']}: setup failed: {reply.get('error')}")
            return 1
        reply = client.ask({"op": "time", "sizes": bench_sizes(spec), "input_seed": 1, "param_seed": 2,
                            "modes": ["compile"], "flush_bytes": 0, "min_samples": 1, "max_samples": 1,
                            "target_seconds": 0, "compile_limit_seconds": 300})
    compiled = reply.get("compile", {}) if reply.get("ok") else {"error": reply.get("error")}
    if "error" in compiled:
        print(f"prewarm {spec['name']}: torch.compile failed: {compiled['error']}")
    else:
        print(f"prewarm {spec['name']}: torch.compile took {compiled.get('compile_seconds', 0):.1f} s "
              f"({time.time() - began:.1f} s in all)")
    return 0


# ---- verdicts ---------------------------------------------------------------------------------------
def reply_texts(problem):
    spec = importlib.util.spec_from_file_location("make_replay_torch", ROOT / "scripts/replay/torch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    expected = json.loads((REPLIES / "expected.json").read_text())["problems"][problem]
    return [(module.reply_text(problem, r), r) for r in expected["replies"]]


def verdicts(problem, dataset_path, out_path):
    replies = reply_texts(problem)
    seen, rows, extra = set(), [], []
    for line in pathlib.Path(dataset_path).read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") != "candidate":
            continue
        call = record.get("call") or {}
        text = call.get("reply", "")
        match = [i for i, (t, _) in enumerate(replies) if t == text]
        if not match:
            extra.append(record)
            continue
        i = match[0]
        seen.add(i)
        want = replies[i][1]
        got, message = record["verdict"], record.get("verdict_message") or ""
        ok = got == want["verdict"] and want["message"] in message
        rows.append({"reply": want["file"] or "(no code)", "expected": want["verdict"], "got": got, "ok": ok,
                     "message": message[:300], "candidate": record["candidate_id"]})
    for i, (_, want) in enumerate(replies):
        if i not in seen:
            rows.append({"reply": want["file"] or "(no code)", "expected": want["verdict"], "got": "not served",
                         "ok": False, "message": "no candidate came from this reply"})
    # The run's budget is one above the reply count: one call after the last reply finds none left.
    exhausted = [r for r in extra if r["verdict"] == "no_code" and "have been served" in (r.get("verdict_message") or "")]
    unexplained = [r for r in extra if r not in exhausted]
    for r in unexplained:
        rows.append({"reply": "(unexpected candidate)", "expected": "-", "got": r["verdict"], "ok": False,
                     "message": f"candidate {r['candidate_id']} ({r.get('origin')}): {r.get('verdict_message')}"[:300]})
    for row in rows:
        print(f"  {'ok ' if row['ok'] else 'BAD'} {row['reply']:<26} expected {row['expected']:<15} got {row['got']:<15}"
              + ("" if row["ok"] else f" {row['message']}"))
    all_ok = all(r["ok"] for r in rows)
    # The fastest correct reply of the run, for `kforge eval` (its source beside OUT as best.cu).
    best, best_reply = None, None
    for line in pathlib.Path(dataset_path).read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == "candidate" and record.get("verdict") == "correct" and record.get("fitness"):
            if best is None or record["fitness"] > best["fitness"]:
                best = record
    if best:
        text = (best.get("call") or {}).get("reply", "")
        best_reply = next((r["file"] for t, r in replies if t == text), None)
        pathlib.Path(out_path).with_name("best.cu").write_text(best["source"])
        expected_best = json.loads((REPLIES / "expected.json").read_text())["problems"][problem]["best"]
        print(f"  fastest correct reply: {best_reply} (candidate {best['candidate_id']}, fitness {best['fitness']:.3f}; "
              f"expected.json names {expected_best})")
    write_json(out_path, {"problem": problem, "as_expected": all_ok, "replies": rows, "best_reply": best_reply})
    return 0 if all_ok else 1


# ---- ModelNew ---------------------------------------------------------------------------------------
def evaluate_expr(text, names):
    allowed = {"sqrt": math.sqrt, "abs": abs, "min": min, "max": max, "log2": math.log2,
               "ceil_div": lambda a, b: -(-a // b), "cdiv": lambda a, b: -(-a // b)}
    return float(eval(text, {"__builtins__": {}}, {**allowed, **names}))


def as_list(outputs):
    return list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]


def modelnew(spec_path, export_path, out_path, build_only):
    import torch
    spec = load_spec(spec_path)
    export = pathlib.Path(export_path)
    loader_path = export.with_name(export.stem + "_load.py")
    result = {"problem": spec["name"], "export": str(export)}
    began = time.time()
    module_spec = importlib.util.spec_from_file_location("kforge_loader_" + spec["name"], loader_path)
    loader = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(loader)
    loader.load_op()
    result["build_seconds"] = time.time() - began
    if build_only:
        print(f"modelnew {spec['name']}: operator built in {result['build_seconds']:.1f} s")
        return 0
    if not hasattr(loader, "ModelNew"):
        result.update(ok=False, problem_text=f"{loader_path} defines no ModelNew")
        write_json(out_path, result)
        print(f"modelnew {spec['name']}: {result['problem_text']}")
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    program = loader._PROBLEM  # the program with its own (bench) sizes
    torch.manual_seed(1234)
    # Each in the mode its constructor leaves it, as kforge's reference runs it (KernelBench runs
    # models in training mode: a BatchNorm normalises with the batch's own statistics).
    model = program.Model(*program.get_init_inputs()).cuda()
    new = loader.ModelNew(*program.get_init_inputs()).cuda()
    new.load_state_dict(model.state_dict())
    torch.manual_seed(5678)
    with torch.device("cuda"):
        inputs = [t.cuda() if isinstance(t, torch.Tensor) else t for t in program.get_inputs()]
    with torch.no_grad():
        got = as_list(new(*inputs))
        model64 = copy.deepcopy(model).double()
        inputs64 = [t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]
        reference = as_list(model64(*inputs64))
    names = dict(bench_sizes(spec))
    names.update(spec.get("constants", {}))
    outputs = sorted((a for a in spec["args"] if a.get("intent") == "out"), key=lambda a: int(a["from"].split()[1]))
    checks, ok = [], True
    for arg, mine, ref64 in zip(outputs, got, reference):
        ref = ref64.to(mine.dtype)  # the reference as the output dtype holds it, as kforge compares
        # KernelBench fails a shape mismatch; when only the shape differs (a 0-dim output that the
        # operator returns as [1]) the values are still compared, so the report says which it is.
        shape_problem = ""
        if tuple(mine.shape) != tuple(ref.shape) or mine.dtype != ref.dtype:
            shape_problem = (f"ModelNew gives {tuple(mine.shape)} {mine.dtype} where Model gives "
                             f"{tuple(ref.shape)} {ref.dtype}")
            if mine.numel() != ref.numel():
                checks.append({"output": arg["name"], "ok": False, "problem": shape_problem})
                ok = False
                continue
            mine, ref = mine.reshape(-1), ref.reshape(-1).to(mine.dtype)
        if arg["check"].get("metric") == "exact":
            bad = int((mine != ref).sum())
            checks.append({"output": arg["name"], "ok": bad == 0 and not shape_problem, "mismatches": bad,
                           "rule": "exact", "problem": shape_problem})
            ok = ok and bad == 0 and not shape_problem
            continue
        m, r = mine.double(), ref.double()
        names["max_abs_ref"] = float(r.abs().max())
        atol, rtol = evaluate_expr(arg["check"]["atol"], names), evaluate_expr(arg["check"]["rtol"], names)
        error = (m - r).abs()
        allowed = atol + rtol * r.abs()
        finite = torch.isfinite(r)
        bad = int(((error > allowed) | (~torch.isfinite(m) & finite)).sum())
        worst = float((error / allowed)[finite].max())
        checks.append({"output": arg["name"], "ok": bad == 0 and not shape_problem, "mismatches": bad,
                       "worst_error_over_tolerance": worst, "rule": f"|got - fp64| <= {atol:.3g} + {rtol:.3g} |fp64|",
                       "problem": shape_problem})
        ok = ok and bad == 0 and not shape_problem
    result.update(ok=ok, outputs=checks, shape=bench_sizes(spec))
    if os.environ.get("KF_MODELNEW_TIME") == "1":
        # ModelNew's forward timed as kforge times a candidate: CUDA events around each call, the L2
        # flushed before each (a 256 MiB write), the median of 50 after 5 warm-up calls.
        flush = torch.empty(64 * 1024 * 1024, dtype=torch.float32, device="cuda")
        times = []
        with torch.no_grad():
            for i in range(55):
                flush.zero_()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                new(*inputs)
                end.record()
                end.synchronize()
                if i >= 5:
                    times.append(start.elapsed_time(end))
        times.sort()
        result["modelnew_ms"] = times[len(times) // 2]
        print(f"modelnew {spec['name']}: {result['modelnew_ms']:.4f} ms per forward (median of {len(times)})")
    write_json(out_path, result)
    for c in checks:
        values = (f"worst error/tolerance {c['worst_error_over_tolerance']:.3g}" if "worst_error_over_tolerance" in c
                  else f"{c['mismatches']} mismatches" if "mismatches" in c else "")
        detail = "; ".join(x for x in (c.get("problem"), values) if x)
        print(f"modelnew {spec['name']} {c['output']}: {'matches' if c['ok'] else 'DIFFERS from'} Model at the bench shape "
              f"({detail})")
    return 0 if ok else 1


# ---- reference preparation ------------------------------------------------------------------------
def facts_from_spec(spec):
    """What gpu-torch-ipc.py's part 2 reads of the importer's facts, rebuilt from an imported spec."""
    args = []
    for arg in spec["args"]:
        role, _, where = arg["from"].partition(" ")
        entry = {"name": arg["name"], "dtype": arg["dtype"], "role": role,
                 "kind": "tensor" if "shape" in arg else "scalar"}
        entry.update({"key": where} if role == "param" else {"index": int(where)})
        if "shape" in arg:
            entry["dims"] = arg["shape"]
        else:
            entry["value"] = arg["value"]
        args.append(entry)
    return {"problem": str(spec["_dir"] / spec["reference"]["torch"]), "symbols": free_symbols(spec),
            "shapes": {"bench": [bench_sizes(spec)]}, "args": args}


def prepare(out_path, spec_paths):
    module_spec = importlib.util.spec_from_file_location("gpu_torch_ipc", ROOT / "scripts/gpu/checks/torch_ipc.py")
    ipc = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(ipc)
    import torch
    torch.empty(1, device="cuda")  # torch's context first; the driver calls use it
    driver = ipc.Driver(ipc.EXTRA_CALLS)
    driver.ensure_context()
    rows = []
    for path in spec_paths:
        spec = load_spec(path)
        try:
            row = ipc.part2(driver, spec["name"], facts_from_spec(spec), ["eager"])
        except Exception as e:  # a reference process that died: the row says so, the others still run
            row = {"problem": spec["name"], "error": f"{type(e).__name__}: {e}"}
        rows.append(row)
        if "error" in row:
            print(f"prepare {spec['name']}: {row['error']}")
        else:
            warm = min(row["warm"], row["warm2"])
            print(f"prepare {spec['name']}: cold {row['cold']:.3f} s, warm {warm:.3f} s; PyTorch alone {row['plain']:.3f} s "
                  f"(fp32), {row['plain64']:.3f} s (fp64): warm / fp64 = {warm / row['plain64']:.2f}", flush=True)
    write_json(out_path, rows)
    return 0 if all("error" not in r for r in rows) else 1


# ---- the table -------------------------------------------------------------------------------------
def read(path):
    try:
        return json.loads(pathlib.Path(path).read_text())
    except (OSError, ValueError):
        return None


def table(out_dir):
    out = pathlib.Path(out_dir)
    prep = {r["problem"]: r for r in (read(out / "prepare.json") or [])}
    problems = json.loads((REPLIES / "expected.json").read_text())["problems"]
    header = ("| problem | import s | prepare s (bench, warm) | vs torch alone | best reply | best kernel | torch eager | "
              "torch.compile | vs eager | vs compile | verdicts as expected | ModelNew = Model |")
    lines = [header, "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---|"]
    all_ok = True
    for problem in problems:
        if not (out / problem).is_dir():
            continue
        text = lambda name: (out / problem / name).read_text().strip() if (out / problem / name).is_file() else ""
        evaluation = read(out / problem / "eval.json") or {}
        verdict = read(out / problem / "verdicts.json") or {}
        model = read(out / problem / "modelnew.json") or {}
        shape = (evaluation.get("shapes") or [{}])[0]
        best, eager, compiled = shape.get("median_ns"), shape.get("reference_ns"), shape.get("vendor_ns")
        if shape.get("vendor_subject") not in (None, "torch_compile"):
            compiled = None
        us = lambda ns: f"{ns / 1e3:.1f} us" if ns else "-"
        ratio = lambda a, b: f"{a / b:.2f}x" if a and b else "-"
        p = prep.get(problem, {})
        warm = min(p["warm"], p["warm2"]) if "warm" in p else None
        verdicts_ok = verdict.get("as_expected")
        model_ok = model.get("ok")
        correct = evaluation.get("verdict") == "correct"
        checked = text("import.rc") == "0" and text("check.rc") == "0"
        all_ok = all_ok and bool(verdicts_ok) and bool(model_ok) and correct and checked
        import_cell = (text("import.seconds") or "-") if text("import.rc") == "0" else "FAILED"
        if text("import.rc") == "0" and text("check.rc") != "0":
            import_cell += " (task check FAILED)"
        lines.append(f"| {problem} | {import_cell} | {f'{warm:.2f}' if warm else '-'} | "
                     f"{ratio(warm, p.get('plain64'))} | {verdict.get('best_reply') or '-'} | "
                     f"{us(best) if correct else evaluation.get('verdict', '-')} | "
                     f"{us(eager)} | {us(compiled)} | {ratio(eager, best)} | {ratio(compiled, best)} | "
                     f"{'yes' if verdicts_ok else 'NO'} | {'yes' if model_ok else 'NO'} |")
    print("\n".join(lines))
    print("\ncolumns: import s = `kforge task import` wall time; prepare s = the reference process's `prepare "
          "expected` at the bench shape, warm (scripts/gpu/checks/torch_ipc.py part 2), and its ratio to PyTorch making the "
          "inputs and running the forward in fp64 itself; best reply = the fastest correct reply of the optimize run; best "
          "kernel = `kforge eval` of it (CUPTI median, L2 flushed) against torch eager and torch.compile timed in the "
          "same worker; verdicts = every "
          "replayed reply got its expected verdict (and task check passed); ModelNew = the exported ModelNew matches "
          "Model (fp64) at the bench shape within the task's tolerance")
    return 0 if all_ok else 1


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    command, rest = argv[1], argv[2:]
    if command == "prewarm" and len(rest) == 1:
        return prewarm(rest[0])
    if command == "verdicts" and len(rest) == 3:
        return verdicts(*rest)
    if command == "modelnew" and len(rest) in (3, 4):
        return modelnew(rest[0], rest[1], rest[2], "--build-only" in rest[3:])
    if command == "prepare" and len(rest) >= 2:
        return prepare(rest[0], rest[1:])
    if command == "table" and len(rest) == 1:
        return table(rest[0])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
