"""The ``pa.*`` functions: each unwraps its array arguments (``pa.Array`` ->
node), calls the node builder of the same name in :mod:`polyarray.ops` and
wraps the result in an ``Array``.  NumPy's rules and errors live in the
builders; this module only decides which arguments are arrays."""
from __future__ import annotations

import numpy as np

from .array import Array, _same_or_new, node_of
from .ops import creation as C, eager as G, elementwise as E, indexing as I, linalg as L
from .ops import reductions as R, shapes as S, ufuncs as F
from .ops.axes import no_out
from .ops.reductions import NoValue
from .ops.elementwise import BINARY, UNARY, broadcast_shapes       # noqa: F401
from .ops.indexing import NonConcreteBooleanIndexError              # noqa: F401

# -- creation ----------------------------------------------------------------


def array(object, dtype=None, *, copy=True, order="K", ndmin=0) -> Array:   # noqa: A002
    """A leaf holding a copy of ``object``'s data (like ``np.array``);
    ``copy`` and ``order`` are accepted (data leaves are private C-order
    copies), ``ndmin`` prepends axes of length one."""
    if isinstance(object, Array):
        out = object if dtype is None else object.astype(dtype)
    else:
        out = Array(C.array(object, dtype))
    if out.ndim < ndmin:
        out = out.reshape((1,) * (ndmin - out.ndim) + out.shape)
    return out


def asarray(a, dtype=None, order=None, *, copy=None, device=None) -> Array:
    """Like ``array``, but returns polyarray arrays unchanged, and reads
    another library's CUDA array (CuPy, torch, JAX, ...) in place: a
    device-resident leaf that sees later in-place changes to it."""
    from polyarray.targets.foreign import is_foreign_cuda
    if not isinstance(a, Array) and is_foreign_cuda(a):
        leaf = Array(C.device_leaf(a))
        return leaf if dtype is None else leaf.astype(dtype)
    return array(a, dtype)


def placeholder(name: str, shape, dtype=np.float64) -> Array:
    """A named input whose value is bound when the program is called."""
    return Array(C.placeholder(name, shape, dtype))


# ``order`` (memory layout) is accepted and means nothing for a lazy array

def full(shape, fill_value, dtype=None, order="C", *, device=None) -> Array:
    return Array(C.full(shape, node_of(fill_value), dtype))


def zeros(shape, dtype=np.float64, order="C", *, device=None) -> Array:
    return Array(C.zeros(shape, dtype))


def ones(shape, dtype=np.float64, order="C", *, device=None) -> Array:
    return Array(C.ones(shape, dtype))


def empty(shape, dtype=np.float64, order="C", *, device=None) -> Array:
    """Lazy arrays are never uninitialized: ``empty`` is ``zeros``."""
    return Array(C.empty(shape, dtype))


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None) -> Array:
    return Array(C.zeros_like(node_of(a), dtype, shape))


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None) -> Array:
    return Array(C.ones_like(node_of(a), dtype, shape))


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *,
              device=None) -> Array:
    return Array(C.full_like(node_of(a), node_of(fill_value), dtype, shape))


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *,
               device=None) -> Array:
    return Array(C.empty_like(node_of(prototype), dtype, shape))


def arange(start, stop=None, step=None, dtype=None, *, device=None) -> Array:
    """``np.arange``, element for element (see ``polyarray.ops.creation``)."""
    return Array(C.arange(node_of(start), node_of(stop), node_of(step), dtype))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """``np.linspace`` of scalar bounds (so ``axis`` can only be 0 or -1);
    ``retstep=True`` also returns the step, as NumPy's."""
    from .ops.axes import normalize_axis_index
    normalize_axis_index(axis, 1)
    out = Array(C.linspace(start, stop, num, endpoint, dtype))
    if retstep:
        div = (num - 1) if endpoint else num
        return out, ((stop - start) / div if div > 0 else np.nan)
    return out


def eye(N, M=None, k=0, dtype=np.float64, order="C", *, device=None) -> Array:
    return Array(C.eye(N, M, k, dtype))


# -- elementwise -------------------------------------------------------------

def _unary(name):
    def f(x, /, out=None, *, where=True, dtype=None):
        return Array(F.ufunc_node(name, (node_of(x),), out, where, dtype))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``np.{name}``."
    return f


def _binary(name):
    def f(x1, x2, /, out=None, *, where=True, dtype=None):
        return Array(F.ufunc_node(name, (node_of(x1), node_of(x2)), out, where, dtype))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise ``np.{name}`` with broadcasting."
    return f


