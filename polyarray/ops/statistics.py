"""NaN-ignoring reductions, ``ptp``, ``average``, ``cov`` and ``corrcoef``:
compositions of the reductions with elementwise selects and a product,
following NumPy's own formulas (``numpy/lib/_nanfunctions_impl.py``,
``_function_base_impl.average``/``cov``/``corrcoef``)."""
from __future__ import annotations

import math

import numpy as np

from ..ir import nodes as N
from ..ir.expr import index_var
from .axes import normalize_axis_tuple
from .creation import as_node, full
from .elementwise import apply_ufunc as U, astype, where as select
from .indexing import getitem
from .linalg import dot
from .reductions import (NoValue, _given, _reduce, all as all_, max as max_, mean,
                         min as min_, sum as sum_)
from .shapes import (broadcast_to, concatenate, expand_dims, remap, reshape, squeeze,
                     transpose)


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


def _weights(w, n, name, integral):
    """A weight vector of ``cov``: host data checked as NumPy checks it;
    a lazy one (float64) is not."""
    node = astype(as_node(w), np.float64)
    data = w.data if isinstance(w, N.DataWrapper) else None if isinstance(w, N.Node) \
        else np.asarray(w, dtype=float)
    if data is not None:
        data = np.asarray(data, dtype=float)
        if integral and not np.all(data == np.around(data)):
            raise TypeError("fweights must be integer")
    if node.ndim > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if node.shape[0] != n:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if data is not None and np.any(data < 0):
        raise ValueError(f"{name} cannot be negative")
    return node


def _rows(x, dtype, rowvar):
    """``np.array(x, ndmin=2, dtype=dtype)``, transposed unless ``rowvar``."""
    node = astype(as_node(x), dtype)
    two = reshape(node, (1,) * (2 - node.ndim) + node.shape) if node.ndim < 2 else node
    return two, node.ndim


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None) -> N.Node:
    """NumPy's ``cov``: the weighted mean of each row subtracted, ``X @
    X.T`` (weighted) times ``1 / fact``; the result squeezed."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    x = as_node(m)
    if x.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    ys = None if y is None else as_node(y)
    if ys is not None and ys.ndim > 2:
        raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(x.dtype, np.float64) if ys is None else \
            np.result_type(x.dtype, ys.dtype, np.float64)
    X, ndim = _rows(x, dtype, rowvar)
    if not rowvar and ndim != 1:
        X = transpose(X)
    if X.shape[0] == 0:
        return full((0, 0), 0, np.float64)
    if ys is not None:
        Y, _ = _rows(ys, dtype, rowvar)
        if not rowvar and Y.shape[0] != 1:
            Y = transpose(Y)
        X = concatenate([X, Y], 0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    w = None
    if fweights is not None:
        w = _weights(fweights, X.shape[1], "fweights", True)
    aw = None
    if aweights is not None:
        aw = _weights(aweights, X.shape[1], "aweights", False)
        w = aw if w is None else U("multiply", w, aw)
    avg, w_sum = average(X, 1, w, True)
    w_sum = getitem(w_sum, (0,))
    if w is None:
        fact = X.shape[1] - ddof
        fact = 0.0 if fact <= 0 else fact
    else:
        if ddof == 0:
            fact = w_sum
        elif aw is None:
            fact = U("subtract", w_sum, ddof)
        else:
            fact = U("subtract", w_sum, U("divide", U("multiply", ddof, sum_(
                U("multiply", w, aw))), w_sum))
        fact = select(U("less_equal", fact, 0), full((), 0.0, fact.dtype), fact)
    X = U("subtract", X, expand_dims(avg, 1))
    X_T = transpose(X if w is None else U("multiply", X, w))
    c = dot(X, X_T)
    c = astype(U("multiply", c, U("true_divide", 1, fact)), c.dtype)    # NumPy's c *= ...
    return squeeze(c)


def corrcoef(x, y=None, rowvar=True, dtype=None) -> N.Node:
    """``cov`` divided by the outer product of the standard deviations,
    clipped to [-1, 1] (a 0-d covariance: ``c / c``)."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return U("divide", c, c)
    if c.ndim != 2:
        raise ValueError("Input must be 1- or 2-d.")
    i = index_var(0)
    stddev = U("sqrt", remap(c, (c.shape[0],), (i, i), "diagonal"))
    c = U("divide", c, expand_dims(stddev, 1))
    c = U("divide", c, expand_dims(stddev, 0))
    return U("minimum", U("maximum", c, -1), 1)
