"""Dims expressions: the formula in the size symbols that gives one tensor dim at every shape.

kforge's plans, checks and rooflines need each dim as an expression (`batch_size`, `height - 2`,
`(width - 1) / 2 + 1`). The importer evaluates the program at many shapes and fits the first of a
fixed list of forms that matches every observation exactly; the forms are those that convolutions,
pooling, reshapes and concatenations produce:

    c,  s,  s + c,  s - c,  s * c,  s / c,  s * c + d,  (s - c1) / c2 + 1,  s + t + c,  s * t,  s * t * c,
    s * t * u

(s, t, u symbols, possibly the same, but two different ones in s + t + c, a concatenation's length;
c integers, c1 and d of either sign; `/` is integer division, as in kforge's expression language). `s * c + d` is a transposed convolution with a stride: its output is
`(s - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1`. `(s + c1) / c2` (ceil-mode pooling, `ceil_div`) is the same family:
it equals `(s - (c2 - c1)) / c2 + 1`, and is written that way. Each integer-division form is solved exactly: `s / c == v` holds exactly when
`s / (v + 1) < c <= s / v`, so the constants that match every observation form an interval, and the
one nearest zero is taken.
"""
import itertools

MAX_DIVISOR = 256  # the largest c2 tried for (s - c1) / c2 + 1 (strides, pool sizes)


class Fit:
    """A dims expression: its text in kforge's expression language and its value at sizes."""

    def __init__(self, text, evaluate):
        self.text, self.evaluate = text, evaluate

    def __repr__(self):
        return f"Fit({self.text!r})"


def _plus(c):
    return f" + {c}" if c > 0 else (f" - {-c}" if c < 0 else "")


def _divisor_interval(pairs):
    """For points (s, v): the c with s // c == v for all, as (low, high) inclusive, or None."""
    low, high = 1, None
    for s, v in pairs:
        if v <= 0 or s < 0:
            return None
        low = max(low, s // (v + 1) + 1)
        high = s // v if high is None else min(high, s // v)
    return (low, high) if high is not None and low <= high else None


def _offset_interval(pairs, c2):
    """For points (s, v): the x with (s + x) // c2 == v - 1 for all, as (low, high) inclusive, or None."""
    low = high = None
    for s, v in pairs:
        w = v - 1
        lo, hi = w * c2 - s, (w + 1) * c2 - s - 1
        low = lo if low is None else max(low, lo)
        high = hi if high is None else min(high, hi)
    return (low, high) if low <= high else None


def _nearest_zero(low, high):
    """The integer in [low, high] nearest zero."""
    return 0 if low <= 0 <= high else (low if low > 0 else high)


def _simple_fit(form, s, pairs):
    """Form 0..5 (s, s + c, s - c, s * c, s / c, s * c + d) of symbol `s` if it matches every (s, v), else
    None."""
    s0, v0 = pairs[0]
    if form == 0 and all(v == x for x, v in pairs):
        return Fit(s, lambda z: z[s])
    if form == 1 and v0 > s0 and all(v == x + (v0 - s0) for x, v in pairs):
        return Fit(f"{s} + {v0 - s0}", lambda z, c=v0 - s0: z[s] + c)
    if form == 2 and s0 > v0 and all(v == x - (s0 - v0) for x, v in pairs):
        return Fit(f"{s} - {s0 - v0}", lambda z, c=s0 - v0: z[s] - c)
    if form == 3 and s0 and v0 % s0 == 0 and v0 // s0 >= 2 and all(v == x * (v0 // s0) for x, v in pairs):
        return Fit(f"{s} * {v0 // s0}", lambda z, c=v0 // s0: z[s] * c)
    if form == 4:
        interval = _divisor_interval(pairs)
        if interval and interval[1] >= 2:
            c = max(2, interval[0])
            return Fit(f"{s} / {c}", lambda z, c=c: z[s] // c)
    if form == 5:
        s1, v1 = next(((x, v) for x, v in pairs if x != s0), (s0, v0))
        if s1 != s0 and (v1 - v0) % (s1 - s0) == 0 and (v1 - v0) // (s1 - s0) >= 2:
            c = (v1 - v0) // (s1 - s0)
            d = v0 - c * s0
            if d and all(v == x * c + d for x, v in pairs):
                return Fit(f"{s} * {c}{_plus(d)}", lambda z, c=c, d=d: z[s] * c + d)
    return None


def _strided_fits(s, pairs):
    for c2 in range(2, MAX_DIVISOR + 1):
        interval = _offset_interval(pairs, c2)  # (s - c1) / c2 + 1 == v  <=>  (s + x) // c2 == v - 1, x = -c1
        if interval:
            c1 = -_nearest_zero(*interval)
            text = f"({s}{_plus(-c1)}) / {c2} + 1" if c1 else f"{s} / {c2} + 1"
            return Fit(text, lambda z, c1=c1, c2=c2: (z[s] - c1) // c2 + 1)
    return None


def fit_dim(points, symbols):
    """The first form that gives `value` at every (sizes, value) in `points`, or None."""
    values = [v for _, v in points]
    if all(v == values[0] for v in values):
        return Fit(str(values[0]), lambda z, c=values[0]: c)
    per_symbol = {s: [(z[s], v) for z, v in points] for s in symbols}
    for form in range(6):  # s, s + c, s - c, s * c, s / c, s * c + d: the first form any symbol fits
        for s in symbols:
            fit = _simple_fit(form, s, per_symbol[s])
            if fit:
                return fit
    for s in symbols:
        fit = _strided_fits(s, per_symbol[s])
        if fit:
            return fit
    for s, t in itertools.combinations(symbols, 2):  # a concatenation: torch.cat((x, hidden), dim=1)
        z0, v0 = points[0]
        c = v0 - z0[s] - z0[t]
        if all(v == z[s] + z[t] + c for z, v in points):
            return Fit(f"{s} + {t}{_plus(c)}", lambda z, s=s, t=t, c=c: z[s] + z[t] + c)
    for s, t in itertools.combinations_with_replacement(symbols, 2):
        if all(v == z[s] * z[t] for z, v in points):
            return Fit(f"{s} * {t}", lambda z, s=s, t=t: z[s] * z[t])
    for s, t in itertools.combinations_with_replacement(symbols, 2):
        z0, v0 = points[0]
        base = z0[s] * z0[t]
        if base and v0 % base == 0 and v0 // base >= 2:
            c = v0 // base
            if all(v == z[s] * z[t] * c for z, v in points):
                return Fit(f"{s} * {t} * {c}", lambda z, s=s, t=t, c=c: z[s] * z[t] * c)
    for s, t, u in itertools.combinations_with_replacement(symbols, 3):
        if all(v == z[s] * z[t] * z[u] for z, v in points):
            return Fit(f"{s} * {t} * {u}", lambda z, s=s, t=t, u=u: z[s] * z[t] * z[u])
    return None


def moving_symbols(points, symbols):
    """Symbols whose change alone, between two points, changes the value."""
    moving = []
    for s in symbols:
        seen = {}
        for z, v in points:
            key = tuple(z[t] for t in symbols if t != s)
            seen.setdefault(key, set()).add((z[s], v))
        if any(len({v for _, v in group}) > 1 for group in seen.values()):
            moving.append(s)
    return moving