globals().update({n: _unary(n) for n in UNARY})
globals().update({n: _binary(n) for n in BINARY})
abs = absolute          # noqa: A001,F821  (NumPy's names)
true_divide = divide    # noqa: F821


def astype(x, dtype, /, *, copy=True, device=None) -> Array:
    """``np.astype`` (array API): ``copy`` is accepted; a lazy array is
    never written in place, so a copy and a view mean the same."""
    return Array(E.astype(node_of(x), dtype))


def _evaluate(node):
    return Array(node).evaluate()


def where(condition, x=NoValue, y=NoValue) -> Array:
    """``np.where(condition, x, y)``: picks elementwise, dtype by NEP 50.
    ``np.where(condition)`` is ``nonzero(condition)``, which is eager (see
    ``polyarray.ops.eager``)."""
    if x is NoValue and y is NoValue:
        values = G.concrete(node_of(condition), "where(condition)", _evaluate)
        return tuple(Array(n) for n in G.nonzero(values))
    if x is NoValue or y is NoValue:
        raise ValueError("either both or neither of x and y should be given")
    return Array(E.where(node_of(condition), node_of(x), node_of(y)))


def clip(a, a_min=NoValue, a_max=NoValue, out=None, *, min=NoValue,   # noqa: A002
         max=NoValue, **kwargs) -> Array:                              # noqa: A002
    """``np.clip``: ``minimum(maximum(a, a_min), a_max)``; NaN propagates.
    ``min``/``max`` are NumPy 2.1's (and the array API's) spellings."""
    no_out(out, "clip")
    if kwargs:
        raise TypeError(f"clip: unsupported keyword arguments {sorted(kwargs)}")
    if (a_min is not NoValue or a_max is not NoValue) and \
            (min is not NoValue or max is not NoValue):
        raise ValueError("Passing `min` or `max` keyword argument when `a_min` and "
                         "`a_max` are provided is forbidden.")
    lo = a_min if a_min is not NoValue else (None if min is NoValue else min)
    hi = a_max if a_max is not NoValue else (None if max is NoValue else max)
    return _same_or_new(a, E.clip(node_of(a), node_of(lo), node_of(hi)))


def round(a, decimals=0, out=None) -> Array:      # noqa: A001
    """``np.round``: half to even; ``decimals`` scales by powers of ten."""
    no_out(out, "round")
    return _same_or_new(a, E.round(node_of(a), decimals))


around = round


# -- reductions --------------------------------------------------------------
# NumPy's signatures and positional order; ``out`` must be None (see no_out)

def sum(a, axis=None, dtype=None, out=None, keepdims=False,     # noqa: A001
        initial=NoValue, where=True) -> Array:
    no_out(out, "sum")
    return Array(R.sum(node_of(a), axis, dtype, keepdims, initial, node_of(where)))


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue,
         where=True) -> Array:
    no_out(out, "prod")
    return Array(R.prod(node_of(a), axis, dtype, keepdims, initial, node_of(where)))


def max(a, axis=None, out=None, keepdims=False, initial=NoValue,   # noqa: A001
        where=True) -> Array:
    no_out(out, "max")
    return Array(R.max(node_of(a), axis, keepdims, initial, node_of(where)))


def min(a, axis=None, out=None, keepdims=False, initial=NoValue,   # noqa: A001
        where=True) -> Array:
    no_out(out, "min")
    return Array(R.min(node_of(a), axis, keepdims, initial, node_of(where)))


def any(a, axis=None, out=None, keepdims=False, *, where=True) -> Array:    # noqa: A001
    no_out(out, "any")
    return Array(R.any(node_of(a), axis, keepdims, node_of(where)))


def all(a, axis=None, out=None, keepdims=False, *, where=True) -> Array:    # noqa: A001
    no_out(out, "all")
    return Array(R.all(node_of(a), axis, keepdims, node_of(where)))


amax, amin = max, min


def argmax(a, axis=None, out=None, *, keepdims=False) -> Array:
    no_out(out, "argmax")
    return Array(R.argmax(node_of(a), axis, keepdims))


