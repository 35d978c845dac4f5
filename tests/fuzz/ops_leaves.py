"""Op generators that add new leaves to the DAG: lazy constants (``arange``,
``full``, ``eye``, ...), captured NumPy data (``pa.asarray``), draws of
``pa.random``, and pairs of placeholders whose names a naive renaming maps
onto each other.

Each ``op_*(b)`` takes the ``_Builder`` and returns the new entry or None.
"""
from __future__ import annotations

import numpy as np

import polyarray as pa
from fuzz.case import Entry
from fuzz.dtypes import BOOL, DTYPES, INT_DTYPES, _tn
from fuzz.exactness import grid_exp
from fuzz.names import HOSTILE_PAIRS


def op_constant(b):
    n = b.choice([b.A, b.B])
    form = b.choice([f"xp.arange({n})", f"xp.arange({n}, dtype=xp.{_tn(b.choice(DTYPES))})",
                     f"xp.ones(({b.A}, {b.B}), xp.{_tn(b.choice(DTYPES))})",
                     f"xp.full(({n},), {b.scalar(b.choice(INT_DTYPES))}, "
                     f"xp.{_tn(b.choice(INT_DTYPES))})",
                     f"xp.zeros(({n},), xp.{_tn(b.choice(DTYPES))})",
                     f"xp.eye({n}, dtype=xp.{_tn(b.choice(DTYPES))})",
                     f"xp.arange(0.5, {n}.0, 0.5)", f"xp.arange({float(n)!r})"])
    if "full" in form:
        # NumPy 2 refuses out-of-range fills; keep the value in the dtype
        dt = np.dtype(form.rsplit("xp.", 1)[1].rstrip(")").rstrip("_"))
        info = np.iinfo(dt)
        val = int(b.rng.integers(max(int(info.min), -300), min(int(info.max), 300) + 1))
        form = f"xp.full(({n},), {val}, xp.{_tn(dt)})"
    return b.apply(form, [], ("value",))


def op_data(b):
    """A captured NumPy array (``pa.asarray``), a DataWrapper leaf."""
    dt = b.choice(DTYPES)
    shape = b.choice([(b.B,), (b.A, b.B), (1,)]) if b.size_class == "small" else (b.B,)
    vals = b.values(shape, dt)
    lit = f"np.array({np.asarray(vals).tolist()!r}, np.{_tn(dt)})"
    if np.asarray(vals).size > 64:
        return None
    return b.apply(f"xp.asarray({lit})", [], ("value",))


def op_pair(b):
    """Two placeholders whose names a naive renaming maps onto each other, used
    together (``i - p_i``)."""
    free = [pr for pr in HOSTILE_PAIRS if not (set(pr) & b.used_names)]
    if not free:
        return None
    n1, n2 = free[int(b.rng.integers(len(free)))]
    shape = b.choice(b.shapes())
    dt = b.choice(DTYPES)
    x = b.add_placeholder(shape=shape, dtype=dt, name=n1)
    y = b.add_placeholder(shape=shape, dtype=dt, name=n2)
    form = b.choice(["({0} - {1})", "({1} - {0})", "xp.where({0} > {1}, {0}, {1})",
                     "({0} == {1})", "xp.concatenate([{0}[None], {1}[None]])",
                     "({0} ^ {1})", "({0} < {1}).sum()"])
    if dt == BOOL:
        form = b.choice(["({0} ^ {1})", "({0} == {1})", "({0} & ~{1})"])
    return b.apply(form.format(x.var, y.var), [x.var, y.var], ("same", []))


def op_random(b):
    """A draw of ``pa.random`` (the Philox bits computed inside the kernel
    that reads them): of ``default_rng`` (Philox4x32) for even seeds, whose
    numbers are not NumPy's, so the value is polyarray's NumPy target's,
    which ``tests/frontend/test_random.py`` checks against Random123's known
    answers; of NumPy's ``Philox`` for odd ones, whose ``random`` and
    ``uniform`` are NumPy's own numbers (the value NumPy gives), the rest
    the NumPy target's.  Integers and uniform floats are exact on every
    target; normals and exponentials (the GPU layouts draw them in runs
    that share a block, a pair's logarithm and one sincos) are inexact."""
    seed = int(b.rng.integers(2**32))
    shape = b.choice(b.shapes())
    n = b.choice([b.A, b.B])
    dt = b.choice(INT_DTYPES + [BOOL])
    hi = 1 if dt == BOOL else int(min(np.iinfo(dt).max, 1000))      # the largest value
    lo = 0 if dt == BOOL else int(max(np.iinfo(dt).min, -1000))
    numpy_philox = seed % 2 == 1
    rng = f"xp.random.Generator(xp.random.Philox({seed}))" if numpy_philox else \
        f"xp.random.default_rng({seed})"
    code = b.choice([f"{rng}.integers({lo}, {hi + 1}, {shape!r}, xp.{_tn(dt)})",
                     f"{rng}.integers({lo}, {hi}, {shape!r}, xp.{_tn(dt)}, endpoint=True)",
                     f"{rng}.random({shape!r})", f"{rng}.random({shape!r}, xp.float32)",
                     f"{rng}.uniform(-2.0, 2.0, {shape!r})", f"{rng}.permutation({n})",
                     f"{rng}.choice({n}, {shape!r})",
                     f"{rng}.standard_normal({shape!r}, xp.float32)",
                     f"{rng}.standard_normal({shape!r})", f"{rng}.normal(1.0, 2.0, {shape!r})",
                     f"{rng}.standard_exponential({shape!r})"])
    arr = eval(code, {"xp": pa})                # noqa: S307
    if numpy_philox and code[len(rng):].startswith((".random(", ".uniform(")):
        val = np.asarray(eval(code, {"xp": np}))    # noqa: S307
    else:
        val = pa.compile(arr, target="numpy")()
    # normals and exponentials go through each target's log, sqrt, sin and cos:
    # close on every target, not bit for bit (inexact: compared with tolerances)
    inexact = any(d in code for d in ("normal(", "exponential("))
    e = None if inexact else grid_exp(val) if val.dtype.kind == "f" else 0
    ent = Entry(b.fresh_var(), arr, val, e, code, ())
    b.entries.append(ent)
    b.ops.append(code)
    return ent
