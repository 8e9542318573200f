"""`extract`: a model file cut into regions, each unique region a problem file, ranked by time.

Steps: capture the model at its file's sizes (capture.py), cut it (regions.py), record every
node's shape and each live-in's value, find which size variables follow into the regions
(sizes.py), group regions by structure (a block repeated N times is one problem with a count),
measure each on the GPU (profile.py) or estimate it (estimate.py), pick those worth a search
(--top, --min-share) and write them (writer.py), with DIR/model.json describing all of it.
"""
import hashlib
import json
import os

import torch

from ..problem import ProblemFile
from . import estimate, profile
from .capture import record
from .memory import check_capture_memory
from .regions import partition as cut, structure_key
from .sizes import Expr, Point, capture_point, fit_sizes, node_literals, replace_at
from .shim import lift_input_literals
from .writer import RegionWriteError, attr_names, module_names_of, write_problem


def _log(message):
    print(f"kforge model: {message}", flush=True, file=__import__("sys").stderr)


def size_candidates(program, inputs):
    """Int module variables whose value is a dim of an input tensor (the sizes a user would vary)."""
    dims = {d for t in inputs if isinstance(t, torch.Tensor) for d in t.shape}
    return [name for name, value in sorted(program.module_vars().items())
            if type(value) is int and value in dims and value > 0]


def _substitute(base, size_fit):
    """Writes the fitted expressions into the base graph, and for a device literal the device the
    problem's Model was built on (`self._device`, which the writer sets in __init__, where kforge's
    device mode is in force). Never an input's `.device` (fx's code drops each value after its last
    use: `x0 = None`), nor `torch.empty(0).device` in forward (torch.compile runs forward without
    kforge's device mode: that is the CPU)."""
    for i, node in enumerate(base.nodes):
        for (index, path), expr in size_fit.literals.items():
            if index == i:
                args_kwargs = replace_at((node.args, node.kwargs), path, expr)
                node.args, node.kwargs = args_kwargs
        if "device" in node.kwargs and isinstance(node.kwargs["device"], torch.device):
            kwargs = dict(node.kwargs)
            kwargs["device"] = Expr("self._device")
            node.kwargs = kwargs


class Extraction:
    def __init__(self, **fields):
        self.__dict__.update(fields)


def analyse(model_path, device, measure, sizes=None):
    """Everything but the files: the partition, the unique regions with counts, times or estimates."""
    problem_file = ProblemFile(model_path)
    check_capture_memory(problem_file, sizes or None, device, _log)
    program, model, inputs, captured, state = capture_point(problem_file, sizes or None, device)
    part = cut(captured)
    keep = {n for r in part.regions for n in r.inputs}
    record(captured, state + inputs, keep)
    base = Point({k: v for k, v in program.module_vars().items() if type(v) is int}, captured)
    candidates = size_candidates(program, inputs)
    size_fit = fit_sizes(problem_file, base, candidates, device, _log)
    groups = {}
    for region in part.regions:
        groups.setdefault(structure_key(part, region), []).append(region)
    timing = profile.measure(captured, part, model, inputs, state, device) if measure else None
    return Extraction(problem_file=problem_file, program=program, model=model, inputs=inputs, captured=captured,
                      state=state, partition=part, base=base, size_fit=size_fit, groups=groups, timing=timing)


def region_rows(ex, stem):
    """One row per unique region: what it is, how often it runs, its time or estimate."""
    rows = []
    names = attr_names(ex.captured.state_names)
    index_of = {n: i for i, n in enumerate(ex.captured.placeholders())}
    for number, (key, members) in enumerate(ex.groups.items()):
        region = members[0]
        flops, moved, est = estimate.region_work(region)
        row = {
            "id": f"{stem}_r{number:02d}_{region.name}",
            "name": region.name,
            "kind": region.kind,
            "key": hashlib.sha1(key.encode()).hexdigest()[:16],
            "count": len(members),
            "occurrences": [m.index for m in members],
            "compute": region.compute,
            "mutates_state": any(m.mutates for m in members),
            "modules": module_names_of(region, ex.captured),
            "attrs": [names[ex.captured.state_names[index_of[n]]] for n in region.state],
            "inputs": [list(n.meta["kforge_meta"][0]) for n in region.inputs],
            "outputs": [list(n.meta["kforge_meta"][0]) for n in region.outputs if n.meta.get("kforge_meta")],
            "flops": flops,
            "bytes": moved,
            "estimate_s": est * len(members),
        }
        if ex.timing is not None:
            row["time_s"] = sum(ex.timing["regions"][m.index] for m in members)
        rows.append(row)
    return rows


