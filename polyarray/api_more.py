"""More ``pa.*`` functions under NumPy's names and signatures (and the array
API's): each unwraps its arrays, calls the node builder in
:mod:`polyarray.ops` and wraps the result, as :mod:`polyarray.api` does.
``out=`` is accepted where NumPy has it, and must be None.

``unique``, ``nonzero``, ``argwhere`` and ``flatnonzero`` are eager: the
shape of their result depends on the values, so they evaluate their input
when called (:mod:`polyarray.ops.eager`)."""
from __future__ import annotations

import numpy as np

from .array import Array, node_of
from .ops import arrange as AR, eager as G, indexing as I, matrices as M, padding as P
from .ops import reductions as R, statistics as T, ufuncs as F
from .ops.axes import no_out
from .ops.reductions import NoValue


def _wrap(result):
    """A node, or a (named) tuple of nodes, as Arrays."""
    if isinstance(result, tuple):
        items = [_wrap(r) for r in result]
        return type(result)(*items) if hasattr(result, "_fields") else tuple(items)
    return Array(result)


def _ufunc(name, fn, nin):
    """A composed ufunc with NumPy's call signature (``out`` must be None)."""
    if nin == 1:
        def f(x, /, out=None, *, where=True, dtype=None):
            return Array(F.ufunc_node(name, (node_of(x),), out, where, dtype, fn))
    else:
        def f(x1, x2, /, out=None, *, where=True, dtype=None):
            return Array(F.ufunc_node(name, (node_of(x1), node_of(x2)), out, where, dtype,
                                      fn))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``np.{name}``, composed of ops every target lowers."
    return f


_UNARY = {"signbit": F.signbit, "deg2rad": F.deg2rad, "rad2deg": F.rad2deg,
          "radians": F.radians, "degrees": F.degrees, "reciprocal": F.reciprocal,
          "cbrt": F.cbrt, "exp2": F.exp2}
_BINARY = {"hypot": F.hypot, "copysign": F.copysign, "logaddexp": F.logaddexp,
           "fmax": F.fmax, "fmin": F.fmin, "heaviside": F.heaviside,
           "float_power": F.float_power, "left_shift": F.left_shift,
           "right_shift": F.right_shift}
globals().update({n: _ufunc(n, fn, 1) for n, fn in _UNARY.items()})
globals().update({n: _ufunc(n, fn, 2) for n, fn in _BINARY.items()})
bitwise_left_shift, bitwise_right_shift = left_shift, right_shift   # noqa: F821


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None) -> Array:
    return Array(F.nan_to_num(node_of(x), copy, nan, posinf, neginf))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> Array:
    return Array(F.isclose(node_of(a), node_of(b), rtol, atol, equal_nan))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> Array:
    """A lazy 0-d bool (``bool()`` of it needs its value: evaluate it)."""
    return Array(R.all(F.isclose(node_of(a), node_of(b), rtol, atol, equal_nan)))


# -- rearranging -------------------------------------------------------------

def _atleast(n, arys):
    res = tuple(Array(AR.atleast_nd(node_of(a), n)) for a in arys)
    return res[0] if len(res) == 1 else res


def atleast_1d(*arys):
    return _atleast(1, arys)


def atleast_2d(*arys):
    return _atleast(2, arys)


def atleast_3d(*arys):
    return _atleast(3, arys)


def _nodes(tup):
    return [node_of(a) for a in tup] if isinstance(tup, (list, tuple)) else node_of(tup)


def hstack(tup, *, dtype=None, casting="same_kind") -> Array:
    return Array(AR.hstack(_nodes(tup), dtype, casting))


def vstack(tup, *, dtype=None, casting="same_kind") -> Array:
    return Array(AR.vstack(_nodes(tup), dtype, casting))


def dstack(tup) -> Array:
    return Array(AR.dstack(_nodes(tup)))


def column_stack(tup) -> Array:
    return Array(AR.column_stack(_nodes(tup)))


def unstack(x, /, *, axis=0) -> tuple:
    return _wrap(AR.unstack(node_of(x), axis))


def meshgrid(*xi, copy=True, sparse=False, indexing="xy") -> tuple:
    return _wrap(AR.meshgrid(*map(node_of, xi), sparse=sparse, indexing=indexing))


def tile(A, reps) -> Array:
    return Array(AR.tile(node_of(A), reps))


def repeat(a, repeats, axis=None) -> Array:
    return Array(AR.repeat(node_of(a), node_of(repeats), axis))


def kron(a, b) -> Array:
    return Array(AR.kron(node_of(a), node_of(b)))


def roll(a, shift, axis=None) -> Array:
    return Array(AR.roll(node_of(a), shift, axis))


