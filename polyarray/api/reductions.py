"""``pa.*`` reductions and statistics (:mod:`polyarray.ops.reductions`,
:mod:`polyarray.ops.statistics`): ``sum``, ``prod``, ``max``, ``min``, ``any``,
``all``, ``argmax``, ``argmin``, ``mean``, ``var``, ``std``, the ``nan*``
family, ``ptp``, ``average``, ``count_nonzero``, ``cov``, ``corrcoef``."""
from __future__ import annotations

from ..array import Array, node_of, wrap as _wrap, into_out
from ..ops import reductions as R, statistics as T
from ..ops.axes import no_out
from ..ops.reductions import NoValue


# -- statistics --------------------------------------------------------------

def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue,
           where=True) -> Array:
    """Sum over ``axis`` treating NaN as zero (``np.nansum``), lazily;
    ``out=`` must be None."""
    no_out(out, "nansum")
    return Array(T.nansum(node_of(a), axis, dtype, keepdims, initial, node_of(where)))


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue,
            where=True) -> Array:
    """Product over ``axis`` treating NaN as one (``np.nanprod``), lazily;
    ``out=`` must be None."""
    no_out(out, "nanprod")
    return Array(T.nanprod(node_of(a), axis, dtype, keepdims, initial, node_of(where)))


def nanmax(a, axis=None, out=None, keepdims=False, initial=NoValue, where=True) -> Array:
    """Maximum over ``axis`` ignoring NaN (``np.nanmax``), lazily; an all-NaN
    slice gives NaN without NumPy's RuntimeWarning.  ``out=`` must be None."""
    no_out(out, "nanmax")
    return Array(T.nanmax(node_of(a), axis, keepdims, initial, node_of(where)))


def nanmin(a, axis=None, out=None, keepdims=False, initial=NoValue, where=True) -> Array:
    """Minimum over ``axis`` ignoring NaN (``np.nanmin``), lazily; an all-NaN
    slice gives NaN without NumPy's RuntimeWarning.  ``out=`` must be None."""
    no_out(out, "nanmin")
    return Array(T.nanmin(node_of(a), axis, keepdims, initial, node_of(where)))


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True) -> Array:
    """Mean over ``axis`` of the non-NaN values (``np.nanmean``), lazily; an
    all-NaN slice gives NaN without a warning.  ``out=`` must be None."""
    no_out(out, "nanmean")
    return Array(T.nanmean(node_of(a), axis, dtype, keepdims, node_of(where)))


def ptp(a, axis=None, out=None, keepdims=False) -> Array:
    """Range ``max - min`` over ``axis`` (``np.ptp``), lazily; bool arrays are
    refused, as NumPy's subtract refuses them.  ``out=`` must be None."""
    no_out(out, "ptp")
    return Array(T.ptp(node_of(a), axis, keepdims))


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """Weighted average over ``axis`` (``np.average``), lazily.

    Weights that sum to zero raise ZeroDivisionError when they are data, as
    in NumPy; lazy weights cannot be checked when built, and give inf or
    NaN instead."""
    return _wrap(T.average(node_of(a), axis, node_of(weights), returned, keepdims))


def count_nonzero(a, axis=None, *, keepdims=False) -> Array:
    """Number of nonzero values over ``axis`` (``np.count_nonzero``), as a lazy
    int64 array (NumPy returns a Python int when ``axis`` is None)."""
    return Array(R.count_nonzero(node_of(a), axis, keepdims))


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None) -> Array:
    """The covariance matrix of the variables in the rows of ``m`` (columns
    unless ``rowvar``) and ``y`` (``np.cov``), lazily, NumPy's formula.
    Weights given as data are checked as NumPy checks them; lazy weights
    are not."""
    return Array(T.cov(node_of(m), node_of(y), rowvar, bias, ddof, node_of(fweights),
                       node_of(aweights), dtype))


def corrcoef(x, y=None, rowvar=True, *, dtype=None) -> Array:
    """Pearson correlation coefficients, ``cov`` normalized by the standard
    deviations and clipped to [-1, 1] (``np.corrcoef``), lazily."""
    return Array(T.corrcoef(node_of(x), node_of(y), rowvar, dtype))


def _result(out, name, node) -> Array:
    """The reduction as an Array, or written into ``out`` (a polyarray array:
    NumPy's exact shape, and its casts: "unsafe" for the reductions,
    "same_kind" for ``std``), which is returned."""
    return into_out(out, name, node)


# -- reductions --------------------------------------------------------------
# NumPy's signatures and positional order

