"""Order statistics: ``median``, ``quantile``/``percentile`` (NumPy's 13
methods) and their NaN-ignoring forms, lazily: the reduced axes moved last
and joined (NumPy's ``_ureduce``), a ``sort`` along them (NaN last), then
gathers at the virtual indices and NumPy's ``_lerp``.  The index arithmetic
is NumPy's, step for step (``numpy/lib/_function_base_impl.py``), as
nodes: the NaN-ignoring forms count each slice's values on the device and
index with that count, so no shape depends on the values."""
from __future__ import annotations

import math

import numpy as np

from ..ir import nodes as N
from .axes import normalize_axis_tuple
from .creation import as_node, full
from .elementwise import apply_ufunc as U, astype, where
from .indexing import take_along_axis
from .ordering import sort
from .reductions import mean, sum as sum_
from .shapes import moveaxis, reshape, transpose

METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
           "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
           "normal_unbiased", "lower", "higher", "midpoint", "nearest")
_ALPHA_BETA = {"interpolated_inverted_cdf": (0, 1), "hazen": (0.5, 0.5), "weibull": (0, 0),
               "median_unbiased": (1 / 3.0, 1 / 3.0), "normal_unbiased": (3 / 8.0, 3 / 8.0)}
_INT64 = np.dtype(np.int64)


def joined(node, axis):
    """``(node with the reduced axes last, joined into one; the kept shape;
    the keepdims shape)``, NumPy's ``_ureduce``."""
    nd = node.ndim
    axes = tuple(range(nd)) if axis is None else normalize_axis_tuple(axis, nd)
    keep = [d for d in range(nd) if d not in axes]
    kept = tuple(node.shape[d] for d in keep)
    moved = transpose(node, tuple(keep) + axes) if keep + list(axes) != list(range(nd)) \
        else node
    ones = tuple(1 if d in axes else n for d, n in enumerate(node.shape))
    return reshape(moved, kept + (math.prod(node.shape[d] for d in axes),)), kept, ones


def _last(s):
    """The last element of each slice of ``s`` (kept shape + (1,))."""
    n = s.shape[-1]
    return take_along_axis(s, full(s.shape[:-1] + (1,), n - 1, _INT64), -1)


def median(a, axis=None, keepdims=False) -> N.Node:
    """NumPy's ``_median``: the mean of the middle one or two sorted values
    (float64 for integers), NaN where the slice holds a NaN."""
    node = as_node(a)
    flat, kept, ones = joined(node, axis)
    n = flat.shape[-1]
    s = sort(flat, -1) if n else flat
    half = n // 2
    lo, hi = (half, half + 1) if n % 2 else (max(half - 1, 0), half + 1)
    idx = full(kept + (hi - lo,), 0, _INT64) if n == 0 else \
        U("add", full(kept + (hi - lo,), lo, _INT64), _positions(kept, hi - lo))
    mid = take_along_axis(s, idx, -1) if n else s
    out = mean(mid, -1)
    if node.dtype.kind == "f" and n:
        last = reshape(_last(s), kept)
        out = where(U("isnan", last), astype(last, out.dtype), out)
    return reshape(out, ones) if keepdims else out


def _positions(kept, k):
    """``0 .. k-1`` along a last axis of ``k``, broadcast over ``kept``."""
    from .creation import arange
    from .shapes import broadcast_to
    return broadcast_to(reshape(arange(k), (1,) * len(kept) + (k,)), kept + (k,))


def check_q(q, scale=1):
    """NumPy's check of ``q`` (concrete values only): in [0, 1] (``scale``
    100: percentiles in [0, 100])."""
    weak = type(q) in (int, float)
    node = as_node(q)
    if isinstance(node, N.DataWrapper):
        with np.errstate(all="ignore"):
            values = np.true_divide(node.data, scale) if scale != 1 else node.data
        if values.ndim > 2:
            raise ValueError("q must be a scalar or 1d")
        if values.size and not (values.min() >= 0 and values.max() <= 1) \
                or np.isnan(values).any():
            raise ValueError("Percentiles must be in the range [0, 100]" if scale != 1
                             else "Quantiles must be in the range [0, 1]")
        node = as_node(np.asarray(values))
    elif scale != 1:
        node = U("true_divide", node, scale)
    return node, weak


