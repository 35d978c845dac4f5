"""``pa.*`` ordering (:mod:`polyarray.ops.ordering`, :mod:`polyarray.ops.eager`):
``sort``, ``argsort``, ``partition``, ``argpartition``, ``lexsort``,
``searchsorted``, ``isin``, and the eager ``unique`` family (evaluated when
called: its shape depends on the values)."""
from __future__ import annotations

from ..array import Array, node_of, wrap as _wrap
from ..ops import eager as G, ordering as O
from .indexing import _values


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True, **kwargs):
    """The sorted unique elements of ``ar`` (``np.unique``, every keyword).

    Eager: ``ar`` is evaluated now (on the default target), NumPy computes
    the result and it comes back as data arrays; ``pa.LazyValueError`` if
    ``ar`` depends on placeholders."""
    return _wrap(G.unique(_values(ar, "unique"), return_index, return_inverse, return_counts,
                          axis, equal_nan=equal_nan, **kwargs))


def unique_values(x):
    """The unique elements of ``x`` (``np.unique_values``, array API); eager,
    as ``pa.unique``."""
    return _wrap(G.unique_family("unique_values", _values(x, "unique_values")))


def unique_counts(x):
    """The unique elements of ``x`` and their counts (``np.unique_counts``,
    array API), a named tuple; eager, as ``pa.unique``."""
    return _wrap(G.unique_family("unique_counts", _values(x, "unique_counts")))


def unique_inverse(x):
    """The unique elements of ``x`` and the indices that rebuild ``x``
    (``np.unique_inverse``, array API), a named tuple; eager, as ``pa.unique``."""
    return _wrap(G.unique_family("unique_inverse", _values(x, "unique_inverse")))


def unique_all(x):
    """The unique elements of ``x`` with first indices, inverse and counts
    (``np.unique_all``, array API), a named tuple; eager, as ``pa.unique``."""
    return _wrap(G.unique_family("unique_all", _values(x, "unique_all")))


def sort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False) -> Array:
    """A sorted copy of ``a`` along ``axis`` (flattened when None) (``np.sort``).

    Lazy: a stable merge sort run as kernels on the device targets (every
    ``kind`` is accepted and is stable; equal values such as -0.0 and 0.0
    keep their order, where NumPy's default quicksort may swap them).  NaN
    sorts last, as NumPy's; ``descending=True`` (the array API's) gives the
    reverse order, NaN first.  ``Array.sort`` (in place) is refused."""
    return Array(O.sort(node_of(a), axis, kind, order, stable=stable, descending=descending))


def argsort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False) -> Array:
    """Indices that sort ``a`` along ``axis`` (flattened when None) (``np.argsort``).

    Lazy int64.  Always stable, whatever ``kind`` (NumPy's
    ``kind='stable'``): equal keys keep their index order, with
    ``descending=True`` (the array API's) too.  NaN sorts last."""
    return Array(O.argsort(node_of(a), axis, kind, order, stable=stable,
                           descending=descending))


def searchsorted(a, v, side="left", sorter=None) -> Array:
    """Indices where ``v`` would be inserted to keep the 1-D ``a`` sorted
    (``np.searchsorted``), lazily, by binary search on the device.

    ``a`` and ``v`` are compared in their common dtype, NaN last, as NumPy
    does; ``sorter`` may be lazy (its indices are checked when it runs)."""
    return Array(O.searchsorted(node_of(a), node_of(v), side, node_of(sorter)))


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None) -> Array:
    """``np.isin``: whether each element of ``element`` is in ``test_elements``
    (a lazy bool array; a sort and a binary search on the device).
    ``assume_unique`` and ``kind`` are accepted and change nothing."""
    return Array(O.isin(node_of(element), node_of(test_elements), invert))


def partition(a, kth, axis=-1, kind="introselect", order=None) -> Array:
    """``a`` partitioned around the ``kth`` elements along ``axis``
    (``np.partition``), lazily, as a full stable sort: each ``kth`` element
    in its sorted place, the rest in sorted order (NumPy leaves their order
    unspecified, so it may differ)."""
    return Array(O.partition(node_of(a), node_of(kth), axis, kind, order))


def argpartition(a, kth, axis=-1, kind="introselect", order=None) -> Array:
    """Indices that partition ``a`` around ``kth`` (``np.argpartition``),
    lazily, as a full stable ``argsort`` (see ``partition``)."""
    return Array(O.argpartition(node_of(a), node_of(kth), axis, kind, order))


def lexsort(keys, axis=-1) -> Array:
    """Indices that sort by the last of ``keys``, ties broken by the one
    before, and so on (``np.lexsort``), lazily: a stable sort per key."""
    if isinstance(keys, (list, tuple)):
        keys = [node_of(k) for k in keys]
    return Array(O.lexsort(node_of(keys), axis))
