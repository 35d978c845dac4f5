"""The ``pa.*`` functions: each unwraps its array arguments (``pa.Array`` ->
node), calls the node builder of the same name in :mod:`polyarray.ops` and
wraps the result in an ``Array``.  NumPy's rules and errors live in the
builders; this module only decides which arguments are arrays."""
from __future__ import annotations

import numpy as np

from .array import Array, _same_or_new, node_of
from .ops import creation as C, elementwise as E, indexing as I, linalg as L
from .ops import reductions as R, shapes as S
from .ops.elementwise import BINARY, UNARY, broadcast_shapes       # noqa: F401
from .ops.indexing import NonConcreteBooleanIndexError              # noqa: F401

# -- creation ----------------------------------------------------------------


def array(obj, dtype=None) -> Array:
    """A leaf holding a copy of ``obj``'s data (like ``np.array``)."""
    if isinstance(obj, Array):
        return obj if dtype is None else obj.astype(dtype)
    return Array(C.array(obj, dtype))


def asarray(obj, dtype=None) -> Array:
    """Like ``array``, but returns polyarray arrays unchanged, and reads
    another library's CUDA array (CuPy, torch, JAX, ...) in place: a
    device-resident leaf that sees later in-place changes to it."""
    from polyarray.targets.foreign import is_foreign_cuda
    if not isinstance(obj, Array) and is_foreign_cuda(obj):
        leaf = Array(C.device_leaf(obj))
        return leaf if dtype is None else leaf.astype(dtype)
    return array(obj, dtype)


def placeholder(name: str, shape, dtype=np.float64) -> Array:
    """A named input whose value is bound when the program is called."""
    return Array(C.placeholder(name, shape, dtype))


def full(shape, fill_value, dtype=None) -> Array:
    return Array(C.full(shape, node_of(fill_value), dtype))


def zeros(shape, dtype=np.float64) -> Array:
    return Array(C.zeros(shape, dtype))


def ones(shape, dtype=np.float64) -> Array:
    return Array(C.ones(shape, dtype))


def empty(shape, dtype=np.float64) -> Array:
    """Lazy arrays are never uninitialized: ``empty`` is ``zeros``."""
    return Array(C.empty(shape, dtype))


def zeros_like(a, dtype=None, shape=None) -> Array:
    return Array(C.zeros_like(node_of(a), dtype, shape))


def ones_like(a, dtype=None, shape=None) -> Array:
    return Array(C.ones_like(node_of(a), dtype, shape))


def full_like(a, fill_value, dtype=None, shape=None) -> Array:
    return Array(C.full_like(node_of(a), node_of(fill_value), dtype, shape))


def empty_like(a, dtype=None, shape=None) -> Array:
    return Array(C.empty_like(node_of(a), dtype, shape))


def arange(start, stop=None, step=None, dtype=None) -> Array:
    """``np.arange``, element for element (see ``polyarray.ops.creation``)."""
    return Array(C.arange(node_of(start), node_of(stop), node_of(step), dtype))


def linspace(start, stop, num=50, endpoint=True, dtype=None) -> Array:
    return Array(C.linspace(start, stop, num, endpoint, dtype))


def eye(N_, M=None, k=0, dtype=np.float64) -> Array:
    return Array(C.eye(N_, M, k, dtype))


# -- elementwise -------------------------------------------------------------

def _unary(name):
    def f(x):
        return Array(E.apply_ufunc(name, node_of(x)))
    f.__name__ = name
    f.__doc__ = f"Elementwise ``np.{name}``."
    return f


def _binary(name):
    def f(x1, x2):
        return Array(E.apply_ufunc(name, node_of(x1), node_of(x2)))
    f.__name__ = name
    f.__doc__ = f"Elementwise ``np.{name}`` with broadcasting."
    return f


globals().update({n: _unary(n) for n in UNARY})
globals().update({n: _binary(n) for n in BINARY})
abs = absolute          # noqa: A001,F821  (NumPy's names)
true_divide = divide    # noqa: F821


def astype(x, dtype) -> Array:
    return Array(E.astype(node_of(x), dtype))


def where(condition, x, y) -> Array:
    """``np.where(condition, x, y)``: picks elementwise, dtype by NEP 50."""
    return Array(E.where(node_of(condition), node_of(x), node_of(y)))


def clip(a, a_min=None, a_max=None) -> Array:
    """``np.clip``: ``minimum(maximum(a, a_min), a_max)``; NaN propagates."""
    return _same_or_new(a, E.clip(node_of(a), node_of(a_min), node_of(a_max)))


