"""Functions of sampled data: ``gradient`` (central differences, one- or
two-sided at the edges), ``trapezoid`` (the trapezoidal rule), ``interp``
(piecewise-linear, by binary search) and ``unwrap`` (phase jumps removed
by a running sum).  NumPy's formulas and order of operations
(``numpy/lib/_function_base_impl.py``, ``compiled_base.c``'s ``interp``),
as compositions: slices, elementwise ops, ``searchsorted``, ``cumsum``."""
from __future__ import annotations

import math
import operator

import numpy as np

from ..ir import nodes as N
from .arrange import diff
from .axes import normalize_axis_index, normalize_axis_tuple
from .creation import as_node, full
from .dtypes import check_dtype
from .elementwise import apply_ufunc as U, astype, clip, where
from .indexing import getitem, take
from .ordering import argsort, searchsorted
from .reductions import sum as sum_
from .scans import cumsum
from .shapes import concatenate, reshape


def _at(node, axis, item):
    """``node[..., item, ...]`` along ``axis`` (``item`` a slice or an int;
    an int keeps the axis, as a slice of one)."""
    if not isinstance(item, slice):
        k = item % node.shape[axis]
        item = slice(k, k + 1)
    return getitem(node, (slice(None),) * axis + (item,))


def _spacing(distances, n, ndim, axis):
    """A spacing argument of ``gradient``: a scalar, or the differences of
    1-D coordinates (a scalar where they are data and all equal, as NumPy),
    shaped to broadcast along ``axis``."""
    if not isinstance(distances, N.Node) and np.ndim(distances) == 0:
        return distances
    d = as_node(distances)
    if d.ndim == 0:
        return d
    if d.ndim != 1:
        raise ValueError("distances must be either scalars or 1d")
    if d.shape[0] != n:
        raise ValueError("when 1d, distances must match the length of the corresponding "
                         "dimension")
    if d.dtype.kind in "iu":
        d = astype(d, np.float64)
    if isinstance(d, N.DataWrapper):
        dx = np.diff(d.data)
        if dx.size and (dx == dx[0]).all():
            return dx[0]
    return reshape(diff(d), (1,) * axis + (n - 1,) + (1,) * (ndim - axis - 1))


