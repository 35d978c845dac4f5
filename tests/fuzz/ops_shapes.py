"""Op generators that change shapes: reductions and arg-reductions, scans, gathers,
layout views (slices, flips, transposes), reshape, broadcast, concatenate,
matmul, and row reductions read back by their rows (the fused ``rows`` kernels).

Each ``op_*(b)`` takes the ``_Builder`` and returns the new entry or None.
"""
from __future__ import annotations

import math

import numpy as np

from fuzz.builder import _entry_of, _is_int
from fuzz.dtypes import DTYPES, FLOAT_DTYPES, INT_DTYPES, _tn
from fuzz.exactness import reduction_order_safe, scan_rounding_safe


def op_reduce(b):
    a = b.pick()
    if a is None:
        return None
    op = b.choice(["sum", "sum", "prod", "max", "min", "any", "all", "mean"])
    if op in ("any", "all") and not b.usable(a, True):
        return None
    if op in ("max", "min") and a.val.size == 0:
        return None
    ax = b.axis_arg(a)
    kd = b.coin(0.3)
    extra, out = "", a.dtype
    if op in ("sum", "prod") and b.coin(0.15):
        out = b.choice(INT_DTYPES + FLOAT_DTYPES) if a.kind != "f" else b.choice(FLOAT_DTYPES)
        extra = f", dtype=xp.{_tn(out)}"
    axes = tuple(range(a.ndim)) if ax is None else tuple(
        x % a.ndim for x in (ax if isinstance(ax, tuple) else (ax,)))
    rule = {"sum": ("sum", [], axes), "prod": ("prod", [], axes),
            "mean": ("inexact",)}.get(op, ("move",))
    if extra and "float32" in extra and a.dtype != np.float32:
        rule = ("inexact",)
    if not reduction_order_safe(op, a.val, axes, out):
        return None
    return b.apply(f"{a.var}.{op}(axis={ax!r}, keepdims={kd}{extra})", [a.var], rule)


# scan dtypes of the single-pass kernel (CUDA, last axis, rows of >= 1024)
SCAN_DTYPES = [np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64,
                                     np.uint32, np.uint64)]


def op_scan(b):
    """A running sum or product: ``cumsum``, ``cumprod``, the array API's
    ``cumulative_sum``/``cumulative_prod`` (sometimes with the initial
    value), sometimes with ``dtype=``.  Float scans combine in another
    order than NumPy's sequential loop, like a sum over the scanned axis:
    the "sum"/"prod" rules, and only where no order can overflow (a product
    that overflows to inf and meets a 0 is NaN in one order and 0 in the
    other) and NumPy's own rounding is well within the tolerance
    (``exactness.scan_rounding_safe``).  Integer scans are exact, wrapping
    as NumPy's.  About a third scan a row of 1024..5000 values along the
    last axis (``_long_scan_input``), which the CUDA target scans in one
    single-pass kernel."""
    long = b.coin(0.3)
    fn = b.choice(["cumsum", "cumsum", "cumsum", "cumprod", "cumprod", "cumulative_sum",
                   "cumulative_prod"])
    op = "prod" if fn.endswith("prod") else "sum"
    if long:
        a = _long_scan_input(b, op)
    else:
        a = b.pick(lambda e: e.kind in "biuf")
    if a is None:
        return None
    if long:
        ax = -1 if a.ndim > 1 or b.coin(0.5) else b.choice([0, None])
    elif a.ndim == 0:
        ax = None
    else:
        ax = b.axis_arg(a, allow_tuple=False)
        if ax is None and a.ndim > 1 and fn.startswith("cumulative"):
            ax = -1         # the array API's scans flatten only 1-d arrays
    extra, out = "", None
    if b.coin(0.35 if long else 0.2):   # long: 32-bit scans too (small integers widen)
        if long:
            out = b.choice(SCAN_DTYPES if a.kind != "f" else FLOAT_DTYPES[1:])
        else:
            out = b.choice(INT_DTYPES + FLOAT_DTYPES) if a.kind != "f" else \
                b.choice(FLOAT_DTYPES)
        extra = f", dtype=xp.{_tn(out)}"
    if fn.startswith("cumulative") and b.coin(0.6):
        extra += ", include_initial=True"
    code = f"xp.{fn}({a.var}, axis={ax!r}{extra})"
    if out is None:                 # NumPy's own result dtype (small integers widen)
        with np.errstate(all="ignore"):
            out = getattr(np, fn)(np.zeros((1,) * max(a.ndim, 1), a.dtype), axis=0).dtype
    axes = tuple(range(a.ndim)) if ax is None else (ax % a.ndim,)
    if not reduction_order_safe(op, a.val, axes, out):
        return None
    if not scan_rounding_safe(op, a.val, ax, out):
        return None
    rule = (op, [], axes)
    if out == np.float32 and a.dtype != np.float32:
        rule = ("inexact",)
    return b.apply(code, [a.var], rule)