def select(rows, total_s, top, min_share, measured):
    """Marks rows `selected` (or `why_not`), ranked by time (measured, else estimated)."""
    key = "time_s" if measured else "estimate_s"
    for row in rows:
        row["share"] = row[key] / total_s if total_s > 0 else 0.0
    ranked = sorted(rows, key=lambda r: -r[key])
    picked = 0
    for rank, row in enumerate(ranked):
        row["rank"] = rank + 1
        if not row["compute"]:
            row["why_not"] = "views alone: nothing to compute"
        elif row["share"] < min_share:
            row["why_not"] = f"{100 * row['share']:.1f}% of the time, under --min-share {100 * min_share:g}%"
        elif top is not None and picked >= top:
            row["why_not"] = f"not in the --top {top}"
        else:
            row["selected"] = True
            picked += 1
    return ranked


def extract(model_path, out_dir, device, top, min_share, measure, write=True, sizes=None):
    """Writes DIR/model.json (and with `write`, the selected regions' problem files); returns it.
    `sizes` rebinds module variables first (`{"batch_size": 2}`: a model cut at other sizes)."""
    ex = analyse(model_path, device, measure, sizes)
    if not ex.size_fit.symbols:
        # No module variable sizes the inputs: the sizes may be literals in get_inputs().
        lifted = lift_input_literals(model_path, out_dir)
        if lifted is not None:
            again = analyse(lifted, device, measure, sizes)
            if again.size_fit.symbols:
                _log(f"the sizes are literals of get_inputs(): extracting {lifted}, which names them")
                ex, model_path = again, lifted
    stem = os.path.splitext(os.path.basename(model_path))[0]
    rows = region_rows(ex, stem)
    measured = ex.timing is not None
    # Regions timed alone each pay their own launches; where their times add up to more than the
    # model's forward, shares are of that sum (and nothing is outside every region).
    total = max(ex.timing["model_s"], sum(r["time_s"] for r in rows)) if measured else \
        sum(r["estimate_s"] for r in rows)
    ranked = select(rows, total, top, min_share, measured)
    _substitute(ex.base, ex.size_fit)
    names = attr_names(ex.captured.state_names)
    state_values = dict(zip(ex.captured.state_names, ex.state))
    base_nodes = {n: i for i, n in enumerate(ex.base.nodes)}
    problems = os.path.join(out_dir, "regions")
    if write:
        os.makedirs(problems, exist_ok=True)
    by_key = {hashlib.sha1(k.encode()).hexdigest()[:16]: members for k, members in ex.groups.items()}
    for row in ranked:
        if not row.get("selected") or not write:
            continue
        region = by_key[row["key"]][0]
        path = os.path.join(problems, row["id"] + ".py")
        try:
            write_problem(path, os.path.basename(model_path), ex.partition, region, row["count"], names, ex.size_fit,
                          base_nodes, state_values, row["modules"])
            row["problem"] = os.path.relpath(path, out_dir)
        except RegionWriteError as e:
            row.pop("selected")
            row["why_not"] = f"not written: {e}"
    document = {
        "format": "kforge.model/1",
        "model": os.path.abspath(model_path),
        "device": device,
        "measured": measured,
        "size_symbols": ex.size_fit.symbols,
        "sizes_given": sizes or {},
        "size_notes": ex.size_fit.notes,
        "regions_total": len(ex.partition.regions),
        "regions": ranked,
        "total_s": total,
        "timing": ex.timing and {k: v for k, v in ex.timing.items() if k != "regions"},
    }
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "model.json" if write else "profile.json"), "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1)
    return document

