"""`assemble`: MODEL_kforge.py, the user's model with kforge's kernels in the regions they won; and
`check`: the assembled model against the original on fresh inputs, and both timed.

DIR/winners.json (written by `kforge model assemble`) names each region problem whose best kernel
beat both torch eager and torch.compile on that region, with the export's loader and the task's
tolerance. MODEL_kforge.py sits in DIR beside a copy of the model file (DIR/model/) and
kforge_runtime/ (capture, regions, runtime: torch alone), so DIR can be moved or copied as a whole.
"""
import json
import os
import pprint
import shutil
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIME_FILES = ("capture.py", "regions.py", "runtime.py")

TEMPLATE = '''"""{stem} with kforge's kernels in the regions where they beat torch eager and torch.compile.

kforge model assemble wrote this file from {folder}/model.json and winners.json. Model is the
model's own class (same constructor, parameters, buffers and state_dict) with a forward that runs
the captured model region by region, calling kforge's exported operator in each replaced region:
{replaced}
Everything else runs as the model's own operators. At input sizes other than the extracted ones the
regions differ and nothing is replaced. Inference only (the kernels have no backward). Set
KFORGE_MODEL_REGIONS=reference to run the replaced regions' own operators through the same wiring.

Each replaced region is the exported C++ operator torch.ops.kforge.<problem> with a fake kernel,
so the model runs eagerly, under torch.compile (any mode) and as a CUDA graph:
    model = Model(...).cuda().eval(); model(*inputs)             # the first call captures the model
    graphed = model.graphed(*inputs); out = graphed(*inputs)     # the whole forward as a CUDA graph
    compiled = torch.compile(model, mode="max-autotune")         # after one eager call
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from kforge_runtime.runtime import Assembly, GraphedForward, load_module  # noqa: E402

_ORIGINAL = load_module(os.path.join(HERE, "model", {model_file!r}), "kforge_original_{ident}")
globals().update({{k: v for k, v in vars(_ORIGINAL).items() if not k.startswith("__") and k != "Model"}})

REGIONS = {regions}
for _region in REGIONS:
    _region["loader"] = os.path.join(HERE, _region["loader"])
_MODE = os.environ.get("KFORGE_MODEL_REGIONS", "kernels")


class Model(_ORIGINAL.Model):
    """{stem}'s Model; forward runs kforge's kernels where they won."""

    def forward(self, *inputs):
        assembly = self.__dict__.get("_kforge_assembly")
        if assembly is None:
            assembly = self.__dict__["_kforge_assembly"] = Assembly(REGIONS, _MODE)
        if assembly.capturing:  # the capture records the model's own forward
            return _ORIGINAL.Model.forward(self, *inputs)
        return assembly.forward(self, list(inputs))

    def graphed(self, *example_inputs):
        """This forward as a CUDA graph, captured on `example_inputs` (which become its input
        buffers: call it with those tensors, or others of their shapes, which are copied in) and
        replayed on every call; its outputs are overwritten by the next call."""
        return GraphedForward(self, example_inputs)
'''


