"""The facts of a problem (docs/torch-tasks.md, "Facts"): what `kforge task import` builds a spec from.

The steps read like the contract: load the file, find the size symbols, choose the shapes (real
forwards only on small ones), check determinism, fit every dim over many shapes on the meta device,
measure tolerances against fp64, count FLOPs and bytes. Only the small forwards touch real memory,
so an import costs seconds even for problems whose own shapes are gigabytes. The held-out shape
also serves as the largest shape the tolerances are measured on, when its forwards are cheap here.
"""
import math
import time

import torch

from .arguments import describe_arguments
from .checks import bytes_expression, check_determinism, checkable, count_flops, output_check
from .layout import Evaluator, check_memory, run_real, with_fp64
from .model_state import mode_sentence, random_modules_note
from .problem import ProblemError, ProblemFile
from .shapes import ShapePlanner, detect_symbols, label

CHECK_BUDGET_SECONDS = 5.0  # the most an fp32 + fp64 forward at the held-out shape may take on the CPU
IMPORT_INPUT_SEED, IMPORT_PARAM_SEED = 1, 2
MEANINGFUL_SECONDS = 0.005


class Runner:
    """Real runs of the program at shapes, cached: own dtype to validate, own + fp64 to measure."""

    def __init__(self, problem_file, device):
        self.file, self.device = problem_file, device
        self.own, self.full_runs = {}, {}
        self.last_failure = ""  # why the last shape that failed did, for the import's error

    @staticmethod
    def key(sizes):
        return tuple(sorted(sizes.items()))

    def works(self, sizes):
        try:
            run = _slim(run_real(self.file, sizes, IMPORT_INPUT_SEED, IMPORT_PARAM_SEED, self.device, fp64=False))
        except ProblemError as e:
            self.last_failure = str(e)
            return False
        self.own[self.key(sizes)] = run
        return not run.layout.has_empty_dim()

    def checkable(self, sizes):
        """Runs, and every floating output is within the capped tolerance of fp64 there."""
        if not self.works(sizes):
            return False
        try:
            run = self.full(sizes)
        except ProblemError as e:
            self.last_failure = str(e)
            return False
        return checkable(run.outputs, run.outputs64)

    def full(self, sizes):
        key = self.key(sizes)
        if key not in self.full_runs:
            own = self.own.get(key)  # works() ran the own half at these sizes with the same seeds
            run = with_fp64(self.file, own, IMPORT_INPUT_SEED, IMPORT_PARAM_SEED, self.device) if own else None
            self.full_runs[key] = _slim(run or run_real(self.file, sizes, IMPORT_INPUT_SEED, IMPORT_PARAM_SEED,
                                                         self.device))
        return self.full_runs[key]

    def seconds(self, sizes):
        """Own + fp64 time of the run at `sizes`: measured where both ran (fp64 can be 10-50 times
        slower than the own dtype on the CPU: no MKL-DNN convolution in double), else three times
        the own run."""
        full = self.full_runs.get(self.key(sizes))
        if full is not None:
            return full.seconds + full.seconds64
        own = self.own.get(self.key(sizes))
        return None if own is None else 3 * own.seconds

    def estimate_seconds(self, elements, measured):
        """Own + fp64 run time at `elements` (largest tensor), extrapolated from real runs at the shapes
        `measured` [(sizes, elements)]: the power law through the two largest, between linear and
        quadratic, so matmul-like growth is not mistaken for elementwise."""
        points = sorted((e, self.seconds(z)) for z, e in measured if self.seconds(z) is not None and e)
        if not points:
            return float("inf")
        big_e, big_t = points[-1]
        power = 1.0
        if len(points) > 1:
            small_e, small_t = points[-2]
            if big_e > small_e and small_t > MEANINGFUL_SECONDS:  # shorter runs are mostly overhead
                power = math.log(max(big_t, small_t) / small_t) / math.log(big_e / small_e)
        power = min(2.0, max(1.0, power))
        return 1.5 * big_t * max(1.0, elements / big_e) ** power


def _slim(run):
    """A run as the importer keeps it: its layout, outputs and times, without the inputs and
    parameters (a cached run held its model's parameters: gigabytes each for a wide MLP)."""
    run.inputs = run.state = None
    return run


def refuse_if_too_big_everywhere(problem_file, symbols, device):
    """Raises layout.check_memory's ProblemError where even the smallest sizes (every symbol 1) would
    not fit with their fp64 run: parameters whose sizes are no symbols are that big at every shape,
    and building them (seconds per gigabyte) only to be refused would spend the import's time
    limit first (KernelBench's ShallowWideMLP: 6 GiB of fp32 weights at any size)."""
    sizes = dict.fromkeys(symbols, 1)
    try:
        program = problem_file.load(sizes)
        program.build_model(0, "meta")
        program.make_inputs(0, "meta")
    except ProblemError:
        return  # the program does not run there: the runs' own checks still apply
    check_memory(program, sizes, device, fp64=True)


def moving_elements(evaluator, sizes):
    """Elements of the inputs and outputs at `sizes` (None where the program fails there): the measure
    a forward's time grows with. Parameters are left out: a GEMM's fixed 4096 x 4096 weight is the
    largest tensor at every test shape, so by it a held-out shape 10^5 times the tests' work looked
    no bigger (KernelBench's Gemm_Sigmoid_LogSumExp then spent minutes on one fp64 forward)."""
    try:
        layout = evaluator.layout(sizes, outputs=False)  # outputs too where the meta device knows them
    except ProblemError:
        return None
    return sum(math.prod(f.dims) for role, _, f in layout.tensors() if role != "param")