def round(x, decimals=0) -> Array:      # noqa: A001
    """``np.round``: half to even; ``decimals`` scales by powers of ten."""
    return _same_or_new(x, E.round(node_of(x), decimals))


around = round


# -- reductions --------------------------------------------------------------

def sum(x, axis=None, keepdims=False, dtype=None) -> Array:   # noqa: A001
    return Array(R.sum(node_of(x), axis, keepdims, dtype))


def prod(x, axis=None, keepdims=False, dtype=None) -> Array:
    return Array(R.prod(node_of(x), axis, keepdims, dtype))


def max(x, axis=None, keepdims=False) -> Array:    # noqa: A001
    return Array(R.max(node_of(x), axis, keepdims))


def min(x, axis=None, keepdims=False) -> Array:    # noqa: A001
    return Array(R.min(node_of(x), axis, keepdims))


def any(x, axis=None, keepdims=False) -> Array:    # noqa: A001
    return Array(R.any(node_of(x), axis, keepdims))


def all(x, axis=None, keepdims=False) -> Array:    # noqa: A001
    return Array(R.all(node_of(x), axis, keepdims))


amax, amin = max, min


def argmax(x, axis=None) -> Array:
    return Array(R.argmax(node_of(x), axis))


def argmin(x, axis=None) -> Array:
    return Array(R.argmin(node_of(x), axis))


def mean(x, axis=None, keepdims=False, dtype=None) -> Array:
    return Array(R.mean(node_of(x), axis, keepdims, dtype))


def var(x, axis=None, keepdims=False, ddof=0) -> Array:
    return Array(R.var(node_of(x), axis, keepdims, ddof))


def std(x, axis=None, keepdims=False, ddof=0) -> Array:
    return Array(R.std(node_of(x), axis, keepdims, ddof))


# -- linear algebra ----------------------------------------------------------

def einsum(subscripts: str, *operands) -> Array:
    return Array(L.einsum(subscripts, *map(node_of, operands)))


def tensordot(a, b, axes=2) -> Array:
    return Array(L.tensordot(node_of(a), node_of(b), axes))


def dot(a, b) -> Array:
    return Array(L.dot(node_of(a), node_of(b)))


def matmul(a, b) -> Array:
    return Array(L.matmul(node_of(a), node_of(b)))


def vdot(a, b) -> Array:
    return Array(L.vdot(node_of(a), node_of(b)))


def inner(a, b) -> Array:
    return Array(L.inner(node_of(a), node_of(b)))


def outer(a, b) -> Array:
    return Array(L.outer(node_of(a), node_of(b)))


# -- shapes ------------------------------------------------------------------

def transpose(x, axes=None) -> Array:
    return Array(S.transpose(node_of(x), axes))


def permute_dims(x, axes) -> Array:
    return Array(S.permute_dims(node_of(x), axes))


def matrix_transpose(x) -> Array:
    return Array(S.matrix_transpose(node_of(x)))


def moveaxis(x, source, destination) -> Array:
    return Array(S.moveaxis(node_of(x), source, destination))


def swapaxes(x, axis1, axis2) -> Array:
    return Array(S.swapaxes(node_of(x), axis1, axis2))


def broadcast_to(x, shape) -> Array:
    return Array(S.broadcast_to(node_of(x), shape))


def broadcast_arrays(*arrays) -> list:
    return [Array(n) for n in S.broadcast_arrays(*map(node_of, arrays))]


def expand_dims(x, axis) -> Array:
    return Array(S.expand_dims(node_of(x), axis))


def squeeze(x, axis=None) -> Array:
    return Array(S.squeeze(node_of(x), axis))


def flip(x, axis=None) -> Array:
    return Array(S.flip(node_of(x), axis))


def reshape(x, shape, order="C") -> Array:
    return Array(S.reshape(node_of(x), shape, order))


def ravel(x) -> Array:
    return Array(S.ravel(node_of(x)))


def concatenate(arrays, axis=0) -> Array:
    return Array(S.concatenate([node_of(a) for a in arrays], axis))


def stack(arrays, axis=0) -> Array:
    return Array(S.stack([node_of(a) for a in arrays], axis))


# -- indexing ----------------------------------------------------------------

def take(a, indices, axis=None, mode="raise") -> Array:
    """``np.take``: elements of ``a`` (flattened when ``axis`` is None) at
    ``indices`` along ``axis``.  ``mode="raise"`` (NumPy's default) raises
    IndexError for an index out of range, when the program runs if the
    indices are lazy; ``"wrap"`` wraps them around and ``"clip"`` clips them
    (negative ones to 0, as NumPy does), with no run-time check."""
    return Array(I.take(node_of(a), node_of(indices), axis, mode))