def assemble(folder, under_compile=None):
    """Writes MODEL_kforge.py and its runtime; `under_compile` (problem ids) marks which replaced
    regions stay operators under torch.compile (all, when None)."""
    with open(os.path.join(folder, "model.json"), encoding="utf-8") as f:
        document = json.load(f)
    winners_path = os.path.join(folder, "winners.json")
    winners = []
    if os.path.exists(winners_path):
        with open(winners_path, encoding="utf-8") as f:
            winners = json.load(f)["winners"]
    rows = {r["id"]: r for r in document["regions"]}
    plan = []
    for winner in winners:
        row = rows.get(winner["problem"])
        if row is None:
            raise ValueError(f"winners.json names {winner['problem']}, which model.json does not have")
        ident = "".join(c if c.isalnum() else "_" for c in winner["problem"])
        plan.append({"key": row["key"], "problem": winner["problem"], "loader": winner["loader"],
                     "attrs": row["attrs"], "op": ident, "count": row["count"],
                     "under_compile": under_compile is None or winner["problem"] in under_compile})
    model_path = document["model"]
    model_file = os.path.basename(model_path)
    stem = os.path.splitext(model_file)[0]
    os.makedirs(os.path.join(folder, "model"), exist_ok=True)
    shutil.copyfile(model_path, os.path.join(folder, "model", model_file))
    runtime = os.path.join(folder, "kforge_runtime")
    os.makedirs(runtime, exist_ok=True)
    for name in RUNTIME_FILES:
        shutil.copyfile(os.path.join(HERE, name), os.path.join(runtime, name))
    with open(os.path.join(runtime, "__init__.py"), "w", encoding="utf-8") as f:
        f.write('"""kforge model\'s runtime, copied beside MODEL_kforge.py (torch alone)."""\n')
    replaced = "\n".join(f"  - {p['problem']} ({p['count']} time(s) per forward"
                         f"{'' if p['under_compile'] else '; left to Inductor under torch.compile'})"
                         for p in plan) or "  (none)"
    text = TEMPLATE.format(stem=stem, folder=os.path.basename(os.path.abspath(folder)), replaced=replaced,
                           model_file=model_file, ident="".join(c if c.isalnum() else "_" for c in stem),
                           regions=pprint.pformat(plan, sort_dicts=False, width=110))
    path = os.path.join(folder, stem + "_kforge.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return {"assembled": path, "replaced": [p["problem"] for p in plan]}


def _evaluate(text, names):
    """A tolerance expression of a task spec ("1e-06 * max_abs_ref + 1.2e-06", "3e-5*sqrt(K)")."""
    import math
    table = {"sqrt": math.sqrt, "log": math.log, "log2": math.log2, "exp": math.exp, "min": min, "max": max,
             "abs": abs, **names}
    return float(eval(compile(str(text), "<tolerance>", "eval"), {"__builtins__": {}}, table))


def composed_tolerance(winners, counts, largest, symbols):
    """Each replaced occurrence may add its task's error to the model's output: the composed
    tolerance is the sum over replaced occurrences of each region's loosest output tolerance, with
    `max_abs_ref` the model output's largest magnitude (an error a region makes is assumed to reach
    the output unamplified; a model that amplifies it, a deep unnormalized stack, would not fit)."""
    total = {"rtol": 0.0, "atol": 0.0}
    names = dict(symbols, max_abs_ref=largest)
    for w in winners:
        checks = w.get("checks") or [{"atol": "1e-5", "rtol": "1e-5"}]
        count = counts.get(w["problem"], 1)
        for key in ("atol", "rtol"):
            values = []
            for check in checks:
                try:
                    values.append(_evaluate(check.get(key, "0"), names))
                except Exception:  # an expression over names we lack: the strict default
                    values.append(1e-5)
            total[key] += count * max(values)
    return total


def _build_loaders(loaders):
    """Builds every winner's extension at once, each in its own process (an nvcc build of a PyTorch
    extension takes most of a minute; one after another they would dominate assemble)."""
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor
    if not loaders:
        return

    def build(path):
        return subprocess.run([sys.executable, path], capture_output=True, text=True)

    with ThreadPoolExecutor(max_workers=min(8, len(loaders))) as pool:
        results = list(pool.map(build, loaders))
    for path, run in zip(loaders, results):
        if run.returncode != 0:
            raise RuntimeError(f"building {os.path.basename(path)}'s operator failed: {run.stderr.strip()[-600:]}")


def _leaves(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _compare(want, got, tolerance):
    """Per output: max abs and rel error, and whether it is within `tolerance` (exact when zero)."""
    errors, ok = [], len(want) == len(got)
    for w, g in zip(want, got):
        diff = (g.double() - w.double()).abs()
        bound = tolerance["atol"] + tolerance["rtol"] * w.double().abs()
        errors.append({"max_abs": diff.max().item() if diff.numel() else 0.0,
                       "max_rel": (diff / w.double().abs().clamp_min(1e-12)).max().item() if diff.numel() else 0.0,
                       "within": bool((diff <= bound).all().item()) if tolerance["atol"] or tolerance["rtol"]
                       else bool(torch.equal(g, w))})
        ok = ok and errors[-1]["within"] and bool(torch.isfinite(g).all().item())
    return errors, ok


def check(folder, device, mode="auto", iterations=20, seed=7, autotune=True):
    """The assembled model against the original on inputs neither was extracted with; on CUDA, both
    timed side by side in every way users run them (endtoend.py), each way's output checked too.
    Mode "kernels" runs the exported operators, "reference" the replaced regions' own operators
    through the same wiring, "auto" kernels on CUDA and reference elsewhere. Returns a dict (also
    written to DIR/assembled.json)."""
    from ..problem import ProblemFile
    from . import endtoend
    from .runtime import GraphedForward
    with open(os.path.join(folder, "model.json"), encoding="utf-8") as f:
        document = json.load(f)
    stem = os.path.splitext(os.path.basename(document["model"]))[0]
    winners_path = os.path.join(folder, "winners.json")
    winners = json.load(open(winners_path, encoding="utf-8"))["winners"] if os.path.exists(winners_path) else []
    counts = {r["id"]: r["count"] for r in document["regions"]}
    if mode == "auto":
        mode = "kernels" if str(device).startswith("cuda") else "reference"
    os.environ["KFORGE_MODEL_REGIONS"] = mode
    if mode == "kernels":
        _build_loaders([os.path.join(folder, w["loader"]) for w in winners])
    original_program = ProblemFile(os.path.join(folder, "model", os.path.basename(document["model"]))).load()
    assembled_program = ProblemFile(os.path.join(folder, stem + "_kforge.py")).load()
    original = original_program.build_model(seed, device)
    assembled = assembled_program.build_model(seed, device)
    assembled.load_state_dict(original.state_dict())
    inputs = original_program.make_inputs(seed + 100, device)
    with torch.no_grad():
        want = [t.detach().clone() for t in _leaves(original(*inputs))]
        got = _leaves(assembled(*inputs))
    largest = max((w.double().abs().max().item() for w in want if w.numel()), default=0.0)
    tolerance = composed_tolerance(winners, counts, largest, document.get("size_symbols", {}))
    errors, ok = _compare(want, got, tolerance)
    replaced = next(iter(assembled.__dict__["_kforge_assembly"].replaced.values()), [])
    result = {"mode": mode, "device": device, "tolerance": tolerance, "outputs": errors, "matches": ok,
              "replaced": replaced}
    if str(device).startswith("cuda"):
        def log(message):
            print(f"kforge model: {message}", file=sys.stderr, flush=True)

        with torch.no_grad():
            if mode == "kernels" and winners and hasattr(torch, "compile"):
                by_gain = [w["problem"] for w in sorted(winners, key=lambda w: -(w.get("speedup_compile") or 0))]
                try:
                    chosen, trials = endtoend.select_under_compile(assembled, inputs, by_gain, iterations, log)
                    result["under_compile"] = {"kept": chosen, "trials": trials}
                    assemble(folder, under_compile=chosen)  # MODEL_kforge.py remembers the choice
                except Exception as e:  # torch.compile cannot take it: every way below says so
                    result["under_compile"] = {"error": f"{type(e).__name__}: {str(e).strip()[:300]}"}
            built, failed = endtoend.build_variants(original, assembled, inputs,
                                                    lambda model, xs: GraphedForward(model, xs), autotune, log)
            # Each way the assembled model runs must give what the eager assembled model was checked to give.
            ways = {}
            for key in endtoend.ASSEMBLED[1:]:
                if key in built:
                    _, ways[key] = _compare(want, [t.detach().clone() for t in _leaves(_outputs_of(built[key]))],
                                            _at_least(tolerance))
            times = endtoend.time_side_by_side(built, iterations)
            kernels = {key: endtoend.kernel_seconds(built[key]) for key in ("assembled", "assembled_graph")
                       if key in built}
        result.update({"times": times, "build_errors": failed, "matches_by_way": ways,
                       "kernels_s": kernels, "iterations": iterations, "rounds": endtoend.ROUNDS})
        # The earlier keys, kept for readers of older folders' documents.
        for key in ("eager", "compile", "assembled", "assembled_compile"):
            if key in times:
                result[f"{key}_s"] = times[key]
        if "assembled_compile" in failed:
            result["assembled_compile_error"] = failed["assembled_compile"]
    with open(os.path.join(folder, "assembled.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    return result


def _outputs_of(fn):
    return fn()


def _at_least(tolerance):
    """The composed tolerance, or 1e-5 where it is zero: a compiled or graphed forward may reorder a
    reduction the eager one does not."""
    return {k: max(v, 1e-5) for k, v in tolerance.items()}
