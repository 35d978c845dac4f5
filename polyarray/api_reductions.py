"""The reduction functions of ``pa.*`` (``sum``, ``max``, ``argmax``,
``mean``, ``var``...), as :mod:`polyarray.api` makes the others: each unwraps
its arrays, calls the node builder of the same name in
:mod:`polyarray.ops.reductions` and wraps the result."""
from __future__ import annotations

from .array import Array, node_of
from .ops import reductions as R
from .ops.axes import no_out
from .ops.reductions import NoValue


# -- reductions --------------------------------------------------------------
# NumPy's signatures and positional order; ``out`` must be None (see no_out)

def sum(a, axis=None, dtype=None, out=None, keepdims=False,     # noqa: A001
        initial=NoValue, where=True) -> Array:
    """Sum of array elements over ``axis`` (``np.sum``), lazily.

    NumPy's dtype rule (small integers and bool sum in int64/uint64) and
    keywords (``initial``, ``where``); ``out=`` must be None.  Device targets
    add floats in another order than NumPy's pairwise sum, so the last bits
    may differ."""
    no_out(out, "sum")
    return Array(R.sum(node_of(a), axis, dtype, keepdims, initial, node_of(where)))


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue,
         where=True) -> Array:
    """Product of array elements over ``axis`` (``np.prod``), lazily.

    NumPy's dtype rule (small integers in int64/uint64, wrapping on
    overflow) and keywords; ``out=`` must be None."""
    no_out(out, "prod")
    return Array(R.prod(node_of(a), axis, dtype, keepdims, initial, node_of(where)))


def max(a, axis=None, out=None, keepdims=False, initial=NoValue,   # noqa: A001
        where=True) -> Array:
    """Maximum over ``axis``, NaN propagated (``np.max``, also ``pa.amax``), lazily.

    An empty reduction needs ``initial``, as in NumPy; ``out=`` must be None."""
    no_out(out, "max")
    return Array(R.max(node_of(a), axis, keepdims, initial, node_of(where)))


def min(a, axis=None, out=None, keepdims=False, initial=NoValue,   # noqa: A001
        where=True) -> Array:
    """Minimum over ``axis``, NaN propagated (``np.min``, also ``pa.amin``), lazily.

    An empty reduction needs ``initial``, as in NumPy; ``out=`` must be None."""
    no_out(out, "min")
    return Array(R.min(node_of(a), axis, keepdims, initial, node_of(where)))


def any(a, axis=None, out=None, keepdims=False, *, where=True) -> Array:    # noqa: A001
    """Whether any element over ``axis`` is true (``np.any``), as a lazy bool
    array: ``bool()`` of it evaluates.  ``out=`` must be None."""
    no_out(out, "any")
    return Array(R.any(node_of(a), axis, keepdims, node_of(where)))


def all(a, axis=None, out=None, keepdims=False, *, where=True) -> Array:    # noqa: A001
    """Whether all elements over ``axis`` are true (``np.all``), as a lazy
    bool array: ``bool()`` of it evaluates.  ``out=`` must be None."""
    no_out(out, "all")
    return Array(R.all(node_of(a), axis, keepdims, node_of(where)))


amax, amin = max, min


def argmax(a, axis=None, out=None, *, keepdims=False) -> Array:
    """Index of the maximum over ``axis`` (flattened when None) (``np.argmax``).

    Lazy int64; the first index on ties, the first NaN if any, as NumPy's.
    ``out=`` must be None."""
    no_out(out, "argmax")
    return Array(R.argmax(node_of(a), axis, keepdims))


def argmin(a, axis=None, out=None, *, keepdims=False) -> Array:
    """Index of the minimum over ``axis`` (flattened when None) (``np.argmin``).

    Lazy int64; the first index on ties, the first NaN if any, as NumPy's.
    ``out=`` must be None."""
    no_out(out, "argmin")
    return Array(R.argmin(node_of(a), axis, keepdims))


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True) -> Array:
    """Arithmetic mean over ``axis`` (``np.mean``), lazily.

    NumPy's dtypes: integers and bool give float64, float16 accumulates in
    float32.  An empty mean is NaN (without NumPy's warning); ``out=`` must
    be None."""
    no_out(out, "mean")
    return Array(R.mean(node_of(a), axis, dtype, keepdims, node_of(where)))


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
        correction=NoValue) -> Array:
    """Variance over ``axis`` (``np.var``), by NumPy's two-pass formula, lazily.

    ``ddof`` or the array API's ``correction``; NumPy's dtypes (integers give
    float64); ``out=`` must be None."""
    no_out(out, "var")
    return Array(R.var(node_of(a), axis, dtype, ddof, keepdims, node_of(where), correction))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
        correction=NoValue) -> Array:
    """Standard deviation over ``axis`` (``np.std``): ``sqrt(var)``, lazily.

    ``ddof`` or the array API's ``correction``; NumPy's dtypes (integers give
    float64); ``out=`` must be None."""
    no_out(out, "std")
    return Array(R.std(node_of(a), axis, dtype, ddof, keepdims, node_of(where), correction))
