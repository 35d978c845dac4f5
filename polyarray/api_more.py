"""More ``pa.*`` functions under NumPy's names and signatures (and the array
API's): composed ufuncs, statistics, eager functions, dtype inspection,
complex parts and DLPack (``api_arrange``: stacks, tiles, diagonals...).
Each unwraps its arrays, calls the node builder in :mod:`polyarray.ops` and
wraps the result, as :mod:`polyarray.api` does.
``out=`` is accepted where NumPy has it, and must be None.

``unique``, ``nonzero``, ``argwhere`` and ``flatnonzero`` are eager: the
shape of their result depends on the values, so they evaluate their input
when called (:mod:`polyarray.ops.eager`)."""
from __future__ import annotations

import numpy as np

from .array import Array, node_of, wrap as _wrap, ufunc_into
from .ufunc import ufunc
from .ops import creation as C, eager as G
from .ops import reductions as R, statistics as T, ufuncs as F
from .ops.axes import no_out
from .ops.reductions import NoValue


# the first line of each composed ufunc's docstring
_SUMMARY = {
    "signbit": "True where the sign bit of ``x`` is set (negative numbers, -0.0), "
               "elementwise (``np.signbit``).",
    "deg2rad": "Degrees to radians, elementwise (``np.deg2rad``).",
    "rad2deg": "Radians to degrees, elementwise (``np.rad2deg``).",
    "radians": "Degrees to radians, elementwise (``np.radians``, as ``np.deg2rad``).",
    "degrees": "Radians to degrees, elementwise (``np.degrees``, as ``np.rad2deg``).",
    "reciprocal": "``1 / x``, elementwise (``np.reciprocal``).",
    "cbrt": "Cube root, elementwise (``np.cbrt``).",
    "exp2": "``2 ** x``, elementwise (``np.exp2``).",
    "hypot": "``sqrt(x1**2 + x2**2)`` without intermediate overflow, elementwise "
             "(``np.hypot``).",
    "copysign": "``|x1|`` with the sign of ``x2``, elementwise (``np.copysign``).",
    "logaddexp": "``log(exp(x1) + exp(x2))`` without overflow, elementwise "
                 "(``np.logaddexp``).",
    "fmax": "The larger of ``x1`` and ``x2``, ignoring NaN, elementwise (``np.fmax``).",
    "fmin": "The smaller of ``x1`` and ``x2``, ignoring NaN, elementwise (``np.fmin``).",
    "heaviside": "Heaviside step: 0 where ``x1 < 0``, ``x2`` where ``x1 == 0``, 1 above, "
                 "elementwise (``np.heaviside``).",
    "float_power": "``x1 ** x2`` computed in float64 or wider, elementwise "
                   "(``np.float_power``).",
    "left_shift": "``x1 << x2`` (bits shifted left), elementwise (``np.left_shift``; "
                  "``pa.bitwise_left_shift`` is the same function).",
    "right_shift": "``x1 >> x2`` (arithmetic for signed types), elementwise "
                   "(``np.right_shift``; ``pa.bitwise_right_shift`` is the same function).",
}

# where a composition differs from NumPy's loop
_DIFFERENCE = {
    "signbit": "C's ``signbit``: the sign bit of -0.0 and of a negative NaN too, as NumPy.",
    "copysign": "C's ``copysign``: the sign bit of ``x2``, of a NaN too, as NumPy.",
    "cbrt": "C's ``cbrt`` on the device; within a last-bit rounding of NumPy's.",
    "reciprocal": "Integers as NumPy's loop: 0 unless ``x`` is 1 or -1, and ``1 / 0`` what\n"
                  "NumPy gives on x86-64 (the type's minimum for 32- and 64-bit signed\n"
                  "integers, else 0).",
}



def _ufunc(name, fn, nin):
    """A composed ufunc with NumPy's call signature (``out`` must be None)."""
    if nin == 1:
        def f(x, /, out=None, *, where=True, dtype=None):
            if out is not None:
                return ufunc_into(out, name, where, lambda w: F.ufunc_node(
                    name, (node_of(x),), None, w, dtype, fn), (x,))
            return Array(F.ufunc_node(name, (node_of(x),), out, where, dtype, fn))
    else:
        def f(x1, x2, /, out=None, *, where=True, dtype=None):
            if out is not None:
                return ufunc_into(out, name, where, lambda w: F.ufunc_node(
                    name, (node_of(x1), node_of(x2)), None, w, dtype, fn), (x1, x2))
            return Array(F.ufunc_node(name, (node_of(x1), node_of(x2)), out, where, dtype,
                                      fn))
    f.__name__ = f.__qualname__ = name
    summary = _SUMMARY.get(name, f"Elementwise ``np.{name}``.")
    difference = f"{_DIFFERENCE[name]}\n" if name in _DIFFERENCE else ""
    shared = F.UFUNC_NOTE if nin == 1 else f"{F.BINARY_NOTE}\n{F.UFUNC_NOTE}"
    f.__doc__ = f"{summary}\n\n{difference}{shared}"
    return f


_UNARY = {"signbit": F.signbit, "deg2rad": F.deg2rad, "rad2deg": F.rad2deg,
          "radians": F.radians, "degrees": F.degrees, "reciprocal": F.reciprocal,
          "cbrt": F.cbrt, "exp2": F.exp2}
