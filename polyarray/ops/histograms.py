"""Counting into bins: ``digitize`` and ``histogram``/``histogram2d``
lazily (the number of bins is known: only their edges and counts depend on
the values), ``bincount`` eagerly (its length is the largest value).

A value's bin is a binary search in the edges (``searchsorted``; the last
bin closed on the right, as NumPy's), which is the bin NumPy's own
arithmetic for even edges arrives at after its corrections.  Counts are
one reduction per bin over the values' bins (``bins <= COUNT_BY_COMPARE``)
or a sort of the bins and a search of each bin's first place (NumPy's
method for uneven edges); weights by the cumulative sum of the sorted
weights.  Edges from the data's minimum and maximum are lazy, NumPy's
``linspace`` arithmetic in their dtype."""
from __future__ import annotations

import operator

import numpy as np

from ..ir import nodes as N
from .arrange import diff
from .creation import arange, as_node, full
from .dtypes import check_dtype
from .elementwise import apply_ufunc as U, astype, where
from .indexing import getitem, take
from .ordering import argsort, searchsorted
from .reductions import max as max_, min as min_, sum as sum_
from .scans import cumsum
from .shapes import concatenate, expand_dims, flip, reshape

# up to this many bins, each count is a reduction over the values (bins x
# values compares in one kernel); more bins sort the values' bins first.
# NPBench's azimint_hist (400 000 values, 1000 bins, a count and a weighted
# count) on PoCL (2 cores): compares 0.54 s a call and 1.7 s to compile,
# the sort 0.64 s and 19 s (33 kernels)
COUNT_BY_COMPARE = 1024
_INT64 = np.dtype(np.int64)


def _monotonic(edges):
    """1 increasing, -1 decreasing, 0 neither (NumPy's ``_monotonicity``)."""
    d = np.diff(edges)
    if np.all(d >= 0):
        return 1
    if np.all(d <= 0):
        return -1
    return 0


def digitize(x, bins, right=False) -> N.Node:
    """NumPy's ``digitize``: ``searchsorted`` of ``x`` in ``bins`` (sides
    swapped), reversed bins for decreasing ones.  Bins given as data are
    checked monotonic; lazy bins are taken as monotonic, their direction
    read from their ends where the program runs."""
    xs, edges = as_node(x), as_node(bins)
    side = "left" if right else "right"
    if edges.ndim != 1:
        raise ValueError("object too deep for desired array" if edges.ndim > 1 else
                         "object of too small depth for desired array")
    n = edges.shape[0]
    if isinstance(edges, N.DataWrapper):
        mono = _monotonic(edges.data)
        if mono == 0:
            raise ValueError("bins must be monotonically increasing or decreasing")
    else:
        mono = None         # lazy: the direction is decided where it runs
    up = searchsorted(edges, xs, side) if mono != -1 else None
    down = U("subtract", n, searchsorted(flip(edges, 0), xs, side)) if mono != 1 else None
    if mono is not None or n < 2:
        return up if up is not None else down
    return where(U("greater", getitem(edges, (0,)), getitem(edges, (n - 1,))), down, up)


def _outer_edges(a, range_):
    """NumPy's ``_get_outer_edges``: the range given (checked), else the
    data's minimum and maximum (lazy: NaN or inf data is not refused), an
    empty range widened by 0.5 each side."""
    if range_ is not None:
        first, last = range_
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"supplied range of [{first}, {last}] is not finite")
        if first == last:
            first, last = first - 0.5, last + 0.5
        return first, last
    if a.size == 0:
        return 0, 1
    first, last = min_(a), max_(a)
    same = U("equal", first, last)
    return (where(same, U("subtract", first, 0.5), first),
            where(same, U("add", last, 0.5), last))


def _dtype_of(v):
    """What ``np.result_type`` takes for ``v``: a node's dtype, a Python
    scalar itself (weak), else its array's dtype."""
    if isinstance(v, N.Node):
        return v.dtype
    return v if type(v) in (int, float) else np.asarray(v).dtype


def lazy_linspace(first, last, num, dtype=None) -> N.Node:
    """NumPy's ``linspace(first, last, num)`` of scalar or 0-d bounds, in
    NumPy's dtype (``dtype`` casts the result): ``i * step + first``,
    ``(i / div) * delta`` where the step is 0, the last one ``last``."""
    dt = np.result_type(_dtype_of(first), _dtype_of(last), float(num))
    dt = check_dtype(dt, "linspace")
    lo, hi = (astype(v, dt) if isinstance(v, N.Node) else dt.type(v) for v in (first, last))
    delta = U("subtract", hi, lo)
    div = num - 1
    i = astype(arange(num), dt)
    if div > 0:
        step = U("divide", delta, div)
        y = where(U("equal", step, 0), U("multiply", U("divide", i, div), delta),
                  U("multiply", i, step))
    else:
        y = U("multiply", i, delta)
    y = U("add", y, lo)
    if num > 1:
        y = where(U("equal", arange(num), num - 1), hi, y)
    return y if dtype is None else astype(y, check_dtype(dtype, "linspace"))


def count_bins(index, nbins, weights=None) -> N.Node:
    """How many of ``index`` (1-D int64) fall in each of ``0 .. nbins - 1``
    (others ignored), or the sums of their ``weights``."""
    if nbins <= COUNT_BY_COMPARE or index.shape[0] == 0:
        hit = U("equal", expand_dims(index, 0), reshape(arange(nbins), (nbins, 1)))
        if weights is None:
            return sum_(hit, 1, _INT64)
        w = expand_dims(weights, 0)
        return sum_(where(hit, w, full((), 0, weights.dtype)), 1, weights.dtype)
    order = argsort(index)          # one sort for a count and a weighted count of it
    at = searchsorted(take(index, order), arange(nbins + 1), "left")
    if weights is None:
        return diff(at)
    cw = concatenate([full((1,), 0, weights.dtype), cumsum(take(weights, order))], 0)
    return diff(take(cw, at))