def sum(a, axis=None, dtype=None, out=None, keepdims=False,     # noqa: A001
        initial=NoValue, where=True) -> Array:
    """Sum of array elements over ``axis`` (``np.sum``), lazily.

    NumPy's dtype rule (small integers and bool sum in int64/uint64) and
    keywords (``initial``, ``where``); ``out=`` is written as NumPy writes it.  Device targets
    add floats in another order than NumPy's pairwise sum, so the last bits
    may differ."""
    return _result(out, "sum", R.sum(node_of(a), axis, dtype, keepdims, initial, node_of(where)))


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue,
         where=True) -> Array:
    """Product of array elements over ``axis`` (``np.prod``), lazily.

    NumPy's dtype rule (small integers in int64/uint64, wrapping on
    overflow) and keywords; ``out=`` is written as NumPy writes it."""
    return _result(out, "prod", R.prod(node_of(a), axis, dtype, keepdims, initial, node_of(where)))


def max(a, axis=None, out=None, keepdims=False, initial=NoValue,   # noqa: A001
        where=True) -> Array:
    """Maximum over ``axis``, NaN propagated (``np.max``, also ``pa.amax``), lazily.

    An empty reduction needs ``initial``, as in NumPy; ``out=`` is written as NumPy writes it."""
    return _result(out, "max", R.max(node_of(a), axis, keepdims, initial, node_of(where)))


def min(a, axis=None, out=None, keepdims=False, initial=NoValue,   # noqa: A001
        where=True) -> Array:
    """Minimum over ``axis``, NaN propagated (``np.min``, also ``pa.amin``), lazily.

    An empty reduction needs ``initial``, as in NumPy; ``out=`` is written as NumPy writes it."""
    return _result(out, "min", R.min(node_of(a), axis, keepdims, initial, node_of(where)))


def any(a, axis=None, out=None, keepdims=False, *, where=True) -> Array:    # noqa: A001
    """Whether any element over ``axis`` is true (``np.any``), as a lazy bool
    array: ``bool()`` of it evaluates.  ``out=`` is written as NumPy writes it."""
    return _result(out, "any", R.any(node_of(a), axis, keepdims, node_of(where)))


def all(a, axis=None, out=None, keepdims=False, *, where=True) -> Array:    # noqa: A001
    """Whether all elements over ``axis`` are true (``np.all``), as a lazy
    bool array: ``bool()`` of it evaluates.  ``out=`` is written as NumPy writes it."""
    return _result(out, "all", R.all(node_of(a), axis, keepdims, node_of(where)))


amax, amin = max, min


def argmax(a, axis=None, out=None, *, keepdims=False) -> Array:
    """Index of the maximum over ``axis`` (flattened when None) (``np.argmax``).

    Lazy int64; the first index on ties, the first NaN if any, as NumPy's.
    ``out=`` is written as NumPy writes it."""
    return _result(out, "argmax", R.argmax(node_of(a), axis, keepdims))


def argmin(a, axis=None, out=None, *, keepdims=False) -> Array:
    """Index of the minimum over ``axis`` (flattened when None) (``np.argmin``).

    Lazy int64; the first index on ties, the first NaN if any, as NumPy's.
    ``out=`` is written as NumPy writes it."""
    return _result(out, "argmin", R.argmin(node_of(a), axis, keepdims))


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True) -> Array:
    """Arithmetic mean over ``axis`` (``np.mean``), lazily.

    NumPy's dtypes: integers and bool give float64, float16 accumulates in
    float32.  An empty mean is NaN (without NumPy's warning); ``out=`` must
    be None."""
    return _result(out, "mean", R.mean(node_of(a), axis, dtype, keepdims, node_of(where)))


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
        correction=NoValue) -> Array:
    """Variance over ``axis`` (``np.var``), by NumPy's two-pass formula, lazily.

    ``ddof`` or the array API's ``correction``; NumPy's dtypes (integers give
    float64); ``out=`` is written as NumPy writes it."""
    return _result(out, "var", R.var(node_of(a), axis, dtype, ddof, keepdims, node_of(where), correction))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
        correction=NoValue) -> Array:
    """Standard deviation over ``axis`` (``np.std``): ``sqrt(var)``, lazily.

    ``ddof`` or the array API's ``correction``; NumPy's dtypes (integers give
    float64); ``out=`` is written as NumPy writes it."""
    return _result(out, "std", R.std(node_of(a), axis, dtype, ddof, keepdims, node_of(where), correction))


# these write ``out=`` themselves (NumPy's shape checks for a reduction's out):
# NumPy's dispatch and pa.jit's ``np.<name>`` hand it to them
for _f in (sum, prod, max, min, any, all, argmax, argmin, mean, var, std):
    _f.writes_out = True
del _f