def variation_points(file_values):
    """Shapes around `file_values`: each symbol moved alone through many residues, then all together."""
    points = [dict(file_values)]
    for s, v in file_values.items():
        for w in sorted({v + d for d in (1, 2, 3, 4, 5, 6, 7, 11, 13)} | {2 * v, 2 * v + 1, v // 2, v // 2 + 1,
                                                                        v // 3 + 2}):
            if w >= 1 and w != v:
                points.append(dict(file_values, **{s: w}))
    for m in (3, 7):
        points.append({s: v + m * (i + 1) for i, (s, v) in enumerate(file_values.items())})
    return points


def no_symbols_message(symbol_notes, module_vars):
    """Why a program without size symbols cannot be a task, and what would make it one."""
    ints = ", ".join(k for k, v in module_vars.items() if type(v) is int)
    why = ("; ".join(symbol_notes) if symbol_notes else
           "no int module variable changes the dims of a tensor get_inputs() returns"
           + (f" (its ints: {ints})" if ints else " (it has no int module variables: are the sizes literals?)"))
    return (f"no size symbols: {why}. A task is tested at several sizes, so it needs at least one: make the sizes "
            "module variables that get_inputs() reads, or name them with --symbols")


def import_problem(path, symbols=None, device="cpu"):
    """The facts of the problem at `path` (docs/torch-tasks.md); raises ProblemError."""
    began = time.perf_counter()
    notes = []
    problem_file = ProblemFile(path)
    module_vars = problem_file.load().module_vars()
    evaluator = Evaluator(problem_file, device)
    evaluator.layout({})  # the program at its own values, without allocating: what fails everywhere fails here
    symbols, symbol_notes, rule = detect_symbols(evaluator, module_vars, symbols)
    if not symbols:
        raise ProblemError(no_symbols_message(symbol_notes, module_vars))
    notes += symbol_notes
    file_values = {s: module_vars[s] for s in symbols}
    refuse_if_too_big_everywhere(problem_file, symbols, device)

    runner = Runner(problem_file, device)
    planner = ShapePlanner(evaluator, symbols, file_values, runner.works, runner.checkable,
                           why=lambda: runner.last_failure)
    tests = planner.tests()
    program = problem_file.load(tests[-1])
    check_determinism(program, device)
    if program.random_modules:
        notes.append(random_modules_note(program.random_modules))
    mode = mode_sentence(program.build_model(0, "meta"), program.random_modules)
    for z in tests:
        runner.full(z)  # own and fp64: needed for the tolerances, and to time the held-out shape's
    measured = [(z, moving_elements(evaluator, z)) for z in tests]

    def held_out_works(values):
        if runner.estimate_seconds(moving_elements(evaluator, values) or 0, measured) > CHECK_BUDGET_SECONDS:
            notes.append(f"the held-out shape ({label(values)}) is too slow to run on the CPU here: tolerances "
                         "come from the test shapes")
            return True
        try:
            return not runner.full(values).layout.has_empty_dim()
        except ProblemError:
            return False

    held_out = [planner.held_out([file_values] + tests, held_out_works)]
    measured_shapes = tests + [z for z in held_out if Runner.key(z) in runner.full_runs]
    runs = [runner.full(z) for z in measured_shapes]

    layouts = [(z, run.layout) for z, run in zip(measured_shapes, runs)]
    # Around the file's values, and around the tiny test shape: where an operation has no meta kernel,
    # only small shapes have known outputs (real forwards, cheap there), and the test shapes alone may
    # not tell symbols of equal file values apart (a pooled cube's depth, height and width).
    for sizes in variation_points(file_values) + variation_points(tests[0]) + held_out:
        try:
            layout = evaluator.layout(sizes)
        except ProblemError:
            continue
        if not layout.has_empty_dim():  # a shape with a 0 dim is no shape of the task
            layouts.append((sizes, layout))
    args, output_tuple = describe_arguments(layouts, symbols, problem_file.load(tests[0]).Model)
    if evaluator.meta_note:
        notes.append(evaluator.meta_note)
    for run in runs:
        if run.fp64_note and run.fp64_note not in notes:
            notes.append(run.fp64_note)

    checks = {}
    for arg in args:
        if arg["role"] == "output":
            i = arg["index"]
            samples = [(run.sizes, run.outputs[i], run.outputs64[i] if run.outputs64 else None) for run in runs]
            checks[arg["name"]] = output_check(arg["name"], arg["dtype"], samples, notes)
    shapes = {"bench": [file_values], "tests": tests, "held_out": held_out}
    return {
        "problem": problem_file.path,
        "source": problem_file.source,
        "torch_version": torch.__version__,
        "module_vars": module_vars,
        "tuple_elements": {name: list(element) for name, element in problem_file.tuple_elements.items()},
        "symbols": symbols,
        "symbol_rule": rule,
        "notes": notes,
        "shapes": shapes,
        "args": args,
        "output_tuple": output_tuple,
        "mode": mode,
        "checks": checks,
        "flops": count_flops(problem_file, [file_values] + tests + held_out, notes),
        "bytes": bytes_expression(args),
        "deterministic": True,
        "timings": {"import_seconds": round(time.perf_counter() - began, 3)},
    }
