"""The task's arguments: every forward input, parameter and output, named and with dims expressions.

Given the program's layout at many shapes (from `layout.Evaluator`), this checks that its structure
does not change with the sizes (the same inputs, parameters and outputs, ranks and dtypes: a kernel
has one signature), names each tensor (docs/torch-tasks.md, "Names") and fits each dim with
`dims.fit_dim`. A dim no form fits fails the import, naming the tensor and the dim and suggesting
`--symbols` without the symbols that move it.
"""
from .dims import fit_dim, moving_symbols
from .layout import ScalarFact, signature_change
from .problem import Namer, ProblemError, forward_input_names, param_arg_name
from .shapes import label


# What a signature change says, by the part that changed (layout.signature_change).
_SIGNATURE_CHANGES = {"input": ("get_inputs() changes with the sizes", "; a task has one signature"),
                      "parameter": ("the model's parameters change with the sizes", ""),
                      "output": ("the outputs change with the sizes", "")}


def checkstructure(layouts):
    """Raises ProblemError unless every layout (sizes -> Layout) has the same signature."""
    (first_sizes, first), *rest = layouts
    for sizes, layout in rest:
        change = signature_change(first, layout)
        if change:
            what, difference = change
            head, tail = _SIGNATURE_CHANGES[what]
            raise ProblemError(f"{head} ({difference} at {label(first_sizes)} and at {label(sizes)}){tail}")


def _fit(points, symbols, what):
    fit = fit_dim(points, symbols)
    if fit is None:
        moving = moving_symbols(points, symbols)
        keep = [s for s in symbols if s not in moving]
        seen = "; ".join(f"{v} at {label(z)}" for z, v in points[:3])
        hint = ""
        if moving and keep:
            hint = (f"; it moves with {', '.join(moving)}: import with --symbols {','.join(keep)} to hold "
                    f"{', '.join(moving)} at the file's value")
        elif moving:
            hint = f"; it moves with {', '.join(moving)}"
        raise ProblemError(f"{what} is no expression kforge can fit in the sizes ({seen}, ...){hint}")
    return fit.text


def _scalar_value(points, symbols, what):
    values = [v for _, v in points]
    if isinstance(values[0], float):
        if any(v != values[0] for v in values):
            raise ProblemError(f"{what} is a float that changes with the sizes; kforge takes a float input only "
                               "as a constant")
        return repr(values[0])
    return _fit(points, symbols, what)


def describe_arguments(layouts, symbols, model_class):
    """facts-style args (name, role, index or key, kind, dtype, dims or value) and output_tuple, from
    `layouts`: [(sizes, Layout)], the first with known outputs."""
    checkstructure(layouts)
    with_outputs = [(z, l) for z, l in layouts if l.outputs is not None]
    reference = with_outputs[0][1]
    namer = Namer(symbols)
    args = []
    input_names = forward_input_names(model_class, len(reference.inputs))
    for i, fact in enumerate(reference.inputs):
        name = namer.unique(input_names[i])
        arg = {"name": name, "role": "input", "index": i}
        if isinstance(fact, ScalarFact):
            points = [(z, l.inputs[i].value) for z, l in layouts]
            arg.update(kind="scalar", dtype=fact.dtype,
                       value=_scalar_value(points, symbols, f"input {i} ({name}, a Python number)"))
        else:
            arg.update(kind="tensor", dtype=fact.dtype,
                       dims=_fit_dims(layouts, lambda l: l.inputs[i], symbols, f"input {name}"))
            _mark_zero_dim(arg, [l.inputs[i] for _, l in layouts], f"input {name}")
        args.append(arg)
    for p, (key, fact) in enumerate(reference.params):
        name = namer.unique(param_arg_name(key))
        args.append({"name": name, "role": "param", "key": key, "kind": "tensor", "dtype": fact.dtype,
                     "dims": _fit_dims(layouts, lambda l: l.params[p][1], symbols, f"parameter {key}")})
        _mark_zero_dim(args[-1], [l.params[p][1] for _, l in layouts], f"parameter {key}")
    for o, fact in enumerate(reference.outputs):
        name = namer.unique(f"out{o}" if reference.output_tuple else "out")
        args.append({"name": name, "role": "output", "index": o, "kind": "tensor", "dtype": fact.dtype,
                     "dims": _fit_dims(with_outputs, lambda l: l.outputs[o], symbols, f"output {name}")})
        _mark_zero_dim(args[-1], [l.outputs[o] for _, l in with_outputs], f"output {name}")
    return args, reference.output_tuple


def _mark_zero_dim(arg, facts, what):
    """Sets arg["zero_dim"] where the program makes a 0-dim tensor at every size (held as dims [1])."""
    zero = {getattr(f, "zero_dim", False) for f in facts}
    if len(zero) > 1:
        raise ProblemError(f"{what} is a 0-dim tensor at some sizes and not at others")
    if zero == {True}:
        arg["zero_dim"] = True


def _fit_dims(layouts, pick, symbols, what):
    rank = len(pick(layouts[0][1]).dims)
    return [_fit([(z, pick(l).dims[d]) for z, l in layouts], symbols, f"dim {d} of {what}") for d in range(rank)]
