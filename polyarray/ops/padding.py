"""``np.pad`` with modes constant, edge, reflect, symmetric and wrap (and
``empty``, which fills with zeros: a lazy array is never uninitialized).

NumPy pads one axis after the other, each over the array the earlier axes
produced (so corners take the last axis's value or reflection); here each
axis is one IndexLambda over the previous one's, reading its input at an
index computed from the output index: clamped (edge, and the inside of
constant), or periodic (wrap, reflect and symmetric repeat with periods n,
2(n - 1) and 2n, which is what NumPy's iterated padding gives for widths
beyond the axis's length).  Every index read is in range.
"""
from __future__ import annotations

import numpy as np
import pymbolic.primitives as p

from ..ir import nodes as N
from ..ir.expr import binding_name, call, index_var, read
from .creation import as_node

_MODES = {"constant": ("constant_values",), "edge": (), "wrap": (), "empty": (),
          "reflect": ("reflect_type",), "symmetric": ("reflect_type",),
          "linear_ramp": ("end_values",), "maximum": ("stat_length",),
          "mean": ("stat_length",), "median": ("stat_length",), "minimum": ("stat_length",)}


def as_pairs(x, ndim, as_index=False):
    """NumPy's ``_as_pairs``: a scalar, a pair, or per-axis pairs, as
    ``ndim`` (before, after) pairs."""
    x = np.array(x)
    if as_index:
        x = np.round(x).astype(np.intp, copy=False)
    if x.ndim < 3:
        if x.size == 1:
            x = x.ravel()
            if as_index and x[0] < 0:
                raise ValueError("index can't contain negative values")
            return ((x[0], x[0]),) * ndim
        if x.size == 2 and x.shape != (2, 1):
            x = x.ravel()
            if as_index and (x[0] < 0 or x[1] < 0):
                raise ValueError("index can't contain negative values")
            return ((x[0], x[1]),) * ndim
    if as_index and x.size and x.min() < 0:
        raise ValueError("index can't contain negative values")
    return np.broadcast_to(x, (ndim, 2)).tolist()


def _setitem(value, dtype):
    tmp = np.empty((), dtype)
    tmp[()] = value             # NumPy's own conversion (and its errors)
    return tmp[()]


def _clamp(t, n):
    return p.If(p.Comparison(t, "<", 0), 0, p.If(p.Comparison(t, ">", n - 1), n - 1, t))


def _periodic(t, before, period):
    """``t mod period`` for ``t >= -before``, with a non-negative dividend."""
    shift = -(-before // period) * period
    return p.Remainder(t + shift, period) if shift else p.Remainder(t, period)


def _source(mode, t, before, n):
    if mode == "edge":
        return _clamp(t, n)
    if mode == "wrap":
        return _periodic(t, before, n)
    if n == 1:
        return 0
    period = 2 * (n - 1) if mode == "reflect" else 2 * n
    j = _periodic(t, before, period)
    return p.If(p.Comparison(j, "<", n), j, (period - j) if mode == "reflect"
                else (period - 1 - j))


def _pad_axis(node, axis, before, after, mode, values):
    n = node.shape[axis]
    shape = node.shape[:axis] + (n + before + after,) + node.shape[axis + 1:]
    i = index_var(axis)
    t = i - before if before else i
    idx = [index_var(d) for d in range(node.ndim)]
    name = binding_name(0)
    if mode == "constant":
        lo, hi = values
        if n == 0:
            expr = lo if not after else (hi if not before else
                                         call("where", p.Comparison(i, "<", before), lo, hi))
        else:
            idx[axis] = _clamp(t, n)
            expr = read(name, idx)
            if after:
                expr = call("where", p.Comparison(i, "<", before + n), expr, hi)
            if before:
                expr = call("where", p.Comparison(i, "<", before), lo, expr)
    else:
        idx[axis] = _source(mode, t, before, n)
        expr = read(name, idx)
    return N.IndexLambda.make(shape, node.dtype, expr, ((name, node),),
                              f"pad[{mode}, axis={axis}, ({before}, {after})]")


def pad(array, pad_width, mode="constant", **kwargs) -> N.Node:
    node = as_node(array)
    if callable(mode):
        raise NotImplementedError("pad: a function as the mode is not supported")
    if mode not in _MODES:
        raise ValueError(f"mode '{mode}' is not supported")
    unsupported = set(kwargs) - set(_MODES[mode])
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    widths = np.asarray(pad_width)
    if widths.dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    widths = [(int(b), int(a)) for b, a in as_pairs(widths, node.ndim, as_index=True)]
    if mode in ("linear_ramp", "maximum", "mean", "median", "minimum"):
        raise NotImplementedError(f"pad: mode {mode!r} is not supported (supported: "
                                  "constant, edge, reflect, symmetric, wrap, empty)")
    if kwargs.get("reflect_type", "even") != "even":
        if kwargs["reflect_type"] != "odd":
            raise ValueError(f"pad: reflect_type must be 'even' or 'odd', got "
                             f"{kwargs['reflect_type']!r}")
        raise NotImplementedError("pad: reflect_type='odd' is not supported")
    if mode in ("constant", "empty"):
        cv = kwargs.get("constant_values", 0) if mode == "constant" else 0
        values = [(_setitem(b, node.dtype), _setitem(a, node.dtype))
                  for b, a in as_pairs(cv, node.ndim)]
        mode = "constant"
    else:
        for axis, (b, a) in enumerate(widths):
            if node.shape[axis] == 0 and (b or a):
                raise ValueError(f"can't extend empty axis {axis} using modes other than "
                                 "'constant' or 'empty'")
        values = [None] * node.ndim
    for axis, ((b, a), v) in enumerate(zip(widths, values)):
        if b or a:
            node = _pad_axis(node, axis, b, a, mode, v)
    return node
