"""Reduction nodes with NumPy's axis, keepdims and dtype rules.

``mean``, ``var`` and ``std`` are compositions of ``sum`` and elementwise
ops (var is the two-pass formula, as NumPy computes it), so the lowering
fuses ``(x - m) ** 2`` into the reduction kernel.
"""
from __future__ import annotations

import builtins

import numpy as np

from ..codegen.ir import nodes as N
from .axes import axis_index, normalize_axis_tuple
from .creation import as_node
from .elementwise import apply_ufunc, astype
from .shapes import expand_dims

_NUMPY_FN = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min,
             "any": np.any, "all": np.all}
_NO_IDENTITY = {"max": "maximum", "min": "minimum"}


def normalize_axes(axis, ndim) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(normalize_axis_tuple(axis, ndim)))


def _reduce(op, x, axis, keepdims, dtype=None) -> N.Node:
    node = as_node(x)
    axes = normalize_axes(axis, node.ndim)
    if dtype is None:
        proto = np.ones((1,) * node.ndim, node.dtype)
        dtype = _NUMPY_FN[op](proto, axis=axes).dtype
    else:
        dtype = np.dtype(dtype)
    if op in _NO_IDENTITY and builtins.any(node.shape[a] == 0 for a in axes):
        raise ValueError(f"zero-size array to reduction operation "
                         f"{_NO_IDENTITY[op]} which has no identity")
    if op in ("sum", "prod") and node.dtype != dtype:
        node = astype(node, dtype)
    shape = tuple(n for d, n in enumerate(node.shape) if d not in axes)
    out = N.Reduce.make(shape, dtype, op, node, axes)
    return expand_dims(out, axes) if keepdims else out


def sum(x, axis=None, keepdims=False, dtype=None) -> N.Node:   # noqa: A001
    return _reduce("sum", x, axis, keepdims, dtype)


def prod(x, axis=None, keepdims=False, dtype=None) -> N.Node:
    return _reduce("prod", x, axis, keepdims, dtype)


def max(x, axis=None, keepdims=False) -> N.Node:    # noqa: A001
    return _reduce("max", x, axis, keepdims)


def min(x, axis=None, keepdims=False) -> N.Node:    # noqa: A001
    return _reduce("min", x, axis, keepdims)


def any(x, axis=None, keepdims=False) -> N.Node:    # noqa: A001
    return _reduce("any", x, axis, keepdims)


def all(x, axis=None, keepdims=False) -> N.Node:    # noqa: A001
    return _reduce("all", x, axis, keepdims)


amax, amin = max, min


def _arg(op, x, axis):
    node = as_node(x)
    if axis is None:
        axes = tuple(range(node.ndim))
    else:
        axes = normalize_axes(axis_index(axis), node.ndim)
    if builtins.any(node.shape[a] == 0 for a in axes):     # NumPy: only a reduced axis
        raise ValueError(f"attempt to get {op} of an empty sequence")
    shape = tuple(n for d, n in enumerate(node.shape) if d not in axes)
    return N.Reduce.make(shape, np.dtype(np.int64), op, node, axes)


def argmax(x, axis=None) -> N.Node:
    return _arg("argmax", x, axis)


def argmin(x, axis=None) -> N.Node:
    return _arg("argmin", x, axis)


def _moments_dtypes(dt):
    """(accumulation dtype, result dtype) as ``np.mean`` uses them."""
    if dt.kind in "biu":
        return np.dtype(np.float64), np.dtype(np.float64)
    if dt == np.float16:
        return np.dtype(np.float32), dt
    return dt, dt


def _count(node, axes):
    n = 1
    for a in axes:
        n *= node.shape[a]
    return n


def mean(x, axis=None, keepdims=False, dtype=None) -> N.Node:
    node = as_node(x)
    axes = normalize_axes(axis, node.ndim)
    acc, out = _moments_dtypes(node.dtype)
    if dtype is not None:
        acc = out = np.dtype(dtype)
    s = _reduce("sum", node, axes, keepdims, acc)
    m = apply_ufunc("divide", s, float(_count(node, axes)))
    return astype(m, out)


def var(x, axis=None, keepdims=False, ddof=0) -> N.Node:
    node = as_node(x)
    axes = normalize_axes(axis, node.ndim)
    acc, out = _moments_dtypes(node.dtype)
    xa = astype(node, acc)
    m = mean(xa, axes, keepdims=True)
    d = apply_ufunc("subtract", xa, m)
    ss = _reduce("sum", apply_ufunc("multiply", d, d), axes, keepdims, acc)
    n = _count(node, axes) - ddof
    return astype(apply_ufunc("divide", ss, float(n if n > 0 else 0)), out)


def std(x, axis=None, keepdims=False, ddof=0) -> N.Node:
    return apply_ufunc("sqrt", var(x, axis, keepdims, ddof))