_BINARY = {"hypot": F.hypot, "copysign": F.copysign, "logaddexp": F.logaddexp,
           "fmax": F.fmax, "fmin": F.fmin, "heaviside": F.heaviside,
           "float_power": F.float_power, "left_shift": F.left_shift,
           "right_shift": F.right_shift}
globals().update({n: ufunc(_ufunc(n, fn, 1), getattr(np, n)) for n, fn in _UNARY.items()})
globals().update({n: ufunc(_ufunc(n, fn, 2), getattr(np, n)) for n, fn in _BINARY.items()})
bitwise_left_shift, bitwise_right_shift = left_shift, right_shift   # noqa: F821


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None) -> Array:
    """``x`` with NaN replaced by ``nan`` and +-inf by ``posinf``/``neginf``
    (default: the dtype's largest/smallest finite values) (``np.nan_to_num``).

    Lazy; ``copy`` is accepted and means nothing (nothing is written in
    place).  Integer and bool arrays are returned unchanged."""
    return Array(F.nan_to_num(node_of(x), copy, nan, posinf, neginf))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> Array:
    """Whether ``a`` and ``b`` are equal within ``atol + rtol * |b|``,
    elementwise (``np.isclose``, NumPy 2's formula), as a lazy bool array.
    ``rtol`` and ``atol`` must be scalars."""
    return Array(F.isclose(node_of(a), node_of(b), *_tolerances(rtol, atol), equal_nan))


def _tolerances(rtol, atol):
    for name, v in (("rtol", rtol), ("atol", atol)):
        if isinstance(v, Array) or np.ndim(v):
            raise TypeError(f"isclose/allclose: {name} must be a scalar in polyarray, "
                            f"got {type(v).__name__}")
    return rtol, atol


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> Array:
    """Whether all of ``a`` and ``b`` are close (``np.allclose``), as a lazy
    0-d bool array, where NumPy returns a Python bool: ``bool()`` of it (an
    ``if``) evaluates it on the default target, and raises
    ``pa.LazyValueError`` if it depends on placeholders."""
    return Array(R.all(F.isclose(node_of(a), node_of(b), *_tolerances(rtol, atol),
                                 equal_nan)))


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


# -- eager: the result's shape depends on the values ------------------------

def _evaluate(node):
    return Array(node).evaluate()


def _values(a, what):
    return G.concrete(node_of(a), what, _evaluate)


def nonzero(a) -> tuple:
    """Indices of the nonzero elements, one int64 array per axis (``np.nonzero``).

    Eager: the result's shape depends on the values, so ``a`` is evaluated
    now (on the default target) and the result is data; ``pa.LazyValueError``
    if ``a`` depends on placeholders."""
    return _wrap(G.nonzero(_values(a, "nonzero")))


def argwhere(a) -> Array:
    """Indices of the nonzero elements, one row per element (``np.argwhere``).

    Eager: ``a`` is evaluated now and the result is data;
    ``pa.LazyValueError`` if ``a`` depends on placeholders."""
    return _wrap(G.argwhere(_values(a, "argwhere")))


def flatnonzero(a) -> Array:
    """Indices of the nonzero elements of ``a`` flattened (``np.flatnonzero``).

    Eager: ``a`` is evaluated now and the result is data;
    ``pa.LazyValueError`` if ``a`` depends on placeholders."""
    return _wrap(G.flatnonzero(_values(a, "flatnonzero")))


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


# -- dtypes (the array API's inspection functions) ---------------------------

def _dtype_of(x):
    return x.dtype if isinstance(x, Array) else x


def result_type(*arrays_and_dtypes) -> np.dtype:
    """The dtype NumPy's promotion gives these arrays and dtypes
    (``np.result_type``); Python scalars stay weak (NEP 50).  Nothing is
    evaluated."""
    return np.result_type(*map(_dtype_of, arrays_and_dtypes))


def can_cast(from_, to, casting="safe") -> bool:
    """Whether ``from_`` (an array or a dtype) casts to ``to`` under
    ``casting`` (``np.can_cast``); nothing is evaluated."""
    return np.can_cast(_dtype_of(from_), to, casting)


def finfo(dtype):
    """Machine limits of a float dtype, or of an array's dtype (``np.finfo``)."""
    return np.finfo(_dtype_of(dtype))


def iinfo(int_type):
    """Machine limits of an integer dtype, or of an array's dtype (``np.iinfo``)."""
    return np.iinfo(_dtype_of(int_type))


isdtype = np.isdtype


# -- complex parts of real arrays, and DLPack (the array API) -----------------

def _real_only(x, what):
    x = x if isinstance(x, Array) else Array(C.as_node(x))
    if x.dtype.kind == "c":     # pragma: no cover  (no complex dtype is accepted)
        raise TypeError(f"{what}: polyarray has no complex dtypes")
    return x


def conj(x) -> Array:
    """``np.conj``: polyarray has no complex dtypes, so ``x`` itself."""
    return _real_only(x, "conj")


conjugate = conj


def real(val) -> Array:
    """``np.real``: polyarray has no complex dtypes, so ``val`` itself."""
    return _real_only(val, "real")


def imag(val) -> Array:
    """``np.imag``: polyarray has no complex dtypes, so zeros like ``val``."""
    return Array(C.zeros_like(_real_only(val, "imag").node))
