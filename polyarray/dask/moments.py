"""One pass for ``var``/``std`` over chunks (Chan et al.'s parallel variance).

``var`` is a composition in the DAG: ``sum((x - sum(x) / n) ** 2) / (n -
ddof)``, whose sum of squared deviations needs the global mean first, so a
chunked evaluation of the DAG as written reads ``x`` twice.  Where the DAG
has exactly that shape (a constant count: no ``where=`` mask), the sum of
squared deviations is computed instead from per-chunk (count, sum, M2)
partials, M2 being the chunk's own sum of squared deviations from its own
mean, combined on the host: ``M2 = sum M2_i + sum n_i (mean_i - mean) ** 2``.
"""
from __future__ import annotations

import math

import numpy as np
import pymbolic.primitives as p

from ..ir import nodes as N
from ..ir.expr import is_call
from .regions import aligned_read


def _args(node, fn, n_bindings):
    """The call's arguments if ``node`` is an IndexLambda computing ``fn(...)``
    over ``n_bindings`` bindings."""
    if (isinstance(node, N.IndexLambda) and is_call(node.expr, fn)
            and len(node.bindings) == n_bindings):
        return node.expr.parameters
    return None


def _reads(arg, node):
    """The binding an argument reads, aligned; None otherwise."""
    if isinstance(arg, p.Variable) and arg.name.startswith("_in"):
        name, index = arg.name, ()
    elif isinstance(arg, p.Subscript) and isinstance(arg.aggregate, p.Variable):
        name = arg.aggregate.name
        index = arg.index if isinstance(arg.index, tuple) else (arg.index,)
    else:
        return None
    child = dict(node.bindings).get(name)
    if child is None or not (index == () and child.ndim == 0
                             or aligned_read(index, child.shape, node.shape)):
        return None
    return child


def squared_deviations(node):
    """``x`` if ``node`` is ``sum((x - expand_dims(sum(x, A)) / count) ** 2, A)``
    with the count of the axes ``A`` as a constant, else None."""
    if not (isinstance(node, N.Reduce) and node.op == "sum" and node.dtype.kind == "f"):
        return None
    axes = set(node.axes)
    sq = node.array
    a = _args(sq, "multiply", 1)
    if a is None or a[0] != a[1] or (dev := _reads(a[0], sq)) is None:
        return None
    a = _args(dev, "subtract", 2)
    if a is None or (x := _reads(a[0], dev)) is None or (mean := _reads(a[1], dev)) is None:
        return None
    a = _args(mean, "divide", 1)
    if a is None or (e := _reads(a[0], mean)) is None or not isinstance(a[1], np.floating):
        return None
    kept = tuple(1 if d in axes else n for d, n in enumerate(x.shape))
    if not (x.shape == dev.shape == sq.shape and mean.shape == e.shape == kept
            and x.dtype == mean.dtype == node.dtype):
        return None
    s = dict(e.bindings).get("_in0") if len(e.bindings) == 1 else None
    want = tuple(p.Variable(f"_{d}") for d in range(x.ndim) if d not in axes)
    read = e.expr.index if isinstance(e.expr, p.Subscript) else ()
    read = read if isinstance(read, tuple) else (read,)
    if not (isinstance(s, N.Reduce) and s.op == "sum" and s.array is x
            and set(s.axes) == axes and read == want
            and (isinstance(e.expr, p.Subscript) or s.ndim == 0)):
        return None
    if float(a[1]) != math.prod(x.shape[d] for d in axes):
        return None
    return x


def chunk_outputs(x, axes):
    """The chunk's sum and M2 over ``axes`` (kept as length 1), from ``x``."""
    from ..api.reductions import sum as sum_
    from ..array import Array
    xa = Array(x)
    count = math.prod(x.shape[d] for d in axes)
    s = sum_(xa, axis=axes, keepdims=True)
    d = xa - s / float(max(count, 1))
    return [s.node, sum_(d * d, axis=axes, keepdims=True).node], count


def record_dtype(dtype):
    return np.dtype([("n", np.int64), ("s", dtype), ("m2", dtype)])


def combine(x, axis=None, keepdims=True):
    """Partials (count, sum, M2) merged over ``axis`` (in float64)."""
    axis = tuple(sorted(axis if isinstance(axis, tuple) else (axis,)))
    kept = [d for d in range(x.ndim) if d not in axis]
    flat = np.transpose(x, kept + list(axis)).reshape(
        tuple(x.shape[d] for d in kept) + (-1,))
    n = flat["n"].astype(np.float64)
    s, m2 = flat["s"].astype(np.float64), flat["m2"].astype(np.float64)
    total_n, total_s = n.sum(axis=-1), s.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_i = np.where(n > 0, s / np.where(n > 0, n, 1), 0.0)
        mean = np.where(total_n > 0, total_s / np.where(total_n > 0, total_n, 1), 0.0)
        spread = np.where(n > 0, n * (mean_i - mean[..., None]) ** 2, 0.0)
        total_m2 = m2.sum(axis=-1) + spread.sum(axis=-1)
    shape = tuple(1 if d in axis else k for d, k in enumerate(x.shape))
    out = np.empty(shape, x.dtype)
    out["n"] = total_n.reshape(shape)
    out["s"] = total_s.reshape(shape)
    out["m2"] = total_m2.reshape(shape)
    return out


def aggregate(x, axis=None, keepdims=False, dtype=None):
    out = combine(x, axis=axis)["m2"]
    if not keepdims:
        out = np.squeeze(out, axis=axis)
    return np.asarray(out, dtype=dtype)
