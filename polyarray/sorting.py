"""``pa.sort``, ``pa.argsort``, ``pa.searchsorted`` and the scans
(``cumsum``, ``cumprod``, ``cumulative_sum``, ``cumulative_prod``): unwrap
the Arrays, call the builders of :mod:`polyarray.ops.ordering` and
:mod:`polyarray.ops.scans`, wrap the node.  Each is a lazy part of the DAG,
run as kernels on the device targets (see those modules for how)."""
from __future__ import annotations

from .array import Array, node_of
from .ops import ordering as O, scans as S


def sort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False) -> Array:
    """``np.sort``: a stable merge sort along ``axis`` (None: flattened), NaN
    last; ``descending=True`` (the array API's) gives the reverse, NaN first."""
    return Array(O.sort(node_of(a), axis, kind, order, stable=stable, descending=descending))


def argsort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False) -> Array:
    """``np.argsort``, always stable (NumPy's ``kind='stable'``): equal keys
    keep their index order, ``descending`` too."""
    return Array(O.argsort(node_of(a), axis, kind, order, stable=stable,
                           descending=descending))


def searchsorted(a, v, side="left", sorter=None) -> Array:
    """``np.searchsorted``: insertion indices of ``v`` in the sorted 1-D ``a``."""
    return Array(O.searchsorted(node_of(a), node_of(v), side, node_of(sorter)))


def cumsum(a, axis=None, dtype=None, out=None) -> Array:
    """``np.cumsum``: small integers accumulate in int64 / uint64, as NumPy's."""
    return Array(S.cumsum(node_of(a), axis, dtype, out))


def cumprod(a, axis=None, dtype=None, out=None) -> Array:
    """``np.cumprod``: small integers accumulate in int64 / uint64, as NumPy's."""
    return Array(S.cumprod(node_of(a), axis, dtype, out))


def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False) -> Array:
    """``np.cumulative_sum`` (array API): ``include_initial`` puts 0 first."""
    return Array(S.cumulative_sum(node_of(x), axis=axis, dtype=dtype, out=out,
                                  include_initial=include_initial))


def cumulative_prod(x, /, *, axis=None, dtype=None, out=None,
                    include_initial=False) -> Array:
    """``np.cumulative_prod`` (array API): ``include_initial`` puts 1 first."""
    return Array(S.cumulative_prod(node_of(x), axis=axis, dtype=dtype, out=out,
                                   include_initial=include_initial))