def _virtual_index(method, n, q):
    """NumPy's ``get_virtual_index`` of ``method`` as nodes (``n`` a Python
    int or a node in ``q``'s dtype); an int64 node for the methods that
    take one sample."""
    if method == "linear":
        return U("multiply", U("subtract", n, 1), q)
    if method in _ALPHA_BETA:
        alpha, beta = _ALPHA_BETA[method]
        return U("subtract", U("add", U("multiply", n, q),
                               U("add", alpha, U("multiply", q, 1 - alpha - beta))), 1)
    if method in ("lower", "higher", "nearest"):
        fn = {"lower": "floor", "higher": "ceil", "nearest": "rint"}[method]
        return astype(U(fn, U("multiply", U("subtract", n, 1), q)), _INT64)
    if method == "midpoint":
        v = U("multiply", U("subtract", n, 1), q)
        return U("multiply", 0.5, U("add", U("floor", v), U("ceil", v)))
    if method == "averaged_inverted_cdf":
        return U("subtract", U("multiply", n, q), 1)
    index = U("subtract", U("multiply", n, q), 1)                  # the discrete two
    if method == "closest_observation":
        index = U("subtract", index, 0.5)
    prev = U("floor", index)
    gamma = U("subtract", index, prev)
    at_prev = U("equal", gamma, 0)
    if method == "closest_observation":
        at_prev = U("logical_and", at_prev, U("equal", U("remainder", prev, 2), 1))
    res = astype(where(at_prev, prev, U("add", prev, 1)), _INT64)
    return where(U("less", res, 0), full((), 0, _INT64), res)


def _fix_gamma(method, gamma, vi):
    if method == "averaged_inverted_cdf":
        return where(U("equal", gamma, 0), 0.5, 1.0)
    if method == "midpoint":
        return where(U("equal", U("remainder", vi, 1), 0), 0.0, 0.5)
    return gamma


def quantile(a, q, axis=None, method="linear", keepdims=False, ignore_nan=False,
             scale=1) -> N.Node:
    """``np.quantile`` (``scale`` 100: ``np.percentile``; ``ignore_nan``:
    ``np.nanquantile``): the result has ``q``'s axes first."""
    if method not in METHODS:
        raise ValueError(f"{method!r} is not a valid method. Use one of: "
                         f"{dict.fromkeys(METHODS).keys()}")
    node = as_node(a)
    qn, weak = check_q(q, scale)
    flat, kept, ones = joined(node, axis)
    n = flat.shape[-1]
    floats = node.dtype.kind == "f"
    ignore_nan = ignore_nan and floats
    if n == 0 and not ignore_nan:
        raise IndexError("index -1 is out of bounds for axis 0 with size 0")
    qdt = qn.dtype if qn.dtype.kind == "f" else np.dtype(np.float64)
    s = sort(flat, -1) if n else flat
    qflat = reshape(qn, (1,) * len(kept) + (qn.size,))
    if ignore_nan:
        count = sum_(U("logical_not", U("isnan", flat)), -1, _INT64, keepdims=True)
        size = astype(count, qdt if qn.dtype.kind == "f" else np.dtype(np.float64))
    else:
        count = size = n
    vi = _virtual_index(method, size, qflat)
    shape = kept + (qflat.shape[-1],)
    if vi.dtype.kind in "iu":
        idx = vi
        result = _gather(s, idx, count, shape)
    else:
        prev = U("floor", vi)
        above = U("greater_equal", vi, count - 1 if isinstance(count, int)
                  else U("subtract", count, 1))
        below = U("less", vi, 0)
        prev = where(above, -1.0, where(below, 0.0, prev))
        nxt = where(above, -1.0, where(below, 0.0, U("add", U("floor", vi), 1)))
        gamma = _fix_gamma(method, U("subtract", vi, prev), vi)
        gamma = astype(gamma, vi.dtype)
        lo = _gather(s, astype(prev, _INT64), count, shape)
        hi = _gather(s, astype(nxt, _INT64), count, shape)
        if weak:
            gamma = astype(gamma, lo.dtype if lo.dtype.kind == "f" else np.float64)
        result = _lerp(lo, hi, gamma)
    if ignore_nan:
        result = where(U("equal", count, 0), astype(full((), math.nan), result.dtype)
                       if result.dtype.kind == "f" else result, result)
    elif floats and n:
        last = _last(s)
        result = where(U("isnan", last), astype(last, result.dtype), result)
    result = moveaxis(result, -1, 0)                         # q's axis first
    result = reshape(result, qn.shape + kept)
    if keepdims:
        result = reshape(result, qn.shape + ones)
    return result


def _gather(s, idx, count, shape):
    """``s`` along its last axis at ``idx`` (-1: the slice's last valid
    value, ``count - 1``), broadcast to ``shape``."""
    from .shapes import broadcast_to
    idx = where(U("less", idx, 0), U("add", idx, count), idx)
    idx = U("maximum", idx, 0)                      # an all-NaN slice: replaced later
    return take_along_axis(s, broadcast_to(idx, shape), -1)


def _lerp(a, b, t):
    """NumPy's ``_lerp``: ``a + (b - a) t``, from ``b`` where ``t >= 0.5``."""
    diff = U("subtract", b, a)
    low = U("add", a, U("multiply", diff, t))
    high = astype(U("subtract", b, U("multiply", diff, U("subtract", 1, t))), low.dtype)
    return where(U("greater_equal", t, 0.5), high, low)


def nanmedian(a, axis=None, keepdims=False) -> N.Node:
    """The median of the non-NaN values (NaN where there are none); integers
    as ``median``."""
    node = as_node(a)
    if node.dtype.kind != "f":
        return median(node, axis, keepdims)
    return quantile(node, 0.5, axis, "linear", keepdims, ignore_nan=True)
