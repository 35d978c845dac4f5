"""``pa.*`` counting into bins (:mod:`polyarray.ops.histograms`): ``digitize``,
``histogram``, ``histogram2d`` (lazy), ``bincount`` (eager)."""
from __future__ import annotations

from ..array import Array, node_of
from ..ops import creation as C, histograms as H
from .indexing import _values


def digitize(x, bins, right=False) -> Array:
    """The index of the bin of each value of ``x`` (``np.digitize``), lazily,
    by binary search; ``bins`` given as data are checked monotonic, lazy
    ``bins`` are taken as monotonic (either way)."""
    return Array(H.digitize(node_of(x), node_of(bins), right))


def histogram(a, bins=10, range=None, density=None, weights=None) -> tuple:  # noqa: A002
    """The histogram of ``a`` (``np.histogram``): ``(counts, edges)``, lazy
    (``bins`` an int, even bins over ``range`` or the data's span; or the
    edges).  A data span of NaN or inf is not refused (NumPy raises);
    ``bins`` estimators ('auto', ...) are not supported."""
    counts, edges = H.histogram(node_of(a), node_of(bins), range, density, node_of(weights))
    return Array(counts), Array(edges)


def histogram2d(x, y, bins=10, range=None, density=None, weights=None) -> tuple:  # noqa: A002
    """The 2-D histogram of the points ``(x, y)`` (``np.histogram2d``):
    ``(counts, xedges, yedges)``, lazy, float counts as NumPy's."""
    hist, xe, ye = H.histogram2d(node_of(x), node_of(y), node_of(bins), range, density,
                                 node_of(weights))
    return Array(hist), Array(xe), Array(ye)


def bincount(x, /, weights=None, minlength=0) -> Array:
    """How many times each value ``0 .. max(x)`` occurs in ``x``
    (``np.bincount``; sums of ``weights``).  Eager: the length depends on the
    values, so ``x`` (and ``weights``) are evaluated now, on the default
    target, and the result is data; ``pa.LazyValueError`` where they
    depend on placeholders."""
    values = _values(x, "bincount")
    w = None if weights is None else _values(weights, "bincount")
    return Array(C.array(H.bincount(values, w, minlength)))
