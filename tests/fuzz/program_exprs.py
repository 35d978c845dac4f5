"""Expressions, keys and destinations of generated programs, drawn against
the values the program holds at that point.

Every piece is Python text evaluated with NumPy in the environment the
program has reached (``g.env``: its locals, as NumPy ran it so far), so its
shape, dtype and values are known while it is drawn.  An expression is an
``Ex``: its text, NumPy's value, and its float grid exponent ``e`` (all its
values are multiples of 2**-e; ``fuzz.exactness``).  Each node of an
expression tree is checked to be exact in its dtype (``exact_e``): no
rounding anywhere, so fused multiply-adds, reduction orders and device
math cannot change a comparison, a floor or a cast that reads it, and
every float result equals NumPy's.  A node that could round is refused
(the draw returns None and the generator draws again).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fuzz.exactness import fits, grid_exp, partial_sum_bound

CONSTANTS = [0.5, 2.0, -1.0, 1.5, 0.25, 3.0, 2, 1, -2, 4]
CMP = [">", "<", ">=", "<=", "==", "!="]


@dataclass
class Ex:
    text: str
    val: object
    e: int = 0
    atom: bool = True

    @property
    def arr(self):
        return np.asarray(self.val)

    @property
    def kind(self):
        return self.arr.dtype.kind

    @property
    def shape(self):
        return self.arr.shape

    def p(self):
        """The text, parenthesized unless atomic."""
        return self.text if self.atom else f"({self.text})"


def broadcasts_to(shape, target) -> bool:
    try:
        return np.broadcast_shapes(tuple(shape), tuple(target)) == tuple(target)
    except ValueError:
        return False


def finite_float_ok(val) -> bool:
    a = np.asarray(val)
    return a.dtype.kind != "f" or bool(np.isfinite(a).all())


def exact_e(kind, kids, val, extra=None):
    """The grid exponent of a node whose value NumPy computed as ``val``
    from ``kids`` (Ex), or None where the node could have rounded.  ``kind``:
    "move" (values copied or selected), "add", "mul", "div", "floordiv",
    "mod", "matmul", "sum", "int" (an integer-valued float)."""
    a = np.asarray(val)
    if a.dtype.kind != "f":
        return 0
    if not finite_float_ok(a):
        return None
    es = []
    for k in kids:
        ka = k.arr
        if ka.dtype.kind == "f":
            es.append(k.e)
        elif ka.dtype.kind in "iu" and ka.size and \
                float(np.abs(ka.astype(np.float64)).max()) >= 2.0 ** 24:
            return None               # the conversion to float32 could round
    bound = float(np.abs(a).max(initial=0))
    if kind == "move":
        e = max(es + [0])
    elif kind == "int":
        e = 0
    elif kind == "add" or kind == "mod":
        e = max(es + [0])
    elif kind == "mul":
        e = sum(es)
    elif kind == "div":                 # exact only by powers of two
        num, den = kids
        d = np.abs(den.arr.astype(np.float64)).ravel()
        if d.size == 0:
            return 0
        if (d == 0).any():
            return None
        m, ex = np.frexp(d)
        if not (m == 0.5).all():
            return None
        e = (num.e if num.kind == "f" else 0) + max(0, int((1 - ex).max()))
    elif kind == "matmul":
        e = sum(es)
        x, y = (np.abs(k.arr.astype(np.float64)) for k in kids)
        bound = max(bound, float(np.max(x @ y, initial=0)))
    elif kind == "sum":
        e = max(es + [0])
        bound = max(bound, partial_sum_bound(kids[0].arr, extra))
    else:
        raise AssertionError(kind)
    return e if fits(bound, e, a.dtype) else None


class Exprs:
    """Draws expressions for a generator ``g`` (rng helpers ``coin``,
    ``choice``, ``ints``; ``env``; ``eval``)."""

    def __init__(self, g):
        self.g = g

    # -- values in scope ----------------------------------------------------------
    def arrays(self, pred=lambda v: True):
        """Names of the arrays in scope (ndarrays, NumPy scalars) satisfying pred."""
        return [n for n, v in self.g.env.items()
                if isinstance(v, (np.ndarray, np.generic)) and pred(np.asarray(v))]

    def ex(self, text, kind="move", kids=(), atom=False, extra=None):
        """``text`` evaluated as an Ex, or None (NumPy refused it, or it is
        not exact)."""
        try:
            val = self.g.eval(text)
        except Exception:                       # noqa: BLE001
            return None
        if not isinstance(val, (np.ndarray, np.generic, int, float, bool)):
            return None
        if isinstance(val, (int, float, bool)):
            val = np.asarray(val)
        e = exact_e(kind, kids, val, extra)
        if e is None:
            return None
        return Ex(text, val, e, atom)

    # -- leaves -------------------------------------------------------------------
    def constant(self, kind=None):
        g = self.g
        if kind == "b":
            return Ex(g.choice(["True", "False"]), np.asarray(True), 0)
        if kind in ("i", "u"):
            c = g.choice([1, 2, 3, -1, 0, 5])
        else:
            c = g.choice(CONSTANTS)
        text = repr(c)
        return Ex(text, np.asarray(c), grid_exp(c) if isinstance(c, float) else 0,
                  atom=c >= 0)

    def static(self):
        for n, v in self.g.env.items():
            if n in self.g.statics:
                return Ex(n, np.asarray(v), grid_exp(v) if isinstance(v, float) else 0)
        return None

    def region_key(self, shape, target):
        """Text of a basic key (slices only) of an array of ``shape`` whose
        result has shape ``target`` (same ndim), or None."""
        g = self.g
        parts = []
        for n, t in zip(shape, target):
            if t > n:
                return None
            if t == n:
                parts.append(g.choice([":", ":", "::-1" if n > 1 else ":", f"{-n}:"
                                       if n > 1 else ":"]))
                continue
            opts = []
            for o in range(0, n - t + 1):
                end = o + t
                opts.append(f"{o}:{end}" if end < n else f"{o}:")
                if end < n:
                    opts.append(f"{o if o else ''}:{end - n}")
                if o + 2 * (t - 1) < n:
                    stop = o + 2 * (t - 1) + 1
                    opts.append(f"{o if o else ''}:{stop if stop < n else ''}:2")
                if o + t == n and t < n:
                    opts.append(f"{o - n}:")
            rev_start = n - 1 - int(g.ints(0, n - t + 1))
            opts.append(f"{rev_start}:{'' if rev_start - t < 0 else rev_start - t}:-1")
            parts.append(g.choice(opts))
        while parts and parts[-1] == ":" and g.coin(0.7):
            parts.pop()
        return ", ".join(parts) if parts else "..."

    def leaf(self, target=None, kinds="fiub", allow_const=True):
        """An operand whose shape broadcasts to ``target`` (None: any shape)."""
        g = self.g
        forms = ["var"] * 4 + ["region"] * 3 + ["T", "reduce"] + ["const"] * (2 if
                                                                             allow_const else 0)
        for _ in range(8):
            form = g.choice(forms)
            if form == "const":
                if target is None:
                    continue
                st = self.static() if g.coin(0.4) else None
                c = st or self.constant(g.choice(list(kinds)))
                if c.kind in kinds or (c.kind in "iu" and "f" in kinds):
                    return c
                continue
            names = self.arrays(lambda v: v.dtype.kind in kinds)
            if not names:
                return self.constant("f" if "f" in kinds else kinds[0]) if target is not None \
                    and allow_const else None
            n = g.choice(names)
            v = np.asarray(g.env[n])
            if form == "var":
                if target is None or broadcasts_to(v.shape, target):
                    return self.ex(n, atom=True)
            elif form == "region" and target is not None and v.ndim == len(target) \
                    and v.ndim and v.shape != tuple(target):
                key = self.region_key(v.shape, target)
                if key is not None:
                    return self.ex(f"{n}[{key}]", atom=True)
            elif form == "T" and v.ndim >= 2:
                if target is None or broadcasts_to(v.shape[::-1], target):
                    return self.ex(f"{n}.T", atom=True)
            elif form == "reduce" and v.ndim >= 1 and v.dtype.kind != "b":
                ax = int(g.ints(0, v.ndim))
                keep = g.coin(0.3)
                op = g.choice(["sum", "sum", "max", "min"])
                shape = list(v.shape)
                if keep:
                    shape[ax] = 1
                else:
                    del shape[ax]
                if target is None or broadcasts_to(shape, target):
                    kd = ", keepdims=True" if keep else ""
                    base = self.ex(n, atom=True)
                    if base is None:
                        continue
                    return self.ex(f"{n}.{op}(axis={ax}{kd})", "sum" if op == "sum" else "move",
                                   [base], atom=True, extra=(ax,))
        return None

    # -- expressions ------------------------------------------------------------------
    def expr(self, target=None, depth=2, kinds="fiub", numeric=False):
        """An exact expression whose shape broadcasts to ``target``."""
        for _ in range(6):
            x = self._expr(target, depth, kinds, numeric)
            if x is not None and (target is None or broadcasts_to(x.shape, target)):
                if numeric and x.kind == "b":
                    continue
                return x
        return None

    def _expr(self, target, depth, kinds, numeric):
        g = self.g
        if depth <= 0 or g.coin(0.3):
            return self.leaf(target, kinds)
        form = g.choice(["arith"] * 6 + ["scaled", "ufunc2", "where", "unary", "compare",
                                         "astype", "matmul", "divmod", "bits", "div"])
        sub = lambda: self.expr(target, depth - 1, kinds, numeric=True)   # noqa: E731
        if form == "arith":
            a, b = sub(), sub()
            if a is None or b is None:
                return None
            op = g.choice(["+", "-", "*", "+", "-"])
            return self.ex(f"{a.p()} {op} {b.p()}", "mul" if op == "*" else "add", [a, b])
        if form == "scaled":
            a, b = sub(), self.leaf(target, kinds)
            if a is None or b is None:
                return None
            c = self.static() if g.coin(0.3) else None
            c = c or self.constant("f")
            inner = self.ex(f"{a.p()} + {b.p()}", "add", [a, b])
            if inner is None:
                return None
            return self.ex(f"{c.p()} * ({inner.text})", "mul", [c, inner])
        if form == "ufunc2":
            a, b = sub(), sub()
            if a is None or b is None:
                return None
            f = g.choice(["maximum", "minimum"])
            return self.ex(f"np.{f}({a.text}, {b.text})", "move", [a, b], atom=True)
        if form == "where":
            c, a, b = self.compare(target), sub(), sub()
            if c is None or a is None or b is None:
                return None
            return self.ex(f"np.where({c.text}, {a.text}, {b.text})", "move", [a, b], atom=True)
        if form == "unary":
            a = sub()
            if a is None:
                return None
            f = g.choice(["-{}", "np.abs({})", "abs({})", "np.negative({})", "np.floor({})",
                          "np.square({})"])
            if a.kind == "b" and f != "np.abs({})":
                return None
            kind = "mul" if "square" in f else ("int" if "floor" in f else "move")
            return self.ex(f.format(a.p() if f == "-{}" else a.text), kind,
                           [a, a] if kind == "mul" else [a], atom=f != "-{}")
        if form == "compare":
            if numeric:
                return None
            return self.compare(target)
        if form == "astype":
            a = sub()
            if a is None:
                return None
            dt = g.choice(["np.float64", "np.float32", "np.int64", "np.int32", "float", "int"])
            return self.ex(f"{a.p()}.astype({dt})", "move", [a], atom=True)
        if form == "matmul":
            return self.matmul(target)
        if form == "divmod":
            a, b = sub(), self.nonzero_leaf(target)
            if a is None or b is None:
                return None
            op = g.choice(["//", "%"])
            return self.ex(f"{a.p()} {op} {b.p()}", "int" if op == "//" else "mod", [a, b])
        if form == "div":
            a, b = sub(), self.leaf(target, "fi")
            if a is None or b is None:
                return None
            return self.ex(f"{a.p()} / {b.p()}", "div", [a, b])
        if form == "bits":
            a = self.leaf(target, "iub")
            if a is None:
                return None
            if a.kind in "iu" and g.coin(0.4):
                op = g.choice(["<<", ">>"])
                return self.ex(f"{a.p()} {op} {g.choice([1, 2, 3])}", "move", [a])
            b = self.leaf(target, "iu" if a.kind in "iu" else "b")
            if b is None:
                return None
            if g.coin(0.2):
                return self.ex(f"~{a.p()}", "move", [a])
            op = g.choice(["&", "|", "^"])
            return self.ex(f"{a.p()} {op} {b.p()}", "move", [a, b])
        return None

    def compare(self, target=None):
        a = self.leaf(target, "fi")
        b = self.leaf(target, "fi")
        if a is None or b is None:
            return None
        return self.ex(f"{a.p()} {self.g.choice(CMP)} {b.p()}", "move", [a, b])

    def nonzero_leaf(self, target):
        for _ in range(4):
            b = self.leaf(target, "fi")
            if b is not None and b.arr.size and (b.arr != 0).all():
                return b
        return None

    def matmul(self, target):
        """``a @ b`` (or np.dot, np.outer) with a result broadcasting to ``target``."""
        g = self.g
        names = self.arrays(lambda v: v.ndim in (1, 2) and v.dtype.kind in "fi")
        if len(names) < 1:
            return None
        for _ in range(6):
            a, b = g.choice(names), g.choice(names)
            va, vb = np.asarray(g.env[a]), np.asarray(g.env[b])
            ta = g.choice([a, f"{a}.T"]) if va.ndim == 2 else a
            tb = g.choice([b, f"{b}.T"]) if vb.ndim == 2 else b
            form = g.choice(["{} @ {}", "np.dot({}, {})", "np.matmul({}, {})",
                             "np.outer({}, {})"])
            text = form.format(ta, tb)
            try:
                shape = np.shape(g.eval(text))
            except Exception:                   # noqa: BLE001
                continue
            if target is not None and not broadcasts_to(shape, target):
                continue
            ka, kb = self.ex(ta, atom=True), self.ex(tb, atom=True)
            if ka is None or kb is None:
                continue
            if "outer" in form:
                return self.ex(text, "mul", [ka, kb], atom=True)
            return self.ex(text, "matmul", [ka, kb], atom="@" not in form)
        return None

    # -- keys ---------------------------------------------------------------------------
    def basic_key(self, shape, allow_scalar=True):
        """Text of a basic key of an array of ``shape``: ints (negative too),
        slices with steps and negative bounds, None, Ellipsis."""
        g = self.g
        parts = []
        for n in shape:
            r = g.ints(0, 10)
            if r < 3 and n > 0:
                i = int(g.ints(-n, n))
                parts.append(str(i))
            elif r < 5:
                parts.append(":")
            elif r < 8 and n > 1:
                parts.append(self.slice_text(n))
            else:
                parts.append(g.choice(["1:", ":-1", "::2", "::-1", "-2:", "1:-1"]))
        if parts and g.coin(0.15):
            parts.insert(int(g.ints(0, len(parts) + 1)), "None")
        if len(parts) >= 2 and g.coin(0.2):
            # Ellipsis for a run of full slices, or in front
            parts = ["..."] + parts[int(g.ints(1, len(parts))):]
        if not allow_scalar and shape and len(parts) == len(shape) \
                and all(p.lstrip("-").isdigit() for p in parts):
            parts[-1] = ":" if shape else parts[-1]
        return ", ".join(parts) if parts else "..."

    def slice_text(self, n):
        """A slice of an axis of length ``n``: steps of either sign, bounds
        negative or omitted, empty now and then."""
        g = self.g
        step = g.choice([1, 1, 1, 2, -1, -2, 3])
        a, b = sorted(int(v) for v in g.rng.choice(n + 1, 2, replace=False))
        if g.coin(0.1):
            a, b = b, a                     # empty
        if step < 0:
            a, b = min(b, n - 1), a - 1     # from b down to a
        def bound(v, omit):
            if omit or v < 0:
                return ""
            return str(v - n) if v < n and g.coin(0.3) else str(v)
        text = f"{bound(a, g.coin(0.2) and (a == 0 or step < 0 and a == n - 1))}:" \
               f"{bound(b, g.coin(0.2) and b == n)}"
        return text + (f":{step}" if step != 1 else "")

    def advanced_key(self, name):
        """Text of an advanced key of array ``name``: integer lists/arrays
        (duplicates too), a boolean mask computed from the data, an integer
        index computed from the data, mixed with a slice."""
        g = self.g
        v = np.asarray(g.env[name])
        if not v.ndim or not v.shape[0]:
            return None
        n = v.shape[0]
        r = g.ints(0, 10)
        if r < 3:
            idx = [int(g.ints(-n, n)) for _ in range(int(g.ints(1, 4)))]
            lit = repr(idx) if g.coin(0.5) else f"np.array({idx!r})"
            return lit + (", 1:" if v.ndim >= 2 and v.shape[1] > 1 and g.coin(0.3) else "")
        if r < 7:           # a mask from the data: the array itself, or one of its shape
            cands = [m for m in self.arrays(lambda a: a.shape == v.shape and a.dtype.kind in "fi")]
            if not cands:
                return None
            m = g.choice(cands)
            c = g.choice([0, 1, -1, 0.5, 2])
            return f"{m} {g.choice(CMP)} {c}"
        if r < 8:
            cands = self.arrays(lambda a: a.shape == v.shape and a.dtype.kind == "b")
            if cands:
                return g.choice(cands)
            return None
        # integer indices computed from the data (lazy gathers/scatters)
        cands = self.arrays(lambda a: a.ndim == 1 and a.dtype.kind in "iu" and a.size)
        if not cands:
            return None
        return f"{g.choice(cands)} % {n}"
