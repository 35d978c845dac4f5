"""NaN-ignoring reductions, ``ptp`` and ``average``: compositions of the
reductions with elementwise selects, following NumPy's own formulas
(``numpy/lib/_nanfunctions_impl.py``, ``_function_base_impl.average``)."""
from __future__ import annotations

import math

import numpy as np

from ..ir import nodes as N
from .axes import normalize_axis_tuple
from .creation import as_node, full
from .elementwise import apply_ufunc as U, astype, where as select
from .reductions import (NoValue, _given, _reduce, all as all_, max as max_, mean,
                         min as min_, sum as sum_)
from .shapes import broadcast_to, reshape, transpose


def _nan_filled(node, value):
    """``node`` with NaN (complex: a NaN in either part) replaced by ``value``
    (complex: ``value`` in both parts); None for other dtypes."""
    if node.dtype.kind not in "fc":
        return None
    if node.dtype.kind == "c":
        value = complex(value, value if math.isinf(value) else 0)
    return select(U("isnan", node), full((), value, node.dtype), node)


def nansum(a, axis=None, dtype=None, keepdims=False, initial=NoValue, where=True) -> N.Node:
    node = as_node(a)
    filled = _nan_filled(node, 0)
    return sum_(node if filled is None else filled, axis, dtype, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, keepdims=False, initial=NoValue,
            where=True) -> N.Node:
    node = as_node(a)
    filled = _nan_filled(node, 1)
    return _reduce("prod", node if filled is None else filled, axis, keepdims, dtype,
                   initial, where)


def _nanext(op, a, axis, keepdims, initial, where):
    """``np.fmax.reduce`` / ``np.fmin.reduce``: NaN only where every value
    taken is NaN (and no initial value is given)."""
    node = as_node(a)
    fn = max_ if op == "max" else min_
    filled = _nan_filled(node, -math.inf if op == "max" else math.inf)
    if filled is None:
        return fn(node, axis, keepdims, initial, where)
    r = fn(filled, axis, keepdims, initial, where)
    if _given(initial):
        return r
    all_nan = all_(U("isnan", node), axis, keepdims, where)
    if node.dtype.kind == "c" and where is True:    # fmax.reduce keeps the first NaN
        return select(all_nan, fn(node, axis, keepdims), r)
    return where_nan(all_nan, r)


def where_nan(cond, r):
    return select(cond, full((), math.nan, r.dtype), r)


def nanmax(a, axis=None, keepdims=False, initial=NoValue, where=True) -> N.Node:
    return _nanext("max", a, axis, keepdims, initial, where)


def nanmin(a, axis=None, keepdims=False, initial=NoValue, where=True) -> N.Node:
    return _nanext("min", a, axis, keepdims, initial, where)


def nanmean(a, axis=None, dtype=None, keepdims=False, where=True) -> N.Node:
    """Sum of the non-NaN values over their count, in the sum's dtype
    (all-NaN slices give NaN)."""
    node = as_node(a)
    filled = _nan_filled(node, 0)
    if filled is None:
        return mean(node, axis, dtype, keepdims, where)
    if dtype is not None and np.dtype(dtype).kind not in "fc":
        raise TypeError("If a is inexact, then dtype must be inexact")
    cnt = sum_(U("logical_not", U("isnan", node)), axis, np.int64, keepdims, where=where)
    tot = sum_(filled, axis, dtype, keepdims, where=where)
    return astype(U("divide", tot, cnt), tot.dtype)


def ptp(a, axis=None, keepdims=False) -> N.Node:
    """``max - min`` (NumPy's subtract: bools refused)."""
    node = as_node(a)
    return U("subtract", max_(node, axis, keepdims), min_(node, axis, keepdims))


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """``np.average``.  Weights that sum to zero raise ZeroDivisionError when
    they are data; lazy weights cannot be checked when built (their
    average is then inf or NaN, as a division by zero gives)."""
    node = as_node(a)
    if axis is not None:
        axis = normalize_axis_tuple(axis, node.ndim, argname="axis")
    if weights is None:
        avg = mean(node, axis, keepdims=keepdims)
        scl = full(avg.shape, node.size / avg.size if avg.size else 0, avg.dtype)
        return (avg, scl) if returned else avg
    wgt = as_node(weights)
    wdata = wgt.data if isinstance(wgt, N.DataWrapper) else None
    if node.dtype.kind in "biu":
        dt = np.result_type(node.dtype, wgt.dtype, "f8")
    else:
        dt = np.result_type(node.dtype, wgt.dtype)
    if node.shape != wgt.shape:
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        if wgt.shape != tuple(node.shape[ax] for ax in axis):
            raise ValueError("Shape of weights must be consistent with shape of a along "
                             f"specified axis (a: {node.shape}, weights: {wgt.shape}, "
                             f"axis: {axis}).")
        order = tuple(int(k) for k in np.argsort(axis))
        shape = tuple(s if ax in axis else 1 for ax, s in enumerate(node.shape))
        wgt = reshape(transpose(wgt, order), shape)
        if wdata is not None:
            wdata = wdata.transpose(order).reshape(shape)
    if wdata is not None and np.any(np.sum(wdata, axis=axis, dtype=dt) == 0.0):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    scl = sum_(astype(wgt, dt), axis, dt, keepdims)
    prod = U("multiply", astype(node, dt), astype(wgt, dt))
    avg = U("divide", sum_(prod, axis, None, keepdims), scl)
    if returned:
        return avg, (scl if scl.shape == avg.shape else broadcast_to(scl, avg.shape))
    return avg
