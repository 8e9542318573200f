"""Which module variables are sizes, and the shapes an imported task is tested, timed and held out on.

The rule for sizes (docs/torch-tasks.md): an int module variable (not a bool), or an int element of a
module-level literal tuple of ints (`input_shape = (32768,)` gives `input_shape_0`; problem.py rebinds
it by rewriting the literal), is a size symbol when changing its value changes the dims of a tensor
that `get_inputs()` returns; `--symbols` replaces the rule with a list. Everything else keeps the
file's value.

Shapes: `bench` is the file's own values. The tests are two shapes scaled down from them until the
largest tensor has about 2^20 (and 2^16) elements, with odd values that are not powers of two (so a
kernel that assumes divisibility fails the tests), and a tiny one where each symbol takes the smallest
value from 1 up that works. The held-out shape has odd values, a largest tensor of about 2^24
elements, and differs from every other shape. Scaling halves the symbol that is largest relative to
the others, so shapes stay balanced; element counts come from the meta device, so sizing the file's
own gigabyte-sized shape costs nothing. A shape that fails gets the next odd values; after three
failures, one symbol at a time is held at its file value, then more and more of them together.
"""
from .layout import TensorFact, signature_change
from .problem import ProblemError

TEST_ELEMENTS = (1 << 20, 1 << 16)
HELD_OUT_ELEMENTS = 1 << 24
TINY_TRIES = 64


def _dims_of(facts):
    return [f.dims for f in facts if isinstance(f, TensorFact)]


def detect_symbols(evaluator, module_vars, only=None):
    """(symbols, notes, rule sentence) for a problem whose module variables are `module_vars`."""
    ints = {k: v for k, v in module_vars.items() if type(v) is int}
    notes = []
    if only is not None:
        for name in only:
            if name not in ints:
                listed = ", ".join(sorted(ints)) or "none"
                raise ProblemError(f"--symbols names {name}, which is not an int module variable of the file "
                                   f"nor an int element of one of its tuples (its ints: {listed})")
        candidates = list(only)
    else:
        base = _dims_of(evaluator.inputs({}))
        candidates = [k for k, v in ints.items() if _moves_inputs(evaluator, k, v, base)]
    symbols = []
    base = evaluator.layout({}) if candidates else None
    for name in candidates:
        failure = _forward_failure_elsewhere(evaluator, name, ints[name], base)
        if failure is None:
            symbols.append(name)
        else:
            notes.append(f"{name} changes the inputs' dims, but {failure}; it keeps the file's value {ints[name]}")
    others = [f"{k} = {v}" for k, v in ints.items() if k not in symbols]
    kept = f"; the other ints keep the file's values ({', '.join(others)})" if others else ""
    if only is not None:
        rule = f"size symbols named by --symbols: {', '.join(symbols) or 'none'}{kept}"
    else:
        rule = ("an int module variable (or an int element of a module-level tuple, named tuple_index) is a size "
                "symbol when changing it changes the dims of a tensor "
                f"get_inputs() returns: {', '.join(symbols) or 'none'}{kept}")
    return symbols, notes, rule


def _other_values(value):
    return [v for v in (value + 1, value * 2, value - 1, value + 3) if v >= 1 and v != value]


def _moves_inputs(evaluator, name, value, base):
    for other in _other_values(value):
        try:
            if _dims_of(evaluator.inputs({name: other})) != base:
                return True
        except ProblemError:
            continue
    return False


def _forward_failure_elsewhere(evaluator, name, value, base):
    """None when the program runs with `name` moved to some other value and keeps the signature it
    has at the file's values (`base`); else why not, at the first value tried. A count of layers
    (an RNN's num_layers) moves an input's dims but also the number of parameters: it is no size."""
    first = None
    for other in _other_values(value):
        try:
            layout = evaluator.layout({name: other})
        except ProblemError as e:
            first = first or f"the program fails at every other value tried ({name}={other}: {e})"
            continue
        change = signature_change(base, layout)
        if change:
            return f"it changes the program's signature ({change[1]} at {name}={other}), which a task keeps"
        if not layout.has_empty_dim():
            return None
        first = first or f"the program fails at every other value tried ({name}={other}: a tensor has a dim of 0)"
    return first or f"{name} has no other value to try"


def _odd_candidates(value, low):
    """Odd values that are not powers of two, nearest `value` first, none below `low`."""
    for step in range(0, 4 * value + 64):
        for v in (value + step, value - step) if step else (value,):
            if v >= max(low, 1) and v % 2 == 1 and v & (v - 1) != 0:
                yield v


def _nth_odd(value, low, n):
    for i, v in enumerate(_odd_candidates(value, low)):
        if i == n:
            return v
    return value


