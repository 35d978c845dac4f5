"""``pa.*`` order statistics (:mod:`polyarray.ops.quantiles`): ``median``,
``quantile``, ``percentile``, ``nanmedian``, ``nanquantile``,
``nanpercentile``."""
from __future__ import annotations

from ..array import Array, node_of
from ..ops import quantiles as Q
from ..ops.axes import no_out
from ..ops.reductions import NoValue


def _weights(weights, method):
    if weights is not None:
        if method != "inverted_cdf":
            raise ValueError(f"Only method 'inverted_cdf' supports weights. Got: {method}.")
        raise NotImplementedError("quantiles with weights are not supported")


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False) -> Array:
    """The median along ``axis`` (all axes when None; a tuple joins several)
    (``np.median``), lazily: a sort along the axis, then the mean of the
    middle one or two values (float64 for integers); NaN where a slice
    holds a NaN.  ``overwrite_input`` means nothing (nothing is written)."""
    no_out(out, "median")
    return Array(Q.median(node_of(a), axis, keepdims))


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None) -> Array:
    """The ``q``-th quantiles along ``axis`` (``np.quantile``, its 13
    ``method``s), lazily: a sort, then the neighbouring values at each
    virtual index, interpolated as NumPy does.  ``q``'s axes come first;
    ``q`` given as data is checked, a lazy ``q`` is not.  ``weights`` are
    not supported."""
    no_out(out, "quantile")
    _weights(weights, method)
    return Array(Q.quantile(node_of(a), node_of(q), axis, method, keepdims))


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None) -> Array:
    """``quantile`` of ``q / 100`` (``np.percentile``), lazily."""
    no_out(out, "percentile")
    _weights(weights, method)
    return Array(Q.quantile(node_of(a), node_of(q), axis, method, keepdims, scale=100))


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=NoValue) -> Array:
    """The median of the non-NaN values along ``axis`` (``np.nanmedian``; NaN
    for slices of NaN alone, without NumPy's warning), lazily."""
    no_out(out, "nanmedian")
    return Array(Q.nanmedian(node_of(a), axis, keepdims is True))


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=NoValue, *, weights=None) -> Array:
    """``quantile`` of the non-NaN values (``np.nanquantile``), lazily: each
    slice's count of values is computed on the device and indexes the sort."""
    no_out(out, "nanquantile")
    _weights(weights, method)
    return Array(Q.quantile(node_of(a), node_of(q), axis, method, keepdims is True,
                            ignore_nan=True))


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=NoValue, *, weights=None) -> Array:
    """``nanquantile`` of ``q / 100`` (``np.nanpercentile``), lazily."""
    no_out(out, "nanpercentile")
    _weights(weights, method)
    return Array(Q.quantile(node_of(a), node_of(q), axis, method, keepdims is True,
                            ignore_nan=True, scale=100))