def _long_scan_input(b, op):
    """An entry whose last axis holds 1024..5000 values (1-d, or 2-d of a
    few rows): one already built, or a new placeholder of a scan dtype
    (sometimes a narrow or bool one, which widens).  Float products get
    factors near 1 (powers of two, sometimes jittered by 1e-3): other
    values' running products overflow or underflow within a few hundred."""
    a = b.pick(lambda e: e.ndim in (1, 2) and e.shape[-1] >= 1024 and e.kind in "biuf")
    if a is not None and b.coin(0.5):
        return a
    n = b.choice([1024, 1025, 2047, 2048, 4096, 4100, 5000]) if b.coin(0.5) else \
        int(b.rng.integers(1024, 5001))
    shape = (n,) if b.coin(0.5) else (b.choice([1, 2, 3, 5]), n)
    dtype = b.choice(SCAN_DTYPES * 3 + [np.dtype(np.int8), np.dtype(np.uint16),
                                        np.dtype(np.bool_)])
    values = None
    if op == "prod" and dtype.kind == "f":
        rng = b.rng
        values = rng.choice([1.0, -1.0, 2.0, 0.5, 0.0, -0.0], shape,
                            p=[0.6, 0.38, 0.008, 0.008, 0.002, 0.002])
        if b.coin(0.5):
            values = values * rng.uniform(0.999, 1.001, shape)
    return b.add_placeholder(shape=shape, dtype=dtype, values=values)


def op_argreduce(b):
    if b.coin(0.25):
        return _argreduce_rows(b)
    a = b.pick(lambda e: b.usable(e, True) and e.val.size > 0)
    if a is None:
        return None
    ax = b.axis_arg(a, allow_tuple=False)
    if ax is not None and a.shape[ax] == 0:
        return None
    op = b.choice(["argmax", "argmin"])
    return b.apply(f"{a.var}.{op}(axis={ax!r})", [a.var])


def _argreduce_rows(b):
    """argmax/argmin along the last axis of an input: CUDA's row kernel (a
    work-group per row, warp shuffles) in its "any-size" layout.  Few
    distinct values (ties across the work-items), a NaN or an infinity in
    some rows, NaNs ending a row."""
    rows, n = b.choice([(3, 300), (5, 257), (2, 1030), (7, 33)])
    dtype = b.choice([np.float32, np.float64, np.int32, np.int64])
    values = b.rng.integers(-3, 4, (rows, n)).astype(dtype)
    if np.dtype(dtype).kind == "f":
        for _ in range(int(b.rng.integers(0, 4))):
            values.flat[int(b.rng.integers(values.size))] = b.choice([np.nan, np.inf, -np.inf])
        if b.coin(0.3):
            values[int(b.rng.integers(rows)), -int(b.rng.integers(1, 4)):] = np.nan
    a = b.add_placeholder(shape=(rows, n), dtype=dtype, values=values)
    op = b.choice(["argmax", "argmin"])
    return b.apply(f"{a.var}.{op}(axis=-1)", [a.var])


