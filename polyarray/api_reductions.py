"""The reduction functions of ``pa.*`` (``sum``, ``max``, ``argmax``,
``mean``, ``var``...), as :mod:`polyarray.api` makes the others: each unwraps
its arrays, calls the node builder of the same name in
:mod:`polyarray.ops.reductions` and wraps the result."""
from __future__ import annotations

from .array import Array, into_out, node_of
from .ops import reductions as R
from .ops.reductions import NoValue


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
