"""The facts the importer measures: output tolerances, compulsory bytes, FLOP counts, determinism.

Tolerances are measured, not guessed: the program runs in its own dtype and in fp64 on the same
inputs, and the check must accept the program's own result with room to spare. With `rtol` fixed by
the dtype, `atol = k * max_abs_ref` where `k` is four times the worst excess of the own result over
`rtol * |ref|`, relative to the largest reference magnitude, never below a floor per dtype and never
above 1e-2 (KernelBench's loosest tolerance; a note says when that cap binds). `max_abs_ref` stays a
variable, evaluated by kforge on each shape's reference, so the tolerance scales with the data.

Plus an absolute floor, four times the largest absolute error measured (where the 1e-2 cap binds,
at most KernelBench's absolute tolerance): an output can come out near
zero by cancellation (a loss of two classes whose target logit dominates, a difference of nearly equal
values), while its rounding error still scales with the inputs. The inputs of a run are drawn from
the run's secret, so a relative tolerance alone fails every kernel of an unlucky run (a cross-entropy
suite run on an H200 lost all four candidates at 1 x 2 classes); the floor stays far below the
relative term wherever the output is of ordinary size (it is at most `k * max_abs_ref` of the
measured shape).
"""
import math

import torch

from .model_state import model_tensors
from .problem import ProblemError, dtype_name

RTOL = {"f32": 1e-5, "f64": 1e-12, "bf16": 1.6e-2, "f16": 2e-3}
K_FLOOR = {"f32": 1e-6, "f64": 1e-12, "bf16": 1e-3, "f16": 1e-3}
CAP = 1e-2
# Without an fp64 run: KernelBench's tolerances (absolute and relative alike).
KERNELBENCH_TOL = {"f32": 1e-4, "f64": 1e-4, "bf16": 1e-2, "f16": 1e-2}
ITEMSIZE = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "u8": 1, "i16": 2, "i32": 4, "i64": 8}
INTEGER_DTYPES = {"i8", "u8", "i16", "i32", "i64"}


def _round_up(value, digits=2):
    """`value` rounded up to `digits` significant digits, as text ('2.5e-06', '0.0001')."""
    if value <= 0:
        return "0"
    scale = 10 ** (math.floor(math.log10(value)) - digits + 1)
    return f"{math.ceil(value / scale - 1e-9) * scale:.{digits}g}"


CHUNK = 1 << 18  # elements per step of the error scan, small enough to stay in cache


def excess(own, ref, rtol):
    """(k, max_abs_err, max_abs_ref, max_rel_err) of one output at one shape."""
    own, ref = own.detach().reshape(-1), ref.detach().reshape(-1)
    max_abs_ref = max_err = max_rel = 0.0
    excess = -math.inf
    for start in range(0, ref.numel(), CHUNK):
        r = ref[start:start + CHUNK].double()
        o = own[start:start + CHUNK].double()
        finite = torch.isfinite(r)
        if not bool(finite.all()):
            r, o = r[finite], o[finite]
        if not bool(torch.isfinite(o).all()):
            return math.inf, math.inf, float(ref.double().abs().max()), math.inf
        if not r.numel():
            continue
        diff = torch.sub(o, r).abs_()
        r_abs = r.abs()
        max_abs_ref = max(max_abs_ref, float(r_abs.max()))
        max_err = max(max_err, float(diff.max()))
        excess = max(excess, float(torch.sub(diff, r_abs, alpha=rtol).max()))
        max_rel = max(max_rel, float(diff.div_(r_abs).nan_to_num_(0.0, 0.0, 0.0).max()))
    if excess == -math.inf:
        return 0.0, 0.0, 0.0, 0.0
    if max_abs_ref > 0:
        k = max(0.0, 4 * excess / max_abs_ref)
    else:
        k = math.inf if excess > 0 else 0.0
    return k, max_err, max_abs_ref, max_rel


def checkable(outputs, outputs64):
    """Whether every floating output of one run is nonzero and within the capped tolerance of its fp64
    run. A shape where one is not (a LayerNorm over one element, a loss over one class: the exact result
    is 0) cannot test kernels with a tolerance relative to the reference, and is a poor test shape."""
    if outputs64 is None:
        return True
    for own, ref in zip(outputs, outputs64):
        if own.is_floating_point():
            k, _, max_abs_ref, _ = excess(own, ref, min(RTOL[dtype_name(own.dtype, "an output")], CAP))
            if k > CAP or max_abs_ref == 0:
                return False
    return True