class ShapePlanner:
    """Chooses the tests and held-out shapes of one problem; `works(sizes)` says whether the program
    runs there (the importer runs the real forward), `checkable(sizes)` whether it also gives outputs a
    relative tolerance can check (the tiny shape must)."""

    def __init__(self, evaluator, symbols, file_values, works, checkable=None, why=None):
        self.evaluator, self.symbols = evaluator, list(symbols)
        self.why = why or (lambda: "")
        self.file_values = {s: file_values[s] for s in symbols}
        self.works = works
        self.checkable = checkable or works
        self.floor = {s: 1 for s in symbols}
        self.failures = []
        self.scaling = self._scaling_tensors()

    def _scaling_tensors(self):
        """The tensors whose dims move with some symbol, as (role, index or key); None for all of them.
        A tensor of fixed size (an embedding table whose vocabulary is no symbol, a weight of constant
        dims) is there at every shape, so it must not decide how far the shapes shrink: counted, it would
        shrink every symbol to its floor (a 32000 x 1024 table is larger than any test shape's target)."""
        try:
            base = self.evaluator.layout(self.file_values)
        except ProblemError:
            return None
        dims = {(role, key): f.dims for role, key, f in base.tensors()}
        moving = set()
        for s, v in self.file_values.items():
            for other in _other_values(v):
                try:
                    layout = self.evaluator.layout(dict(self.file_values, **{s: other}))
                except ProblemError:
                    continue
                moving |= {(role, key) for role, key, f in layout.tensors() if dims.get((role, key)) != f.dims}
                break
        return moving or None

    def max_elements(self, sizes):
        """Elements of the largest tensor that moves with the symbols at `sizes`; None where the program
        fails there or a dim is 0."""
        try:
            layout = self.evaluator.layout(sizes, outputs=False)
        except ProblemError:
            return None
        return None if layout.has_empty_dim() else layout.max_elements(self.scaling)

    def scaled(self, target, held, first_weight):
        """File values halved, the largest relative symbol first, until the largest tensor has at most
        `target` elements; `first_weight` > 1 shrinks the first symbol sooner."""
        values = dict(self.file_values)
        elements = self.max_elements(values)
        for _ in range(400):
            if elements is not None and elements <= target:
                break
            movable = [s for s in self.symbols if s not in held and values[s] > self.floor[s]]
            if not movable:
                break
            weight = {s: first_weight if i == 0 else 1 for i, s in enumerate(self.symbols)}
            s = max(movable, key=lambda s: values[s] * weight[s] / self.floor[s])
            old = values[s]
            values[s] = max(self.floor[s], (old + 1) // 2)
            measured = self.max_elements(values)
            elements = measured if measured is not None else (elements * values[s] / old if elements else None)
        return values

    def odd(self, values, held, n):
        """The `n`-th odd candidates of `values` (held symbols keep theirs). Symbols that would take
        the same value take the next candidates instead, so a cube (depth = height = width = 128)
        is tested as a box: a kernel that swaps or reuses sizes of equal file values fails."""
        odd, taken = {}, set()
        for s, v in values.items():
            if s in held:
                odd[s] = v
                continue
            for extra in range(8):
                odd[s] = _nth_odd(v, self.floor[s], n + extra)
                if (v, odd[s]) not in taken:
                    break
            taken.add((v, odd[s]))
        return odd

    def _first_working(self, target, first_weight, avoid, check, first_n=0):
        attempts = ([([], first_n + n) for n in range(3)]                       # the next odd values
                    + [([s], first_n + n) for s in self.symbols for n in range(2)]  # one symbol held
                    + [(self.symbols[:k], first_n) for k in range(2, len(self.symbols) + 1)])
        for held, n in attempts:
            values = self.odd(self.scaled(target, held, first_weight), held, n)
            while values in avoid and n < 8:
                n += 1
                values = self.odd(self.scaled(target, held, first_weight), held, n)
            if values not in avoid and check(values):
                return values
        return None

    def _check_test(self, values):
        elements = self.max_elements(values)
        ok = elements is not None and self.works(values)
        if not ok:
            self.failures.append(values)
        return ok

    def tests(self):
        """[tiny, about 2^20, about 2^16] elements in the largest tensor; ProblemError when none works."""
        big = self._first_working(TEST_ELEMENTS[0], 1, [], self._check_test)
        if big is None:
            reason = self.why()
            raise ProblemError("the program fails at every scaled-down test shape tried ("
                               + "; ".join(label(v) for v in self.failures[:4]) + ")"
                               + (f"; the last failure: {reason}" if reason else ""))
        # the second test shape takes the odd values just below (2^k - 1 where the first has 2^k + 1)
        small = self._first_working(TEST_ELEMENTS[1], 8, [big], self._check_test, first_n=1) or big
        shapes = [self.tiny(small)]
        for values in (big, small):
            if values not in shapes:
                shapes.append(values)
        for n in range(1, 8):  # a third distinct shape where tiny and small coincide
            if len(shapes) >= 3:
                break
            values = self.odd(big, [], n)
            if values not in shapes and self._check_test(values):
                shapes.append(values)
        return shapes

    def tiny(self, start):
        """Each symbol at the smallest value from 1 up that works and where the outputs can be checked
        (`checkable`: not degenerate), the others as found so far."""
        values = dict(start)
        for _ in range(2):
            for s in self.symbols:
                for v in range(1, min(values[s], TINY_TRIES + 1)):
                    trial = dict(values, **{s: v})
                    if self.max_elements(trial) is not None and self.checkable(trial):
                        values = trial
                        break
        return values

    def held_out(self, avoid, works):
        """An odd shape of about 2^24 elements that differs from every shape in `avoid`, where the meta
        layout and `works(sizes)` succeed."""
        values = self._first_working(HELD_OUT_ELEMENTS, 1, avoid,
                                     lambda v: self.max_elements(v) is not None and works(v))
        if values is None:
            raise ProblemError("no held-out shape works: the program fails at every scaled shape tried")
        return values


def label(sizes):
    """`a=1, b=2`: how shapes are named in notes and errors."""
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "the file's values"