def op_gather(b):
    a = b.pick(lambda e: e.ndim >= 1 and all(n > 0 for n in e.shape))
    if a is None:
        if b.coin(0.5):     # a source long enough that small index types wrap: n > 127
            a = b.add_placeholder(shape=(b.choice([130, 200, 300]),),
                                  dtype=b.choice(DTYPES))
        else:
            return None
    axis = 0 if a.ndim == 1 or b.coin(0.6) else a.ndim - 1
    n = a.shape[axis]

    def index(n):
        def ok(e):
            return _is_int(e) and e.ndim <= 2 and e.val.size > 0 and \
                int(e.val.min()) >= -n and int(e.val.max()) < n
        e = b.pick(ok) if b.coin(0.4) else None
        if e is not None:
            return e.var, [e.var]
        def computed(x):
            return _is_int(x) and 0 < x.ndim <= 2 and x.val.size > 0
        # a computed index, computed in the gather's kernel where it can be (an
        # outlined region then prints the gather itself: codegen/emit/outline.py)
        c = (b.pick(lambda x: computed(x) and x.name is None) or b.pick(computed)) \
            if b.coin(0.35) else None
        if c is not None and n <= 127:      # a computed index: c % n is in [0, n)
            k = b.apply(f"({c.var} % {n})", [c.var]) if b.coin(0.7) else None
            if k is not None:       # shared, so a temporary of the gather's kernel
                return f"xp.where({k.var} > {n // 2}, {k.var}, {n - 1} - {k.var})", [k.var]
            return f"({c.var} % {n})", [c.var]
        dt = b.choice(INT_DTYPES)
        info = np.iinfo(dt)
        lo = max(int(info.min), -n) if b.coin(0.7) else 0
        hi = min(int(info.max), n - 1)
        shape = b.choice([(int(b.rng.integers(1, 7)),), (2, 3), (1,), (3, 1),
                          (int(b.rng.integers(1, 5)),)])
        vals = b.rng.integers(lo, hi + 1, shape)
        return b.add_placeholder(shape=shape, dtype=dt, values=vals).var, None

    if a.ndim >= 2 and b.coin(0.25):
        iv, deps = index(a.shape[0])
        deps = deps or [iv]
        jv, jdeps = index(a.shape[1])
        jdeps = jdeps or [jv]
        ent_i = _entry_of(b, deps[-1])
        ent_j = _entry_of(b, jdeps[-1])
        try:
            np.broadcast_shapes(ent_i.shape, ent_j.shape)
        except ValueError:
            jv, jdeps = repr(int(b.rng.integers(-a.shape[1], a.shape[1]))), []
        return b.apply(f"{a.var}[{iv}, {jv}]", [a.var] + deps + jdeps)
    iv, deps = index(n)
    deps = deps or [iv]
    if axis == 0:
        code = f"{a.var}[{iv}]" if b.coin(0.7) else f"{a.var}[{iv}, ...]"
    else:
        code = f"{a.var}[..., {iv}]" if b.coin(0.5) else \
            f"{a.var}[{', '.join([':'] * axis)}, {iv}]"
    return b.apply(code, [a.var] + deps)


def op_layout(b):
    a = b.pick(lambda e: e.ndim >= 1)
    if a is None:
        return None
    nd = a.ndim
    forms = ["{}[::-1]", "{}[1:]", "{}[::2]", "{}[-1]", "{}[None]", "xp.flip({})",
             "xp.expand_dims({}, 0)"]
    if nd >= 2:
        forms += ["{}.T", "{}.T", "{}[:, ::-1]", "{}[..., 1:]", "{}[1:, :-1]",
                  "xp.swapaxes({}, 0, -1)", "{}[:, 0]", "{}[0, ::-1]",
                  "xp.moveaxis({}, 0, -1)", "xp.expand_dims({}, -1)"]
    if nd == 3:
        forms += ["xp.transpose({}, (1, 2, 0))", "xp.transpose({}, (2, 0, 1))",
                  "{}[:, ::2, ::-1]"]
    code = b.choice(forms).format(a.var)
    if code.endswith("[-1]") and a.shape[0] == 0 or code.endswith("[:, 0]") and a.shape[1] == 0:
        return None
    if "[0, ::-1]" in code and a.shape[0] == 0:
        return None
    return b.apply(code, [a.var])