def output_check(name, dtype, samples, notes):
    """The check of output `name` from samples [(sizes, own tensor, fp64 tensor or None)]."""
    if dtype in INTEGER_DTYPES:
        for sizes, own, ref in samples:
            if ref is not None and not torch.equal(own.cpu(), ref.to(own.dtype).cpu()):
                notes.append(f"integer output {name} differs between the program's own and its fp64 run at "
                             f"{_label(sizes)}: its expected values are the program's own, so a kernel must compute it "
                             "as the program does, in the program's dtype")
                break
        return {"metric": "exact"}
    rtol = min(RTOL[dtype], CAP)
    measured = [(sizes,) + excess(own, ref, rtol) for sizes, own, ref in samples if ref is not None]
    if not measured:
        tol = KERNELBENCH_TOL[dtype]
        notes.append(f"output {name}: no fp64 run to measure against; KernelBench's tolerance {tol:g} applies")
        return {"atol": f"{tol:g}", "rtol": f"{tol:g}"}
    worst = max(measured, key=lambda m: (m[1], m[2] / m[3] if m[3] else 0.0))  # largest k, then relative error
    k = max(K_FLOOR[dtype], worst[1])
    if k > CAP:
        notes.append(f"output {name}: the program's own {dtype} result differs from fp64 by up to "
                     f"{worst[2]:.3g} (largest reference magnitude {worst[3]:.3g}) at {_label(worst[0])}; "
                     f"the tolerance is capped at {CAP:g} * max_abs_ref")
        k = CAP
    # The floor (see the module's docstring). Below the cap it is at most the relative term at the
    # measured shape: it can double the tolerance there, no more. Where the cap binds, the output may
    # be rounding noise around an exact 0 (the mean of a GroupNorm's output), whose relative term is
    # noise too: the floor then stays, at most KernelBench's absolute tolerance, so the program's own
    # result passes its own check where the error is small in absolute terms.
    errors = [m[2] for m in measured if math.isfinite(m[2])]
    bound = KERNELBENCH_TOL[dtype] if k >= CAP else k * worst[3]
    floor = min(4 * max(errors), bound) if errors else 0.0
    atol = f"{_round_up(k)} * max_abs_ref" + (f" + {_round_up(floor)}" if floor > 0 else "")
    return {"atol": atol, "rtol": f"{rtol:g}",
            "measured": {"shape": dict(worst[0]), "max_abs_err": _finite(worst[2]), "max_abs_ref": worst[3],
                         "max_rel_err": _finite(worst[4])}}


def _finite(value):
    return value if math.isfinite(value) else None


def _label(sizes):
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "the file's values"


def bytes_expression(args):
    """Compulsory traffic: every tensor input, parameter and output once, as an expression."""
    terms = {}
    for arg in args:
        if arg["kind"] != "tensor":
            continue
        coefficient, factors = ITEMSIZE[arg["dtype"]], []
        for dim in arg["dims"]:
            if dim.isdigit():
                coefficient *= int(dim)
            else:
                factors.append(f"({dim})" if " " in dim else dim)
        key = tuple(sorted(factors))
        if key in terms:
            terms[key][0] += coefficient
        else:
            terms[key] = [coefficient, factors]
    parts = []
    for coefficient, factors in terms.values():
        parts.append(" * ".join(([str(coefficient)] if coefficient != 1 or not factors else []) + factors))
    return " + ".join(parts) or "0"


def count_flops(problem_file, shapes, notes):
    """[{shape, flops}] per shape from FlopCounterMode on the meta device (torch 2.1+), else from
    kforge's rules (flop_rules.py: the same products, attention halved when causal), or [] with a note."""
    try:
        from torch.utils.flop_counter import FlopCounterMode

        def counter():
            return FlopCounterMode(display=False)

        def total(c):
            return c.get_total_flops()
    except ImportError:
        from .flop_rules import RuleFlopCounter
        notes.append(f"torch {torch.__version__} has no FlopCounterMode (torch 2.1+): FLOPs counted by kforge's rules "
                     "(matrix products, convolutions, attention)")

        def counter():
            return RuleFlopCounter()

        def total(c):
            return c.total
    result = []
    for sizes in shapes:
        try:
            program = problem_file.load(sizes)
            model = program.build_model(0, "meta")
            inputs = program.make_inputs(0, "meta")
            with counter() as c:
                program.run_forward(model, inputs, "meta")
            result.append({"shape": dict(sizes), "flops": int(total(c))})
        except Exception as e:  # the counter's own limits: report, never fail the import
            notes.append(f"the FLOP counter failed at {_label(sizes)} ({type(e).__name__}: {e}); no FLOP counts")
            return []
    if result and all(r["flops"] == 0 for r in result):
        notes.append("torch's FLOP counter counts matmuls, convolutions and attention only; it found none here")
    return result


def _same(a, b):
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.is_floating_point():
            return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
        return torch.equal(a, b)
    return a == b


def check_determinism(program, device, input_seed=11, param_seed=12):
    """Raises ProblemError unless the same seeds give the same inputs, parameters and outputs."""
    first = program.make_inputs(input_seed, device)
    second = program.make_inputs(input_seed, device)
    for i, (a, b) in enumerate(zip(first, second)):
        if not _same(a, b):
            raise ProblemError(f"not deterministic: get_inputs() gives different values of input {i} under the "
                               "same seed (does it draw from numpy or random, which torch.manual_seed does "
                               "not set?)")
    model = program.build_model(param_seed, device)
    again = program.build_model(param_seed, device)
    for (key, a), b in zip(model_tensors(model).items(), model_tensors(again).values()):
        if not _same(a, b):
            raise ProblemError(f"not deterministic: Model(*get_init_inputs()) gives different values of {key} "
                               "under the same seed")
    runs = []
    for _ in range(2):
        inputs = [v.clone() if isinstance(v, torch.Tensor) else v for v in first]
        runs.append(program.run_forward(model, inputs, device)[0])
    for i, (a, b) in enumerate(zip(*runs)):
        if not _same(a, b):
            raise ProblemError(f"not deterministic: two forwards on the same inputs give different values of "
                               f"output {i} (does the forward draw random numbers, e.g. torch.rand or "
                               "F.dropout? kforge runs the model as KernelBench does, in training mode, with "
                               "dropout modules quieted)")