def diff(a, n=1, axis=-1, prepend=NoValue, append=NoValue) -> Array:
    return Array(AR.diff(node_of(a), n, axis, node_of(prepend), node_of(append)))


def pad(array, pad_width, mode="constant", **kwargs) -> Array:
    return Array(P.pad(node_of(array), pad_width, mode, **kwargs))


def take_along_axis(arr, indices, axis=-1) -> Array:
    return Array(I.take_along_axis(node_of(arr), node_of(indices), axis))


# -- matrices ----------------------------------------------------------------

def diag(v, k=0) -> Array:
    return Array(M.diag(node_of(v), k))


def diagonal(a, offset=0, axis1=0, axis2=1) -> Array:
    return Array(M.diagonal(node_of(a), offset, axis1, axis2))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None) -> Array:
    no_out(out, "trace")
    return Array(M.trace(node_of(a), offset, axis1, axis2, dtype))


def tril(m, k=0) -> Array:
    return Array(M.tril(node_of(m), k))


def triu(m, k=0) -> Array:
    return Array(M.triu(node_of(m), k))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None) -> Array:
    return Array(M.cross(node_of(a), node_of(b), axisa, axisb, axisc, axis))


def vecdot(x1, x2, /, out=None, *, axis=-1) -> Array:
    no_out(out, "vecdot")
    return Array(M.vecdot(node_of(x1), node_of(x2), axis))


# -- statistics --------------------------------------------------------------

def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue,
           where=True) -> Array:
    no_out(out, "nansum")
    return Array(T.nansum(node_of(a), axis, dtype, keepdims, initial, node_of(where)))


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue,
            where=True) -> Array:
    no_out(out, "nanprod")
    return Array(T.nanprod(node_of(a), axis, dtype, keepdims, initial, node_of(where)))


def nanmax(a, axis=None, out=None, keepdims=False, initial=NoValue, where=True) -> Array:
    no_out(out, "nanmax")
    return Array(T.nanmax(node_of(a), axis, keepdims, initial, node_of(where)))


def nanmin(a, axis=None, out=None, keepdims=False, initial=NoValue, where=True) -> Array:
    no_out(out, "nanmin")
    return Array(T.nanmin(node_of(a), axis, keepdims, initial, node_of(where)))


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True) -> Array:
    no_out(out, "nanmean")
    return Array(T.nanmean(node_of(a), axis, dtype, keepdims, node_of(where)))


def ptp(a, axis=None, out=None, keepdims=False) -> Array:
    no_out(out, "ptp")
    return Array(T.ptp(node_of(a), axis, keepdims))


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    return _wrap(T.average(node_of(a), axis, node_of(weights), returned, keepdims))


def count_nonzero(a, axis=None, *, keepdims=False) -> Array:
    """Lazy, an int64 array (NumPy returns a Python int when ``axis`` is None)."""
    return Array(R.count_nonzero(node_of(a), axis, keepdims))


# -- eager: the result's shape depends on the values ------------------------

def _evaluate(node):
    return Array(node).evaluate()


def _values(a, what):
    return G.concrete(node_of(a), what, _evaluate)


def nonzero(a) -> tuple:
    """Eager (see the module docstring): a tuple of int64 data arrays."""
    return _wrap(G.nonzero(_values(a, "nonzero")))


def argwhere(a) -> Array:
    return _wrap(G.argwhere(_values(a, "argwhere")))


def flatnonzero(a) -> Array:
    return _wrap(G.flatnonzero(_values(a, "flatnonzero")))


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True, **kwargs):
    """Eager (see the module docstring): NumPy's ``unique`` of the values."""
    return _wrap(G.unique(_values(ar, "unique"), return_index, return_inverse, return_counts,
                          axis, equal_nan=equal_nan, **kwargs))


def unique_values(x):
    return _wrap(G.unique_family("unique_values", _values(x, "unique_values")))


def unique_counts(x):
    return _wrap(G.unique_family("unique_counts", _values(x, "unique_counts")))


def unique_inverse(x):
    return _wrap(G.unique_family("unique_inverse", _values(x, "unique_inverse")))


def unique_all(x):
    return _wrap(G.unique_family("unique_all", _values(x, "unique_all")))


# -- dtypes (the array API's inspection functions) ---------------------------

def _dtype_of(x):
    return x.dtype if isinstance(x, Array) else x


def result_type(*arrays_and_dtypes) -> np.dtype:
    """NumPy's promotion; Python scalars stay weak (NEP 50)."""
    return np.result_type(*map(_dtype_of, arrays_and_dtypes))


def can_cast(from_, to, casting="safe") -> bool:
    return np.can_cast(_dtype_of(from_), to, casting)


def finfo(dtype):
    return np.finfo(_dtype_of(dtype))


def iinfo(int_type):
    return np.iinfo(_dtype_of(int_type))


isdtype = np.isdtype
