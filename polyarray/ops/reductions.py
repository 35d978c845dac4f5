"""Reduction nodes with NumPy's axis, keepdims and dtype rules (and
``array_equal``/``array_equiv``, an ``all`` of ``==``).

``mean``, ``var`` and ``std`` are compositions of ``sum`` and elementwise
ops (var is the two-pass formula, as NumPy computes it), so the lowering
fuses ``(x - m) ** 2`` into the reduction kernel.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..ir import nodes as N
from ..ir.expr import binding_name, index_vars, read
from .axes import axis_index, normalize_axis_tuple
from .creation import as_node, full
from .elementwise import (apply_ufunc, astype, broadcast_shapes, complex_part, real_dtype,
                          where as where_)
from .shapes import broadcast_to, expand_dims, reshape, transpose
from .memo import memoized

_NUMPY_FN = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min,
             "any": np.any, "all": np.all}
_UFUNC = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
          "any": np.logical_or, "all": np.logical_and}
_NO_IDENTITY = {"max": "maximum", "min": "minimum"}
_NEUTRAL = {"sum": 0, "prod": 1, "any": 0, "all": 1}
NoValue = np._NoValue         # NumPy's "not given" (``initial=None`` means the same)


def normalize_axes(axis, ndim) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(normalize_axis_tuple(axis, ndim)))


def mask_of(where, node, name) -> N.Node | None:
    """``where=`` as a bool node of ``node``'s shape (None: everything)."""
    if where is True or where is NoValue:
        return None
    mask = as_node(where)
    shape = broadcast_shapes(node.shape, mask.shape, what=f"{name}: where mask and array")
    if shape != node.shape:
        raise ValueError(f"{name}: the where mask of shape {mask.shape} does not broadcast "
                         f"to the array's shape {node.shape}")
    return broadcast_to(astype(mask, np.bool_), node.shape)


def _given(initial):
    return initial is not NoValue and initial is not None


@memoized
def _reduce(op, x, axis, keepdims, dtype=None, initial=NoValue, where=True) -> N.Node:
    node = as_node(x)
    axes = normalize_axes(axis, node.ndim)
    if dtype is None:
        proto = np.ones((1,) * node.ndim, node.dtype)
        dtype = _NUMPY_FN[op](proto, axis=axes).dtype
    else:
        dtype = np.dtype(dtype)
    init = None
    if _given(initial):     # converted as NumPy's reduction converts it (errors too)
        init = _UFUNC[op].reduce(np.zeros(0, dtype), initial=initial, dtype=dtype)
    mask = mask_of(where, node, op)
    if op in _NO_IDENTITY and init is None:
        if mask is not None:
            raise ValueError(f"reduction operation '{_NO_IDENTITY[op]}' does not have an "
                             "identity, so to use a where mask one has to specify 'initial'")
        if builtins.any(node.shape[a] == 0 for a in axes):
            raise ValueError(f"zero-size array to reduction operation "
                             f"{_NO_IDENTITY[op]} which has no identity")
    if op in ("sum", "prod") and node.dtype != dtype:
        node = astype(node, dtype)
    if op in ("any", "all") and node.dtype.kind == "c":
        node = astype(node, np.bool_)           # the truth of both parts
    if mask is not None:
        fill = init if op in _NO_IDENTITY else _NEUTRAL[op]
        node = where_(mask, node, full((), fill, node.dtype))
    shape = tuple(n for d, n in enumerate(node.shape) if d not in axes)
    if op in _NO_IDENTITY and node.dtype.kind == "c" and mask is None and init is None:
        out = _complex_extremum(op, node, axes)
        return expand_dims(out, axes) if keepdims else out
    if op in _NO_IDENTITY and builtins.any(node.shape[a] == 0 for a in axes):
        # nothing to compare: the initial value (the input stays a binding)
        out = N.IndexLambda.make(shape, dtype, init, ((binding_name(0), node),), op)
    else:
        out = N.Reduce.make(shape, dtype, op, node, axes)
        if init is not None:
            out = astype(apply_ufunc(_UFUNC[op].__name__, out, full((), init, dtype)), dtype)
    return expand_dims(out, axes) if keepdims else out


def _complex_extremum(op, node, axes) -> N.Node:
    """NumPy's max/min of complex values: the value at argmax's (argmin's)
    index, the first NaN if any, else the first extremum in the lexicographic
    order.  A reduction of values alone would give some NaN: which one a
    parallel tree meets first."""
    rest = tuple(d for d in range(node.ndim) if d not in axes)
    kept = tuple(node.shape[d] for d in rest)
    merged = reshape(transpose(node, rest + tuple(axes)),
                     kept + (math.prod(node.shape[a] for a in axes),))
    at = N.Reduce.make(kept, np.dtype(np.int64), "arg" + op, merged, (len(kept),))
    own = index_vars(len(kept))
    expr = read(binding_name(0), own + (read(binding_name(1), own),))
    return N.IndexLambda.make(kept, node.dtype, expr,
                              ((binding_name(0), merged), (binding_name(1), at)), op)


def sum(x, axis=None, dtype=None, keepdims=False, initial=NoValue,   # noqa: A001
        where=True) -> N.Node:
    return _reduce("sum", x, axis, keepdims, dtype, initial, where)


def prod(x, axis=None, dtype=None, keepdims=False, initial=NoValue, where=True) -> N.Node:
    return _reduce("prod", x, axis, keepdims, dtype, initial, where)


def max(x, axis=None, keepdims=False, initial=NoValue, where=True) -> N.Node:    # noqa: A001
    return _reduce("max", x, axis, keepdims, None, initial, where)


