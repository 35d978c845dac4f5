"""``pa.sort``, ``pa.argsort``, ``pa.searchsorted`` and the scans
(``cumsum``, ``cumprod``, ``cumulative_sum``, ``cumulative_prod``): unwrap
the Arrays, call the builders of :mod:`polyarray.ops.ordering` and
:mod:`polyarray.ops.scans`, wrap the node.  Each is a lazy part of the DAG,
run as kernels on the device targets (see those modules for how)."""
from __future__ import annotations

from .array import Array, node_of
from .ops import ordering as O, scans as S


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


def cumsum(a, axis=None, dtype=None, out=None) -> Array:
    """Cumulative sum along ``axis`` (flattened when None) (``np.cumsum``), lazily.

    NumPy's dtypes (small integers accumulate in int64/uint64, wrapping as
    NumPy's).  Floats are added in blocks, not NumPy's sequential order:
    equal within rounding.  ``out=`` must be None (TypeError)."""
    return Array(S.cumsum(node_of(a), axis, dtype, out))


def cumprod(a, axis=None, dtype=None, out=None) -> Array:
    """Cumulative product along ``axis`` (flattened when None) (``np.cumprod``),
    lazily.

    NumPy's dtypes (small integers accumulate in int64/uint64).  Floats are
    multiplied in blocks, not NumPy's sequential order: equal within
    rounding, except that an overflow to inf that meets a zero may give NaN
    in one order and 0 in the other.  ``out=`` must be None (TypeError)."""
    return Array(S.cumprod(node_of(a), axis, dtype, out))


def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False) -> Array:
    """Cumulative sum along ``axis`` (``np.cumulative_sum``, the array API's),
    lazily; ``include_initial=True`` puts 0 first.  ``axis`` is required for
    arrays of more than one dimension; floats as in ``pa.cumsum``."""
    return Array(S.cumulative_sum(node_of(x), axis=axis, dtype=dtype, out=out,
                                  include_initial=include_initial))


def cumulative_prod(x, /, *, axis=None, dtype=None, out=None,
                    include_initial=False) -> Array:
    """Cumulative product along ``axis`` (``np.cumulative_prod``, the array
    API's), lazily; ``include_initial=True`` puts 1 first.  ``axis`` is
    required for arrays of more than one dimension; floats as in
    ``pa.cumprod``."""
    return Array(S.cumulative_prod(node_of(x), axis=axis, dtype=dtype, out=out,
                                   include_initial=include_initial))


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None) -> Array:
    """``np.isin``: whether each element of ``element`` is in ``test_elements``
    (a lazy bool array; a sort and a binary search on the device).
    ``assume_unique`` and ``kind`` are accepted and change nothing."""
    return Array(O.isin(node_of(element), node_of(test_elements), invert))