def _bin_of(values, edges, n):
    """The bin of each value in ``edges`` (``n + 1`` of them): the last
    edge at or below it, the last edge in the last bin; -1 outside."""
    idx = U("subtract", searchsorted(edges, values, "right"), 1)
    last = getitem(edges, (n,))
    idx = where(U("equal", values, last), full((), n - 1, _INT64), idx)
    outside = U("logical_or", U("less", values, getitem(edges, (0,))),
                U("logical_not", U("less_equal", values, last)))
    return where(outside, full((), -1, _INT64), idx)


def _edges(a, bins, range_, name):
    """``(edges, bin count)``: ``bins`` edges given, or that many even bins."""
    if isinstance(bins, str):
        raise NotImplementedError(f"{name}: bins={bins!r} (an estimator of the bin "
                                  "count) is not supported; pass the number of bins or "
                                  "the edges")
    if not isinstance(bins, N.Node) and np.ndim(bins) == 0:
        try:
            n = operator.index(bins)
        except TypeError:
            raise TypeError("`bins` must be an integer, a string, or an array") from None
        if n < 1:
            raise ValueError("`bins` must be positive, when an integer")
        first, last = _outer_edges(a, range_)
        bin_type = np.result_type(_dtype_of(first), _dtype_of(last), a.dtype)
        if bin_type.kind in "iub":
            bin_type = np.result_type(bin_type, float)
        return lazy_linspace(first, last, n + 1, bin_type), n
    edges = as_node(bins)
    if edges.ndim != 1:
        raise ValueError("`bins` must be 1d, when an array")
    if isinstance(edges, N.DataWrapper) and np.any(edges.data[:-1] > edges.data[1:]):
        raise ValueError("`bins` must increase monotonically, when an array")
    return edges, edges.shape[0] - 1


def histogram(a, bins=10, range=None, density=None, weights=None) -> tuple:  # noqa: A002
    """``(counts, edges)`` of the flattened ``a`` (NumPy's ``histogram``):
    even bins over ``range`` or the data's span, or the edges given."""
    values = reshape(as_node(a), (-1,))
    w = None
    if weights is not None:
        w = as_node(weights)
        if w.shape != as_node(a).shape:
            raise ValueError("weights should have the same shape as a.")
        w = reshape(w, (-1,))
    edges, n = _edges(values, bins, range, "histogram")
    uniform = not isinstance(bins, N.Node) and np.ndim(bins) == 0
    probe = astype(values, edges.dtype) if uniform else values
    counts = count_bins(_bin_of(probe, edges, n), n, w)
    if density:
        width = astype(diff(edges), np.float64)
        counts = U("divide", U("divide", counts, width), sum_(counts))
    return counts, edges


def histogram2d(x, y, bins=10, range=None, density=None, weights=None) -> tuple:  # noqa: A002
    """``(counts, xedges, yedges)`` (NumPy's ``histogram2d``, through its
    ``histogramdd``): float counts, outliers left out."""
    xs, ys = as_node(x), as_node(y)
    if xs.shape[0] != ys.shape[0]:
        raise ValueError("x and y must have the same length.")
    try:
        count = len(bins)
    except TypeError:
        count = 1
    if count not in (1, 2):
        bins = [bins, bins]
    elif count == 1:
        if np.ndim(bins) != 0 or isinstance(bins, N.Node):
            raise ValueError("The dimension of bins must be equal to the dimension of the "
                             "sample x.")
        bins = [bins, bins]
    if range is not None and len(range) != 2:
        raise ValueError("range argument must have one entry per dimension")
    ranges = range if range is not None else (None, None)
    parts, sizes = [], []
    for k, (v, b, r) in enumerate(zip((xs, ys), bins, ranges)):
        v = reshape(v, (-1,))
        if not isinstance(b, N.Node) and np.ndim(b) == 0:
            if b < 1:
                raise ValueError(f"`bins[{k}]` must be positive, when an integer")
            try:
                n = operator.index(b)
            except TypeError as e:
                raise TypeError(f"`bins[{k}]` must be an integer, when a scalar") from e
            first, last = _outer_edges(v, r)
            edges = lazy_linspace(first, last, n + 1)
        else:
            edges = as_node(b)
            if edges.ndim != 1:
                raise ValueError(f"`bins[{k}]` must be a scalar or 1d array")
            if isinstance(edges, N.DataWrapper) and \
                    np.any(edges.data[:-1] > edges.data[1:]):
                raise ValueError(f"`bins[{k}]` must be monotonically increasing, when an "
                                 "array")
            n = edges.shape[0] - 1
        parts.append((_bin_of(v, edges, n), edges))
        sizes.append(n)
    (ix, xe), (iy, ye) = parts
    nx, ny = sizes
    inside = U("logical_and", U("greater_equal", ix, 0), U("greater_equal", iy, 0))
    flat = where(inside, U("add", U("multiply", ix, ny), iy), full((), -1, _INT64))
    w = None if weights is None else reshape(as_node(weights), (-1,))
    hist = astype(count_bins(flat, nx * ny, w), np.float64)
    hist = reshape(hist, (nx, ny))
    if density:
        total = sum_(hist)
        hist = U("divide", hist, reshape(diff(xe), (nx, 1)))
        hist = U("divide", hist, reshape(diff(ye), (1, ny)))
        hist = U("divide", hist, total)
    return hist, xe, ye


def bincount(values, weights=None, minlength=0):
    """NumPy's ``bincount`` of concrete values (the caller's eager step)."""
    return np.bincount(values, weights, minlength)