def op_reshape(b):
    a = b.pick(lambda e: e.val.size > 0)
    if a is None:
        return None
    n = a.val.size
    divs = [d for d in range(1, n + 1) if n % d == 0]
    d1 = b.choice(divs)
    shape = b.choice([(n,), (d1, n // d1), (n // d1, d1, 1), (1, n)])
    if b.coin(0.3):
        shape = tuple(-1 if k == 0 else s for k, s in enumerate(shape))
    return b.apply(f"{a.var}.reshape({shape!r})", [a.var])


def op_broadcast(b):
    a = b.pick()
    if a is None:
        return None
    shape = tuple(b.A if n == 1 and b.coin(0.5) else n for n in a.shape)
    shape = (b.choice([2, 3]),) * b.coin(0.5) + shape
    return b.apply(f"xp.broadcast_to({a.var}, {shape!r})", [a.var])


def op_concat(b):
    a = b.pick(lambda e: e.ndim >= 1)
    if a is None:
        return None
    axis = int(b.rng.integers(a.ndim))
    others = [e for e in b.entries if e.ndim == a.ndim and e is not a and all(
        x == y for k, (x, y) in enumerate(zip(e.shape, a.shape)) if k != axis)]
    parts = [a.var]
    if others and b.coin(0.7):
        parts.append(b.choice(others).var)
    else:
        parts.append(f"{a.var}[::-1]" if axis == 0 else f"({a.var} * 2)")
    if b.coin(0.2):
        parts.append(a.var)
    deps = [p for p in parts if p.startswith("v") and p.isidentifier()] + [a.var]
    return b.apply(f"xp.concatenate([{', '.join(parts)}], axis={axis})", deps)


def op_matmul(b):
    a = b.pick(lambda e: e.ndim in (1, 2, 3) and e.kind != "b" or
               (e.ndim in (1, 2) and b.coin(0.3)))
    if a is None:
        return None
    if a.ndim == 2 and b.coin(0.15):    # one buffer read twice: Gram / covariance
        form = b.choice(["({0} @ {0}.T)", "({0}.T @ {0})"])
        return b.apply(form.format(a.var), [a.var], ("matmul",))
    if a.ndim == 2 and b.coin(0.15):    # a transposed operand read in place
        n = b.choice([1, 3, b.B, 17])
        w = b.add_placeholder(shape=(a.shape[0], n), dtype=a.dtype)
        return b.apply(f"({a.var}.T @ {w.var})", [a.var, w.var], ("matmul_t",))
    if a.ndim == 3:                     # batched, the weights shared or batched too
        n = b.choice([1, 3, b.B, 17])
        shape = (a.shape[-1], n) if b.coin(0.5) else (a.shape[0], a.shape[-1], n)
        w = b.add_placeholder(shape=shape, dtype=a.dtype)
        return b.apply(f"({a.var} @ {w.var})", [a.var, w.var], ("matmul",))
    k = a.shape[-1]
    cands = [e for e in b.entries if e.ndim in (1, 2) and e.shape[0] == k]
    if cands and b.coin(0.6):
        w = b.choice(cands)
    else:
        n = b.choice([1, 3, b.B, 16]) if b.size_class != "small" or b.coin(0.5) else b.B
        if b.size_class != "small" and a.ndim == 2 and a.shape[0] % 16 == 0 and k % 16 == 0:
            n = b.choice([16, 32, 64])
        same = a.dtype if b.coin(0.6) else b.choice(DTYPES)
        w = b.add_placeholder(shape=(k, n) if b.coin(0.85) else (k,), dtype=same)
    return b.apply(f"({a.var} @ {w.var})", [a.var, w.var], ("matmul",))


def op_sibling_products(b):
    """Small products that share one operand, side by side (nbody's three
    force products), and a product of the same operands that reads
    another's result."""
    a = b.pick(lambda e: e.ndim in (1, 2) and e.kind != "b" and e.shape[-1] > 0)
    if a is None:
        return None
    n = b.choice([1, 3, b.B])
    w = b.add_placeholder(shape=(a.shape[-1], n), dtype=a.dtype)
    form = b.choice([
        "xp.concatenate([({0} * 2) @ {1}, ({0} + 1) @ {1}, ({0} - 3) @ {1}], axis=-1)",
        "xp.stack([{0} @ {1}, {0} @ ({1} * 3), {0} @ ({1} + 2)])",
        "xp.concatenate([{0} @ {1}, xp.abs({0}) @ {1}], axis=0)",
        "(({0} * 2) @ {1}) + (((({0} * 2) @ {1}).sum() * {0}) @ {1})"])
    return b.apply(form.format(a.var, w.var), [a.var, w.var], ("matmul",))


def op_rows(b):
    """A reduction over the last axis read back by the rows it reduces (the
    fused ``rows`` kernels: softmax-like), on any dtype."""
    sums = ["({0} * {0}.sum(axis=-1, keepdims=True))",
            "(({0} - {0}.max(axis=-1, keepdims=True)) + {0}.sum(axis=-1, keepdims=True))"]
    if max(b.A, b.B) >= 4096 and b.coin(0.7):
        # the longest rows: float32 sums of thousands of terms (``builder.long_rows``)
        a, form = b.long_rows(), b.choice(sums)
        return b.apply(form.format(a.var), [a.var], ("inexact",))
    a = b.pick(lambda e: e.ndim >= 1 and e.shape[-1] > 0 and e.kind != "b") or \
        b.add_placeholder(shape=b.choice([(b.A, b.B), (b.B,), (2, b.A, b.B)]))
    if a.ndim == 0 or a.shape[-1] == 0:
        return None
    form = b.choice([
        "({0} - {0}.max(axis=-1, keepdims=True))", "({0} - {0}.min(axis=-1, keepdims=True))",
        sums[0], "({0} == {0}.max(axis=-1, keepdims=True))", sums[1],
        "xp.exp({0} - {0}.max(axis=-1, keepdims=True)) / "
        "xp.exp({0} - {0}.max(axis=-1, keepdims=True)).sum(axis=-1, keepdims=True)",
        "({0} > {0}.mean(axis=-1, keepdims=True))"])
    if ("==" in form or ">" in form) and not b.usable(a, True):
        return None
    if "exp" in form and a.kind != "f":
        return None
    if "mean" in form and (a.kind == "f" or a.dtype.itemsize > 4):
        return None         # a mean of big integers rounds in an order-dependent way
    rule = ("inexact",) if "exp" in form or ".sum(" in form and a.kind == "f" else ("same", [])
    return b.apply(form.format(a.var), [a.var], rule)


def op_nested_reduce(b):
    """A small reduction over a broadcast pair of points and centres, then a
    reduction over another axis of its result: nearest-centre search and
    its kin.  The inner reduction is unrolled into the outer one's kernel
    (``plan/materialize.py``, ``KernelBuilder.map_reduce``), so this
    checks that unrolling's NumPy semantics: wrapping integer sums,
    NaN-propagating max/min, bools, empty axes."""
    x = b.pick(lambda e: e.ndim == 2) or \
        b.add_placeholder(shape=(b.A, b.choice([0, 1, 3, 8, 16, 17])))
    if x.ndim != 2:
        return None
    n, d = x.shape
    c = b.pick(lambda e: e.ndim == 2 and e.shape[1] == d and e is not x) or \
        b.add_placeholder(shape=(b.choice([1, 3, 5, b.B]), d), dtype=x.dtype)
    form, rule = b.choice([("({0}[:, None, :] - {1}[None])", ("same", [])),
                           ("({0}[:, None, :] - {1}[None]) ** 2", ("pow", 2)),
                           ("({0}[:, None, :] * {1}[None])", ("mul",)),
                           ("({0}[:, None, :] != {1}[None])", ("move",)),
                           ("xp.maximum({0}[:, None, :], {1}[None])", ("move",))])
    if rule[0] == "pow" and x.kind == "b":
        return None
    pair = b.apply(form.format(x.var, c.var), [x.var, c.var], rule if rule[0] != "pow" else
                   ("inexact",))
    if pair is None:
        return None
    inner = b.choice(["sum", "sum", "max", "min", "prod", "any", "all"])
    if inner in ("max", "min") and d == 0 or inner in ("any", "all") and not b.usable(pair, True):
        return None
    if not reduction_order_safe(inner, pair.val, (2,), pair.dtype):
        return None
    red = b.apply(f"{pair.var}.{inner}(axis=2)", [pair.var],
                  {"sum": ("sum", [], (2,)), "prod": ("prod", [], (2,))}.get(inner, ("move",)))
    if red is None or red.val.size == 0:
        return None
    outer = b.choice(["argmin", "argmax", "max", "min", "sum"])
    if outer.startswith("arg") and not b.usable(red, True):
        outer = "sum"
    axis = b.choice([1, 1, 0])
    rule = ("sum", [], (axis,)) if outer == "sum" else ("move",)
    return b.apply(f"{red.var}.{outer}(axis={axis})", [red.var], rule)


def op_setitem(b):
    """``t[key] = v`` on a copy: an integer or a slice (steps, negative)
    along one axis, a scalar or a same-kind entry broadcast to the region; then,
    sometimes, another index set from the first (a chain read through)."""
    a = b.pick(lambda e: e.ndim >= 1 and all(n > 0 for n in e.shape))
    if a is None:
        return None
    ax = int(b.rng.integers(a.ndim))
    n = a.shape[ax]
    i = int(b.rng.integers(-n, n))
    if b.coin(0.5):
        item = str(i)
    else:
        step = b.choice([1, 1, 2, -1, -3])
        item = f"{i}::{step}" if b.coin(0.5) else f"{min(i % n, n - 1)}:{n}:{step}"
    key = ", ".join([":"] * ax + [item])
    region = np.empty(a.shape)[eval(f"np.s_[{key}]")].shape     # noqa: S307
    if math.prod(region) * (2 if item == str(i) else 1) >= a.val.size:
        return None             # every input must stay read (the runner binds them all)
    v = b.pick(lambda e: e is not a and np.can_cast(e.dtype, a.dtype, "safe") and
               len(e.shape) <= len(region) and all(
                   x in (1, y) for x, y in zip(e.shape[::-1], region[::-1])))
    deps = [a.var] + ([v.var] if v is not None else [])
    value = v.var if v is not None else repr(b.scalar(a.dtype, small=True))
    second = ""
    if item == str(i) and n > 1 and b.coin(0.4):
        j = (i + 1) % n
        other = ", ".join([":"] * ax + [str(j)])
        second = f", t.__setitem__(({other},), t[{key}])"
    code = f"(lambda t: (t.__setitem__(({key},), {value}){second}, t)[-1])(xp.array({a.var}[...]))"
    return b.apply(code, deps)


def op_attention(b):
    """``softmax(scale(Q @ K^T)) @ V`` as NumPy code writes it, and near
    misses of it: the chain the CUDA target runs as one kernel
    (``codegen/plan/attention.py``) where every condition holds, and the
    variants that must keep the generated kernels (the maximum or the sum
    along the other axis, no maximum, a shift inside ``exp``, a scale that
    is no constant factor: a sum).  The scores, the probabilities and the output
    are three entries, so later ops may read or return the inner two (the
    chain is then computed as written).  Keys of 64 to 700 rows, heads of
    16 to 64, batch axes sometimes; one case in ten has an inf or a NaN in
    the queries.  Queries and keys are sixteenths in [-1, 1], so the
    scores are exact in float32 (NumPy's own rounding of scores near 100,
    which ``exp`` turns into relative errors of 1e-5 in the weights, would
    otherwise exceed the tolerance whatever order a product sums in)."""
    dt = np.dtype(b.choice([np.float32, np.float32, np.float64]))
    batch = b.choice([(), (), (2,), (2, 3)])
    n, m, d = b.choice([1, 17, 64, 130, 300]), b.choice([64, 65, 200, 700]), \
        b.choice([16, 24, 32, 64])
    dv = b.choice([d, d, 8, 40])
    q_val = b.rng.integers(-16, 17, batch + (n, d)) / 16.0
    if b.coin(0.1):
        q_val.flat[int(b.rng.integers(q_val.size))] = b.choice([np.inf, -np.inf, np.nan])
    q = b.add_placeholder(shape=batch + (n, d), dtype=dt, values=q_val)
    rows = b.coin(0.7)                  # K as rows (m, d), else given as K^T (d, m)
    k_shape = batch + ((m, d) if rows else (d, m))
    k = b.add_placeholder(shape=k_shape, dtype=dt, values=b.rng.integers(-16, 17, k_shape) / 16.0)
    v = b.add_placeholder(shape=batch + (m, dv), dtype=dt,
                          values=b.rng.uniform(-1, 1, batch + (m, dv)))
    kt = (f"{k.var}.T" if not batch else f"xp.swapaxes({k.var}, -1, -2)") if rows else k.var
    product = f"({q.var} @ {kt})"
    scaled = b.choice([f"{product} / 8.0", f"{product} * 0.125", f"0.125 * {product}",
                       product, f"{product} * -0.3", f"{product} / {math.sqrt(d)!r}",
                       f"{product} + {product}"])      # the last: no scale
    s = b.apply(f"({scaled})", [q.var, k.var], ("inexact",))
    if s is None:
        return None
    axis = -1 if b.coin(0.8) else -2
    shift = b.choice([f"{s.var} - {s.var}.max(axis={axis}, keepdims=True)"] * 4 +
                     [f"{s.var}", f"{s.var} - {s.var}.max(axis=-1, keepdims=True) + 1.0"])
    total = -1 if b.coin(0.85) else -2
    p = b.apply(f"(xp.exp({shift}) / xp.exp({shift}).sum(axis={total}, keepdims=True))",
                [s.var], ("inexact",))
    if p is None:
        return None
    return b.apply(f"({p.var} @ {v.var})", [p.var, v.var], ("inexact",))