def min(x, axis=None, keepdims=False, initial=NoValue, where=True) -> N.Node:    # noqa: A001
    return _reduce("min", x, axis, keepdims, None, initial, where)


def any(x, axis=None, keepdims=False, where=True) -> N.Node:    # noqa: A001
    return _reduce("any", x, axis, keepdims, where=where)


def all(x, axis=None, keepdims=False, where=True) -> N.Node:    # noqa: A001
    return _reduce("all", x, axis, keepdims, where=where)


amax, amin = max, min


def _arg(op, x, axis, keepdims):
    node = as_node(x)
    if axis is None:
        axes = tuple(range(node.ndim))
    else:
        axes = normalize_axes(axis_index(axis), node.ndim)
    if builtins.any(node.shape[a] == 0 for a in axes):     # NumPy: only a reduced axis
        raise ValueError(f"attempt to get {op} of an empty sequence")
    shape = tuple(n for d, n in enumerate(node.shape) if d not in axes)
    out = N.Reduce.make(shape, np.dtype(np.int64), op, node, axes)
    return expand_dims(out, axes) if keepdims else out


def argmax(x, axis=None, keepdims=False) -> N.Node:
    return _arg("argmax", x, axis, keepdims)


def argmin(x, axis=None, keepdims=False) -> N.Node:
    return _arg("argmin", x, axis, keepdims)


def count_nonzero(x, axis=None, keepdims=False) -> N.Node:
    """The number of nonzero (NaN included) values, as int64 (intp)."""
    return _reduce("sum", astype(as_node(x), np.bool_), axis, keepdims, np.int64)


def _moments_dtypes(dt):
    """(accumulation dtype, result dtype) as ``np.mean`` uses them."""
    if dt.kind in "biu":
        return np.dtype(np.float64), np.dtype(np.float64)
    if dt == np.float16:
        return np.dtype(np.float32), dt
    return dt, dt


def _count(node, axes, keepdims, mask):
    """The number of values reduced: a float, or an int64 node under a mask."""
    if mask is None:
        n = 1
        for a in axes:
            n *= node.shape[a]
        return float(n)
    return _reduce("sum", mask, axes, keepdims, np.int64)


def mean(x, axis=None, dtype=None, keepdims=False, where=True) -> N.Node:
    """``sum / count`` (the count of ``where``'s True values under a mask),
    divided in float64 where the count is lazy and cast back, as NumPy's
    in-place ``true_divide`` does."""
    node = as_node(x)
    axes = normalize_axes(axis, node.ndim)
    acc, out = _moments_dtypes(node.dtype)
    if dtype is not None:
        acc = out = np.dtype(dtype)
    mask = mask_of(where, node, "mean")
    s = _reduce("sum", node, axes, keepdims, acc, where=where)
    m = apply_ufunc("divide", s, _count(node, axes, keepdims, mask))
    return astype(m, out)


def _ddof(ddof, correction):
    if correction is not NoValue and correction is not None:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        return correction
    return ddof


def var(x, axis=None, dtype=None, ddof=0, keepdims=False, where=True,
        correction=NoValue) -> N.Node:
    node = as_node(x)
    axes = normalize_axes(axis, node.ndim)
    ddof = _ddof(ddof, correction)
    acc, out = _moments_dtypes(node.dtype)
    if dtype is not None:
        acc = out = np.dtype(dtype)
    xa = astype(node, acc)
    m = mean(xa, axes, keepdims=True, where=where)
    d = apply_ufunc("subtract", xa, m)
    if d.dtype.kind == "c":     # |d| ** 2 as NumPy: the parts squared and added, real
        acc = real_dtype(acc)
        out = real_dtype(out) if dtype is None else out
        re, im = complex_part("real", d), complex_part("imag", d)
        sq = apply_ufunc("add", apply_ufunc("multiply", re, re), apply_ufunc("multiply", im, im))
    else:
        sq = apply_ufunc("multiply", d, d)
    ss = _reduce("sum", sq, axes, keepdims, acc, where=where)
    n = _count(node, axes, keepdims, mask_of(where, node, "var"))
    if isinstance(n, float):
        n = float(builtins.max(n - ddof, 0))
    else:
        n = apply_ufunc("maximum", apply_ufunc("subtract", n, ddof), 0)
    return astype(apply_ufunc("divide", ss, n), out)


def std(x, axis=None, dtype=None, ddof=0, keepdims=False, where=True,
        correction=NoValue) -> N.Node:
    return apply_ufunc("sqrt", var(x, axis, dtype, ddof, keepdims, where, correction))


def array_equal(a1, a2, equal_nan=False) -> N.Node:
    """Whether the two have one shape and equal elements (NaN equal to NaN
    with ``equal_nan``), as a lazy 0-d bool (a constant False where the
    shapes differ)."""
    x, y = as_node(a1), as_node(a2)
    if x.shape != y.shape:
        return full((), False, np.bool_)
    same = apply_ufunc("equal", x, y)
    if equal_nan and x.dtype.kind == "f" and y.dtype.kind == "f":
        both = apply_ufunc("logical_and", apply_ufunc("isnan", x), apply_ufunc("isnan", y))
        same = apply_ufunc("logical_or", same, both)
    return all(same)


def array_equiv(a1, a2) -> N.Node:
    """Whether the two broadcast to one shape with equal elements, as a lazy
    0-d bool (a constant False where they do not broadcast)."""
    x, y = as_node(a1), as_node(a2)
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        return full((), False, np.bool_)
    return all(apply_ufunc("equal", x, y))
