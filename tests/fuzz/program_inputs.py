"""The arguments of a generated program: what is passed, in which memory
layout, and how to make fresh copies of them for each run.

A program is called several times on equal inputs (NumPy, then ``pa.jit``
once tracing and once from its cache), and each call may write its
arguments, so the inputs are described (``ArgSpec``) and made anew for each
call by ``make_inputs``.  Layouts NumPy code meets: C order, a strided view
of a larger buffer (``base[..., ::2]``, whose other elements must survive a
write-back), an offset view (``base[1:]``), Fortran order, read-only, a
0-d array, and the same array passed twice.  ``inputs_source`` prints the
same construction as Python for a reproducer script.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fuzz.dtypes import _tn

# the dtypes of generated arguments (the device targets' core dtypes)
ARG_DTYPES = [np.dtype(t) for t in (np.float64, np.float32, np.int64, np.int32, np.bool_)]
ARG_WEIGHTS = [0.34, 0.24, 0.16, 0.14, 0.12]
LAYOUTS = ["c", "strided", "offset", "fortran", "readonly"]
# values a strided base holds between the argument's elements: a write-back
# that touches them shows
FILLER = {"f": 99.0, "i": 77, "b": True}


@dataclass
class ArgSpec:
    """One parameter: an array (``values`` in C order, ``layout``), the same
    array as an earlier parameter (``alias``: its index), or a static Python
    scalar (``static``)."""
    name: str
    values: np.ndarray = None
    layout: str = "c"
    alias: int = None
    static: object = None

    @property
    def is_array(self):
        return self.static is None

    def describe(self):
        if not self.is_array:
            return f"{self.name}={self.static!r}"
        if self.alias is not None:
            return f"{self.name}=<argument {self.alias} again>"
        v = self.values
        return f"{self.name}: {v.dtype.name}{list(v.shape)} {self.layout}"


def array_values(rng, shape, dtype) -> np.ndarray:
    """Small exact values: floats are multiples of 1/4 in [-4, 4] (so every
    sum and product the generator allows stays exact), integers in [-8, 8]."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind == "f":
        return (rng.integers(-16, 17, shape) / 4.0).astype(dt)
    return rng.integers(-8, 9, shape).astype(dt)


def _lay_out(values, layout):
    """(argument, base it is a view of or None) in ``layout``."""
    v = values
    if layout == "strided" and v.ndim >= 1:
        base = np.empty(v.shape[:-1] + (2 * v.shape[-1],), v.dtype)
        base[...] = FILLER[v.dtype.kind if v.dtype.kind != "u" else "i"]
        base[..., ::2] = v
        return base[..., ::2], base
    if layout == "offset" and v.ndim >= 1:
        base = np.empty((v.shape[0] + 1,) + v.shape[1:], v.dtype)
        base[...] = FILLER[v.dtype.kind if v.dtype.kind != "u" else "i"]
        base[1:] = v
        return base[1:], base
    if layout == "fortran" and v.ndim >= 2:
        return np.array(v, order="F"), None     # a copy (asfortranarray of a column is v)
    a = v.copy()
    if layout == "readonly":
        a.flags.writeable = False
    return a, None


def make_inputs(specs):
    """(arguments, bases): fresh arguments for one call, and for each the
    buffer it views (strided and offset layouts) or None."""
    args, bases = [], []
    for s in specs:
        if not s.is_array:
            args.append(s.static)
            bases.append(None)
        elif s.alias is not None:
            args.append(args[s.alias])
            bases.append(None)
        else:
            a, base = _lay_out(s.values, s.layout)
            args.append(a)
            bases.append(base)
    return args, bases


def _literal(v):
    return f"np.array({v.tolist()!r}, np.{_tn(v.dtype)}).reshape({v.shape!r})"


def inputs_source(specs) -> str:
    """Python source of ``def inputs():`` returning (arguments, bases), as
    ``make_inputs`` makes them."""
    lines = ["def inputs():", "    args, bases = [], []"]
    for k, s in enumerate(specs):
        if not s.is_array:
            lines.append(f"    args.append({s.static!r}); bases.append(None)")
            continue
        if s.alias is not None:
            lines.append(f"    args.append(args[{s.alias}]); bases.append(None)   "
                         "# the same array again")
            continue
        v = s.values
        lines.append(f"    v = {_literal(v)}")
        fill = FILLER[v.dtype.kind if v.dtype.kind != "u" else "i"]
        if s.layout == "strided" and v.ndim >= 1:
            lines += [f"    base = np.full(v.shape[:-1] + (2 * v.shape[-1],), {fill!r}, v.dtype)",
                      "    base[..., ::2] = v",
                      "    args.append(base[..., ::2]); bases.append(base)"]
        elif s.layout == "offset" and v.ndim >= 1:
            lines += [f"    base = np.full((v.shape[0] + 1,) + v.shape[1:], {fill!r}, v.dtype)",
                      "    base[1:] = v",
                      "    args.append(base[1:]); bases.append(base)"]
        elif s.layout == "fortran" and v.ndim >= 2:
            lines.append("    args.append(np.asfortranarray(v)); bases.append(None)")
        elif s.layout == "readonly":
            lines += ["    v.flags.writeable = False", "    args.append(v); bases.append(None)"]
        else:
            lines.append("    args.append(v); bases.append(None)")
    lines.append("    return args, bases")
    return "\n".join(lines)


def draw_args(rng):
    """The parameters of one program: 1-4 arrays of shapes drawn from a few
    related dimensions (NPBench's N, M, K), sometimes one passed twice, and
    one static Python scalar."""
    N, M, K = (int(x) for x in rng.integers(2, 6, 3))
    K = min(K, 3)
    shapes = [(N,), (M,), (N, M), (M, N), (N, N), (K, N, M), (N, 1), (), (M, M), (N + 2,)]
    weights = np.array([5, 3, 6, 2, 3, 2, 1, 1, 1, 2], float)
    names = ["A", "B", "x", "y"] if rng.random() < 0.5 else ["u", "v", "w", "C"]
    specs = []
    for k in range(int(rng.integers(1, 5))):
        if k and rng.random() < 0.12:               # the same array passed twice
            specs.append(ArgSpec(names[k], alias=int(rng.integers(k))))
            continue
        shape = shapes[rng.choice(len(shapes), p=weights / weights.sum())]
        dtype = ARG_DTYPES[rng.choice(len(ARG_DTYPES), p=ARG_WEIGHTS)]
        r = rng.random()
        layout = "c" if r < 0.6 or not shape else LAYOUTS[int(rng.integers(1, len(LAYOUTS)))]
        if layout == "fortran" and len(shape) < 2:
            layout = "strided"
        specs.append(ArgSpec(names[k], array_values(rng, shape, dtype), layout))
    for s in specs:                                 # an alias inherits its array's layout
        if s.alias is not None:
            s.values = specs[s.alias].values
            s.layout = specs[s.alias].layout
    if rng.random() < 0.5:
        specs.append(ArgSpec("n", static=int(rng.integers(1, 4))))
    else:
        specs.append(ArgSpec("alpha", static=float(rng.choice([0.5, 1.5, 2.0, -1.0, 0.25,
                                                              3.0, -0.5]))))
    return specs, (N, M, K)
