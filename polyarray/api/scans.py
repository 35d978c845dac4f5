"""``pa.*`` scans (:mod:`polyarray.ops.scans`): ``cumsum``, ``cumprod``,
``cumulative_sum``, ``cumulative_prod``."""
from __future__ import annotations

from ..array import Array, node_of
from ..ops import scans as S


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