def gradient(f, *varargs, axis=None, edge_order=1):
    """NumPy's ``gradient``: second-order central differences inside, first-
    or second-order one-sided ones at the edges, per axis (a tuple for
    several axes).  Integers are computed as float64."""
    node = as_node(f)
    nd = node.ndim
    axes = tuple(range(nd)) if axis is None else normalize_axis_tuple(axis, nd)
    if len(varargs) == 0:
        dxs = [1.0] * len(axes)
    elif len(varargs) == 1 and not isinstance(varargs[0], N.Node) and np.ndim(varargs[0]) == 0:
        dxs = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        dxs = list(varargs)
    else:
        raise TypeError("invalid number of arguments")
    dxs = [_spacing(d, node.shape[a], nd, a) for d, a in zip(dxs, axes)]
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = node.dtype
    if otype.kind != "f":
        if otype.kind in "iu":
            node = astype(node, np.float64)
        otype = np.dtype(np.float64)
    outs = []
    for ax, dx in zip(axes, dxs):
        if node.shape[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")
        outs.append(astype(_gradient_axis(node, ax, dx, edge_order), otype))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _gradient_axis(f, ax, dx, edge_order):
    n = f.shape[ax]
    uniform = not isinstance(dx, N.Node) or dx.ndim == 0
    at = lambda node, item: _at(node, ax, item)     # noqa: E731
    mul, add, sub, div = (lambda a, b, op=op: U(op, a, b) for op in
                          ("multiply", "add", "subtract", "divide"))
    if uniform:
        inner = div(sub(at(f, slice(2, None)), at(f, slice(None, -2))), mul(2.0, dx))
    else:
        dx1, dx2 = at(dx, slice(0, -1)), at(dx, slice(1, None))
        a = div(U("negative", dx2), mul(dx1, add(dx1, dx2)))
        b = div(sub(dx2, dx1), mul(dx1, dx2))
        c = div(dx1, mul(dx2, add(dx1, dx2)))
        inner = add(add(mul(a, at(f, slice(None, -2))), mul(b, at(f, slice(1, -1)))),
                    mul(c, at(f, slice(2, None))))
    if edge_order == 1:
        first = div(sub(at(f, 1), at(f, 0)), dx if uniform else at(dx, 0))
        last = div(sub(at(f, -1), at(f, -2)), dx if uniform else at(dx, -1))
    else:
        if uniform:
            a, b, c = div(-1.5, dx), div(2.0, dx), div(-0.5, dx)
        else:
            dx1, dx2 = at(dx, 0), at(dx, 1)
            a = div(U("negative", add(mul(2.0, dx1), dx2)), mul(dx1, add(dx1, dx2)))
            b = div(add(dx1, dx2), mul(dx1, dx2))
            c = div(U("negative", dx1), mul(dx2, add(dx1, dx2)))
        first = add(add(mul(a, at(f, 0)), mul(b, at(f, 1))), mul(c, at(f, 2)))
        if uniform:
            a, b, c = div(0.5, dx), div(-2.0, dx), div(1.5, dx)
        else:
            dx1, dx2 = at(dx, -2), at(dx, -1)
            a = div(dx2, mul(dx1, add(dx1, dx2)))
            b = div(U("negative", add(dx2, dx1)), mul(dx1, dx2))
            c = div(add(mul(2.0, dx2), dx1), mul(dx2, add(dx1, dx2)))
        last = add(add(mul(a, at(f, -3)), mul(b, at(f, -2))), mul(c, at(f, -1)))
    dtype = np.result_type(first.dtype, inner.dtype, last.dtype)
    parts = [first, inner, last] if n > 2 else [first, last]
    return concatenate([astype(x, dtype) for x in parts], ax)


def trapezoid(y, x=None, dx=1.0, axis=-1) -> N.Node:
    """``sum(d * (y[1:] + y[:-1]) / 2)`` along ``axis``, ``d`` the spacing
    (``dx``, or the differences of ``x``)."""
    ys = as_node(y)
    axis = normalize_axis_index(axis, ys.ndim)
    if x is None:
        d = dx
    else:
        xs = as_node(x)
        if xs.ndim == 1:
            shape = [1] * ys.ndim
            shape[axis] = max(xs.shape[0] - 1, 0)
            d = reshape(diff(xs), tuple(shape))
        else:
            d = diff(xs, axis=axis)
    upper, lower = _at(ys, axis, slice(1, None)), _at(ys, axis, slice(None, -1))
    return sum_(U("divide", U("multiply", d, U("add", upper, lower)), 2.0), axis)


def interp(x, xp, fp, left=None, right=None, period=None) -> N.Node:
    """Piecewise-linear interpolation in float64, NumPy's C loop as
    selects: ``j`` the last sample at or below ``x`` (a binary search),
    ``slope * (x - xp[j]) + fp[j]`` (or from ``j + 1`` where that is NaN),
    ``fp[j]`` where ``x`` is a sample, ``left``/``right`` outside, NaN
    kept.  ``xp`` must be increasing (not checked, as NumPy)."""
    f64 = np.dtype(np.float64)
    xs, xps, fps = (astype(as_node(v), f64) for v in (x, xp, fp))
    if xps.ndim != 1 or fps.ndim != 1:
        raise ValueError("object too deep for desired array" if max(xps.ndim, fps.ndim) > 1
                         else "object of too small depth for desired array")
    if fps.shape[0] != xps.shape[0]:
        raise ValueError("fp and xp are not of the same length.")
    n = xps.shape[0]
    if n == 0:
        raise ValueError("array of sample points is empty")
    if period is not None:
        if period == 0:
            raise ValueError("period must be a non-zero value")
        period = abs(period)
        left = right = None
        xs = U("remainder", xs, period)
        xps = U("remainder", xps, period)
        order = argsort(xps)
        xps, fps = take(xps, order), take(fps, order)
        xps = concatenate([U("subtract", _at(xps, 0, -1), period), xps,
                           U("add", _at(xps, 0, 0), period)], 0)
        fps = concatenate([_at(fps, 0, -1), fps, _at(fps, 0, 0)], 0)
        n += 2
    first, last = getitem(xps, (0,)), getitem(xps, (n - 1,))
    lval = getitem(fps, (0,)) if left is None else _float(left)
    rval = getitem(fps, (n - 1,)) if right is None else _float(right)
    if n == 1:
        inside = getitem(fps, (0,))
    else:
        j = clip(U("subtract", searchsorted(xps, xs, "right"), 1), 0, n - 2)
        x0, x1 = take(xps, j), take(xps, U("add", j, 1))
        y0, y1 = take(fps, j), take(fps, U("add", j, 1))
        slope = U("divide", U("subtract", y1, y0), U("subtract", x1, x0))
        value = U("add", U("multiply", slope, U("subtract", xs, x0)), y0)
        again = U("add", U("multiply", slope, U("subtract", xs, x1)), y1)
        value = where(U("isnan", value), where(
            U("logical_and", U("isnan", again), U("equal", y0, y1)), y0, again), value)
        inside = where(U("equal", xs, x0), y0, value)
        inside = where(U("equal", xs, last), getitem(fps, (n - 1,)), inside)
    out = where(U("less", xs, first), lval, where(U("greater", xs, last), rval, inside))
    return out if n == 1 else where(U("isnan", xs), xs, out)   # one sample: NaN gets fp[0]


def _float(v):
    return astype(v, np.float64) if isinstance(v, N.Node) else float(v)


def unwrap(p, discont=None, axis=-1, period=2 * math.pi) -> N.Node:
    """NumPy's ``unwrap``: each jump of ``diff(p)`` beyond ``discont`` moved
    into ``[-period/2, period/2]`` (integer periods: NumPy's integer
    interval), the corrections summed along ``axis`` (``cumsum``)."""
    node = as_node(p)
    axis = normalize_axis_index(axis, node.ndim)
    dd = diff(node, axis=axis)
    if discont is None:
        discont = period / 2
    dtype = check_dtype(np.result_type(dd.dtype, period if type(period) in (int, float)
                                       else np.asarray(period)), "unwrap")
    if dtype.kind in "iu":
        high, rem = divmod(operator.index(period), 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = period / 2, True
    low = -high
    ddmod = U("add", U("remainder", U("subtract", dd, low), period), low)
    if ambiguous:
        ddmod = where(U("logical_and", U("equal", ddmod, low), U("greater", dd, 0)),
                      astype(full((), high), ddmod.dtype) if dtype.kind in "iu" else high,
                      ddmod)
    correct = U("subtract", ddmod, dd)
    correct = where(U("less", U("absolute", dd), discont), full((), 0, correct.dtype), correct)
    up = astype(node, dtype)
    if node.shape[axis] < 2:
        return up
    rest = U("add", _at(node, axis, slice(1, None)), cumsum(correct, axis))
    return concatenate([_at(up, axis, slice(0, 1)), astype(rest, dtype)], axis)