def argmin(a, axis=None, out=None, *, keepdims=False) -> Array:
    no_out(out, "argmin")
    return Array(R.argmin(node_of(a), axis, keepdims))


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True) -> Array:
    no_out(out, "mean")
    return Array(R.mean(node_of(a), axis, dtype, keepdims, node_of(where)))


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
        correction=NoValue) -> Array:
    no_out(out, "var")
    return Array(R.var(node_of(a), axis, dtype, ddof, keepdims, node_of(where), correction))


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
        correction=NoValue) -> Array:
    no_out(out, "std")
    return Array(R.std(node_of(a), axis, dtype, ddof, keepdims, node_of(where), correction))


# -- linear algebra ----------------------------------------------------------

def einsum(subscripts, /, *operands, out=None, dtype=None, order="K", casting="safe",
           optimize=False) -> Array:
    """``np.einsum``, ``...`` broadcasting included; ``optimize`` is accepted
    and ignored (polyarray schedules contractions itself)."""
    no_out(out, "einsum")
    return Array(L.einsum(node_of(subscripts), *map(node_of, operands), dtype=dtype,
                          casting=casting))


def tensordot(a, b, axes=2) -> Array:
    return Array(L.tensordot(node_of(a), node_of(b), axes))


def dot(a, b, out=None) -> Array:
    no_out(out, "dot")
    return Array(L.dot(node_of(a), node_of(b)))


def matmul(x1, x2, /, out=None) -> Array:
    no_out(out, "matmul")
    return Array(L.matmul(node_of(x1), node_of(x2)))


def vdot(a, b) -> Array:
    return Array(L.vdot(node_of(a), node_of(b)))


def inner(a, b) -> Array:
    return Array(L.inner(node_of(a), node_of(b)))


def outer(a, b, out=None) -> Array:
    no_out(out, "outer")
    return Array(L.outer(node_of(a), node_of(b)))


# -- shapes ------------------------------------------------------------------

def transpose(a, axes=None) -> Array:
    return Array(S.transpose(node_of(a), axes))


def permute_dims(a, axes) -> Array:
    return Array(S.permute_dims(node_of(a), axes))


def matrix_transpose(x) -> Array:
    return Array(S.matrix_transpose(node_of(x)))


def moveaxis(a, source, destination) -> Array:
    return Array(S.moveaxis(node_of(a), source, destination))


def swapaxes(a, axis1, axis2) -> Array:
    return Array(S.swapaxes(node_of(a), axis1, axis2))


def broadcast_to(array, shape) -> Array:
    return Array(S.broadcast_to(node_of(array), shape))


def broadcast_arrays(*arrays) -> list:
    return [Array(n) for n in S.broadcast_arrays(*map(node_of, arrays))]


def expand_dims(a, axis) -> Array:
    return Array(S.expand_dims(node_of(a), axis))


def squeeze(a, axis=None) -> Array:
    return Array(S.squeeze(node_of(a), axis))


def flip(m, axis=None) -> Array:
    return Array(S.flip(node_of(m), axis))


def reshape(a, /, shape=None, order="C", *, newshape=None, copy=None) -> Array:
    """``np.reshape`` (NumPy 2.1's signature; ``copy`` is accepted: a lazy
    reshape never shares memory that could be written)."""
    if newshape is not None:
        if shape is not None:
            raise TypeError("You cannot specify 'newshape' and 'shape' arguments at the "
                            "same time.")
        shape = newshape
    if shape is None:
        raise TypeError("reshape() missing 1 required positional argument: 'shape'")
    return Array(S.reshape(node_of(a), shape, "C" if order == "A" else order))


def ravel(a, order="C") -> Array:
    return Array(S.ravel(node_of(a), order))


def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind") -> Array:
    no_out(out, "concatenate")
    return Array(S.concatenate([node_of(a) for a in arrays], axis, dtype, casting))


def concat(arrays, /, *, axis=0) -> Array:
    """The array API's ``concatenate``."""
    return concatenate(arrays, axis)


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind") -> Array:
    no_out(out, "stack")
    return Array(S.stack([node_of(a) for a in arrays], axis, dtype, casting))


# -- indexing ----------------------------------------------------------------

def take(a, indices, axis=None, out=None, mode="raise") -> Array:
    """``np.take``: elements of ``a`` (flattened when ``axis`` is None) at
    ``indices`` along ``axis``.  ``mode="raise"`` (NumPy's default) raises
    IndexError for an index out of range, when the program runs if the
    indices are lazy; ``"wrap"`` wraps them around and ``"clip"`` clips them
    (negative ones to 0, as NumPy does), with no run-time check."""
    no_out(out, "take")
    return Array(I.take(node_of(a), node_of(indices), axis, mode))
