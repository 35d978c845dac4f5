"""The ``pa.*`` functions of creation, elementwise maths and linear algebra:
each unwraps its array arguments (``pa.Array`` -> node), calls the node
builder of the same name in :mod:`polyarray.ops` and wraps the result in an
``Array``.  NumPy's rules and errors live in the builders; this module only
decides which arguments are arrays.  Reductions are in ``api_reductions``,
shapes and indexing in ``api_shapes``, the rest of NumPy's names in
``api_more``."""
from __future__ import annotations

import numpy as np

from .array import Array, _same_or_new, is_scalar, node_of, mark_array_0d, ufunc_into
from .ufunc import ufunc
from .ops import creation as C, eager as G, elementwise as E, linalg as L
from .ops import shapes as S, ufuncs as F
from .ops.axes import no_out
from .ops.reductions import NoValue
from .ops.elementwise import BINARY, UNARY, broadcast_shapes       # noqa: F401

# -- creation ----------------------------------------------------------------


def array(object, dtype=None, *, copy=True, order="K", ndmin=0) -> Array:   # noqa: A002
    """An array holding a copy of ``object``'s data (``np.array``).

    The data is copied now, so later changes to ``object`` are not seen.
    ``copy`` and ``order`` are accepted and mean nothing (data leaves are
    private C-order copies); ``ndmin`` prepends axes of length one.  A
    polyarray array gives a new handle of the same expression (cast when
    ``dtype`` is given), which ``x[i] = v`` rebinds alone.  Complex dtypes
    are refused."""
    if isinstance(object, Array):
        out = Array(object.node) if dtype is None else Array(object.astype(dtype).node)
    elif isinstance(object, (list, tuple)) and _holds_arrays(object):
        out = Array(_nested(object, dtype))
    else:
        out = Array(C.array(object, dtype))
    if out.ndim < ndmin:
        out = Array(out.reshape((1,) * (ndmin - out.ndim) + out.shape).node)
    return _made(out)


def _holds_arrays(obj) -> bool:
    return any(isinstance(o, Array) or (isinstance(o, (list, tuple)) and _holds_arrays(o))
               for o in obj)


def _nested(obj, dtype):
    """A (nested) list holding lazy arrays as one node: the items stacked, in
    the dtype ``np.array`` gives such a list (every item's dtype, Python
    scalars as NumPy's default types, not weak)."""
    def leaves(o):
        if isinstance(o, Array):
            return o.node
        if isinstance(o, (list, tuple)):
            return [leaves(i) for i in o]
        return C.array(o)

    def dtypes(o):
        if isinstance(o, list):
            for i in o:
                yield from dtypes(i)
        else:
            yield o.dtype
    tree = leaves(obj)
    to = np.dtype(dtype) if dtype is not None else np.result_type(*dtypes(tree))

    def build(o):
        if isinstance(o, list):
            return S.stack([build(i) for i in o], 0, to, "unsafe")
        return E.astype(o, to)
    return build(tree)


def _made(out: Array) -> Array:
    """A created array: a 0-d one is an array (``+=`` writes it), as
    NumPy's ``np.zeros(())``, not a scalar."""
    return mark_array_0d(out) if not out.shape else out


def asarray(a, dtype=None, order=None, *, copy=None, device=None) -> Array:
    """``a`` as a polyarray array (``np.asarray``).

    Host data is copied as by ``pa.array``; a polyarray array is returned
    unchanged.  Another library's CUDA array (CuPy, torch, JAX, ...) is read
    in place, without a copy: a device-resident leaf that sees later
    in-place changes to it.  pyopencl arrays are not accepted here (bind them
    to a placeholder of an OpenCL program, or pass ``.get()``)."""
    from polyarray.targets.foreign import is_foreign_cuda
    if not isinstance(a, Array) and is_foreign_cuda(a):
        leaf = Array(C.device_leaf(a))
        return leaf if dtype is None else leaf.astype(dtype)
    if isinstance(a, Array) and dtype is None:
        # the same handle, as NumPy's asarray; a scalar becomes a 0-d array
        return a if not is_scalar(a) else _made(Array(a.node))
    return array(a, dtype)


def placeholder(name: str, shape, dtype=np.float64) -> Array:
    """A named input of ``shape`` and ``dtype``, bound when the program runs.

    No NumPy equivalent: the value is passed to the compiled program
    (``pa.compile(out)(name=value)``) and must have exactly this shape and
    dtype (NumPy arrays are not cast; Python scalars and lists are converted
    when no value changes).  ``name`` must be a Python identifier, unique in
    a program; ``"out"`` is reserved."""
    return Array(C.placeholder(name, shape, dtype))


# ``order`` (memory layout) is accepted and means nothing for a lazy array

def full(shape, fill_value, dtype=None, order="C", *, device=None) -> Array:
    """An array of ``shape`` filled with ``fill_value`` (``np.full``).

    A lazy constant (computed where it is used, never uploaded); an array
    ``fill_value`` is broadcast to ``shape``, as NumPy does.  ``dtype``
    defaults to NumPy's dtype for it."""
    if not isinstance(fill_value, Array) and np.ndim(fill_value):
        fill = Array(C.array(fill_value, dtype))
        return _made(Array(S.broadcast_to(fill.node, C._normalize_shape(shape))))
    return _made(Array(C.full(shape, node_of(fill_value), dtype)))


def zeros(shape, dtype=np.float64, order="C", *, device=None) -> Array:
    """An array of ``shape`` filled with zeros (``np.zeros``), as a lazy constant."""
    return _made(Array(C.zeros(shape, dtype)))


def ones(shape, dtype=np.float64, order="C", *, device=None) -> Array:
    """An array of ``shape`` filled with ones (``np.ones``), as a lazy constant."""
    return _made(Array(C.ones(shape, dtype)))


def empty(shape, dtype=np.float64, order="C", *, device=None) -> Array:
    """An array of ``shape`` (``np.empty``): zeros, since lazy arrays are
    never uninitialized."""
    return _made(Array(C.empty(shape, dtype)))


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None) -> Array:
    """Zeros with the shape and dtype of ``a`` (``np.zeros_like``); ``a`` is
    not evaluated."""
    return _made(Array(C.zeros_like(node_of(a), dtype, shape)))


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None) -> Array:
    """Ones with the shape and dtype of ``a`` (``np.ones_like``); ``a`` is
    not evaluated."""
    return _made(Array(C.ones_like(node_of(a), dtype, shape)))


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *,
              device=None) -> Array:
    """``fill_value`` (a scalar) with the shape and dtype of ``a``
    (``np.full_like``); ``a`` is not evaluated."""
    return _made(Array(C.full_like(node_of(a), node_of(fill_value), dtype, shape)))


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *,
               device=None) -> Array:
    """An array with the shape and dtype of ``prototype`` (``np.empty_like``):
    zeros, since lazy arrays are never uninitialized."""
    return _made(Array(C.empty_like(node_of(prototype), dtype, shape)))


def arange(start, stop=None, step=None, dtype=None, *, device=None) -> Array:
    """Evenly spaced values in ``[start, stop)`` (``np.arange``).

    A lazy constant equal to NumPy's element for element (same dtype rule,
    same rounding).  The bounds must be scalars, not lazy arrays."""
    return Array(C.arange(node_of(start), node_of(stop), node_of(step), dtype))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """``num`` evenly spaced values over ``[start, stop]`` (``np.linspace``).

    A lazy constant.  The bounds must be scalars (NumPy also takes arrays),
    so ``axis`` can only be 0 or -1; ``retstep=True`` also returns the step,
    as NumPy's."""
    from .ops.axes import normalize_axis_index
    normalize_axis_index(axis, 1)
    out = Array(C.linspace(start, stop, num, endpoint, dtype))
    if retstep:
        div = (num - 1) if endpoint else num
        return out, ((stop - start) / div if div > 0 else np.nan)
    return out


def eye(N, M=None, k=0, dtype=np.float64, order="C", *, device=None) -> Array:
    """An ``N`` x ``M`` array with ones on diagonal ``k`` (``np.eye``), as a
    lazy constant."""
    return Array(C.eye(N, M, k, dtype))


def identity(n, dtype=None, *, like=None) -> Array:
    """The ``n`` x ``n`` identity (``np.identity``), as a lazy constant
    (dtype None: float64)."""
    return Array(C.identity(n, dtype))


def tri(N, M=None, k=0, dtype=np.float64, *, like=None) -> Array:
    """An ``N`` x ``M`` array with ones at and below diagonal ``k``
    (``np.tri``), as a lazy constant (dtype None: float64)."""
    return Array(C.tri(N, M, k, dtype))


# -- elementwise -------------------------------------------------------------

# the first line of each ufunc's docstring (the array API's other names for
# the same function object are listed with it)
_SUMMARY = {
    "exp": "e to the power ``x``, elementwise (``np.exp``).",
    "expm1": "``exp(x) - 1``, accurate for small ``x``, elementwise (``np.expm1``).",
    "log": "Natural logarithm, elementwise (``np.log``).",
    "log1p": "``log(1 + x)``, accurate for small ``x``, elementwise (``np.log1p``).",
    "log2": "Base-2 logarithm, elementwise (``np.log2``).",
    "log10": "Base-10 logarithm, elementwise (``np.log10``).",
    "sqrt": "Non-negative square root, elementwise (``np.sqrt``).",
    "square": "``x * x``, elementwise (``np.square``).",
    "sin": "Sine of ``x`` in radians, elementwise (``np.sin``).",
    "cos": "Cosine of ``x`` in radians, elementwise (``np.cos``).",
    "tan": "Tangent of ``x`` in radians, elementwise (``np.tan``).",
    "arcsin": "Inverse sine, elementwise (``np.arcsin``; ``pa.asin`` is the same function).",
    "arccos": "Inverse cosine, elementwise (``np.arccos``; ``pa.acos`` is the same function).",
    "arctan": "Inverse tangent, elementwise (``np.arctan``; ``pa.atan`` is the same function).",
    "sinh": "Hyperbolic sine, elementwise (``np.sinh``).",
    "cosh": "Hyperbolic cosine, elementwise (``np.cosh``).",
    "tanh": "Hyperbolic tangent, elementwise (``np.tanh``).",
    "arcsinh": "Inverse hyperbolic sine, elementwise (``np.arcsinh``; ``pa.asinh`` is the "
               "same function).",
    "arccosh": "Inverse hyperbolic cosine, elementwise (``np.arccosh``; ``pa.acosh`` is the "
               "same function).",
    "arctanh": "Inverse hyperbolic tangent, elementwise (``np.arctanh``; ``pa.atanh`` is the "
               "same function).",
    "absolute": "Absolute value, elementwise (``np.absolute``; ``pa.abs`` is the same "
                "function).",
    "sign": "-1, 0 or 1 by the sign of ``x`` (NaN for NaN), elementwise (``np.sign``).",
    "floor": "Largest integer not above ``x``, elementwise (``np.floor``).",
    "ceil": "Smallest integer not below ``x``, elementwise (``np.ceil``).",
    "trunc": "``x`` rounded toward zero, elementwise (``np.trunc``).",
    "rint": "``x`` rounded to the nearest integer, halves to even, elementwise "
            "(``np.rint``).",
    "isnan": "True where ``x`` is NaN, elementwise (``np.isnan``).",
    "isinf": "True where ``x`` is +inf or -inf, elementwise (``np.isinf``).",
    "isfinite": "True where ``x`` is neither infinite nor NaN, elementwise "
                "(``np.isfinite``).",
    "logical_not": "NOT of the truth value of ``x``, elementwise, as bool "
                   "(``np.logical_not``).",
    "negative": "``-x``, elementwise (``np.negative``).",
    "positive": "``+x`` (the values unchanged), elementwise (``np.positive``).",
    "invert": "Bitwise NOT (logical NOT for bool), elementwise (``np.invert``; "
              "``pa.bitwise_invert`` is the same function).",
    "add": "``x1 + x2``, elementwise (``np.add``).",
    "subtract": "``x1 - x2``, elementwise (``np.subtract``).",
    "multiply": "``x1 * x2``, elementwise (``np.multiply``).",
    "divide": "True division ``x1 / x2``, elementwise (``np.divide``; "
              "``pa.true_divide`` is the same function).",
    "floor_divide": "Floor division ``x1 // x2``, elementwise (``np.floor_divide``); "
                    "integer division by 0 gives 0, as NumPy's.",
    "remainder": "``x1 % x2`` with the sign of ``x2``, elementwise (``np.remainder``).",
    "power": "``x1 ** x2``, elementwise (``np.power``; ``pa.pow`` is the same function).",
    "arctan2": "Angle of the point ``(x2, x1)`` in radians, by quadrant, elementwise "
               "(``np.arctan2``; ``pa.atan2`` is the same function).",
    "maximum": "The larger of ``x1`` and ``x2``, NaN propagated, elementwise "
               "(``np.maximum``).",
    "minimum": "The smaller of ``x1`` and ``x2``, NaN propagated, elementwise "
               "(``np.minimum``).",
    "logical_and": "AND of the truth values, elementwise, as bool (``np.logical_and``).",
    "logical_or": "OR of the truth values, elementwise, as bool (``np.logical_or``).",
    "logical_xor": "XOR of the truth values, elementwise, as bool (``np.logical_xor``).",
    "bitwise_and": "Bitwise AND (logical for bool), elementwise (``np.bitwise_and``).",
    "bitwise_or": "Bitwise OR (logical for bool), elementwise (``np.bitwise_or``).",
    "bitwise_xor": "Bitwise XOR (logical for bool), elementwise (``np.bitwise_xor``).",
    "equal": "``x1 == x2``, elementwise, as bool (``np.equal``).",
    "not_equal": "``x1 != x2``, elementwise, as bool (``np.not_equal``).",
    "less": "``x1 < x2``, elementwise, as bool (``np.less``).",
    "less_equal": "``x1 <= x2``, elementwise, as bool (``np.less_equal``).",
    "greater": "``x1 > x2``, elementwise, as bool (``np.greater``).",
    "greater_equal": "``x1 >= x2``, elementwise, as bool (``np.greater_equal``).",
}



def _unary(name):
    def f(x, /, out=None, *, where=True, dtype=None):
        if out is not None:
            return ufunc_into(out, name, where, lambda w: F.ufunc_node(
                name, (node_of(x),), None, w, dtype), (x,))
        return Array(F.ufunc_node(name, (node_of(x),), out, where, dtype))
    f.__name__ = f.__qualname__ = name
    summary = _SUMMARY.get(name, f"Elementwise ``np.{name}``.")     # the test flags it
    f.__doc__ = f"{summary}\n\n{F.UFUNC_NOTE}"
    return f


def _binary(name):
    def f(x1, x2, /, out=None, *, where=True, dtype=None):
        if out is not None:
            return ufunc_into(out, name, where, lambda w: F.ufunc_node(
                name, (node_of(x1), node_of(x2)), None, w, dtype), (x1, x2))
        return Array(F.ufunc_node(name, (node_of(x1), node_of(x2)), out, where, dtype))
    f.__name__ = f.__qualname__ = name
    summary = _SUMMARY.get(name, f"Elementwise ``np.{name}``.")     # the test flags it
    f.__doc__ = f"{summary}\n\n{F.BINARY_NOTE}\n{F.UFUNC_NOTE}"
    return f


globals().update({n: ufunc(_unary(n), getattr(np, n)) for n in UNARY})
globals().update({n: ufunc(_binary(n), getattr(np, n)) for n in BINARY})
abs = absolute          # noqa: A001,F821  (NumPy's names)
true_divide = divide    # noqa: F821


def astype(x, dtype, /, *, copy=True, device=None) -> Array:
    """``x`` converted to ``dtype`` (``np.astype``, the array API's), lazily.

    Conversions are NumPy's (``casting="unsafe"``: float to int truncates).
    ``copy`` is accepted: a lazy array is never written in place, so a copy
    and a view mean the same."""
    return Array(E.astype(node_of(x), dtype))


def _evaluate(node):
    return Array(node).evaluate()


def where(condition, x=NoValue, y=NoValue) -> Array:
    """``x`` where ``condition`` is true, else ``y``, elementwise (``np.where``).

    The three broadcast; the dtype is NumPy's promotion of ``x`` and ``y``
    (NEP 50: Python scalars are weak).  One-argument ``where(condition)`` is
    ``pa.nonzero(condition)``, which is eager: it evaluates ``condition``
    now (on the default target) and returns data arrays; it raises
    ``pa.LazyValueError`` if ``condition`` depends on placeholders."""
    if x is NoValue and y is NoValue:
        values = G.concrete(node_of(condition), "where(condition)", _evaluate)
        return tuple(Array(n) for n in G.nonzero(values))
    if x is NoValue or y is NoValue:
        raise ValueError("either both or neither of x and y should be given")
    return _made(Array(E.where(node_of(condition), node_of(x), node_of(y))))


def clip(a, a_min=NoValue, a_max=NoValue, out=None, *, min=NoValue,   # noqa: A002
         max=NoValue, **kwargs) -> Array:                              # noqa: A002
    """``a`` limited to ``[a_min, a_max]``, elementwise (``np.clip``).

    Computed as ``minimum(maximum(a, a_min), a_max)``, so NaN propagates;
    either bound may be None, and a lazy array.  ``min``/``max`` are NumPy
    2.1's (and the array API's) spellings; ``out=`` must be None."""
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
    """``a`` rounded to ``decimals`` decimals, halves to even (``np.round``,
    also ``pa.around``).

    Floats are scaled by ``10 ** decimals``, rounded and scaled back, as
    NumPy does; integers are returned unchanged, and negative ``decimals``
    on integers raise NotImplementedError (NumPy rounds to tens, ...)."""
    no_out(out, "round")
    return _same_or_new(a, E.round(node_of(a), decimals))


around = round


# -- linear algebra ----------------------------------------------------------

def einsum(subscripts, /, *operands, out=None, dtype=None, order="K", casting="safe",
           optimize=False) -> Array:
    """Einstein summation over ``operands`` (``np.einsum``), lazily.

    Subscript strings (``...`` broadcasting included) and NumPy's
    operand-list form; ``dtype`` and ``casting`` as NumPy's.  ``optimize``
    is accepted and ignored (polyarray schedules contractions itself);
    ``out=`` must be None."""
    no_out(out, "einsum")
    return Array(L.einsum(node_of(subscripts), *map(node_of, operands), dtype=dtype,
                          casting=casting))


def tensordot(a, b, axes=2) -> Array:
    """Sum of products over the given ``axes`` of ``a`` and ``b``
    (``np.tensordot``), as one lazy contraction."""
    return Array(L.tensordot(node_of(a), node_of(b), axes))


def dot(a, b, out=None) -> Array:
    """Dot product of ``a`` and ``b`` (``np.dot``: matrix product for 2-D,
    sum over the last axis of ``a`` and the second-to-last of ``b`` for N-D),
    lazily.  ``out=`` must be None."""
    no_out(out, "dot")
    return Array(L.dot(node_of(a), node_of(b)))


def matmul(x1, x2, /, out=None) -> Array:
    """Matrix product with broadcast batches, ``x1 @ x2`` (``np.matmul``), lazily.

    Integer products wrap as NumPy's; float sums run in another order than
    NumPy's BLAS, so the last bits may differ.  ``out=`` must be None."""
    no_out(out, "matmul")
    return Array(L.matmul(node_of(x1), node_of(x2)))


def vdot(a, b) -> Array:
    """Dot product of ``a`` and ``b`` flattened (``np.vdot``), as a lazy 0-d array."""
    return Array(L.vdot(node_of(a), node_of(b)))


def inner(a, b) -> Array:
    """Sum of products over the last axes of ``a`` and ``b`` (``np.inner``), lazily."""
    return Array(L.inner(node_of(a), node_of(b)))


def outer(a, b, out=None) -> Array:
    """Outer product of ``a`` and ``b`` flattened (``np.outer``), lazily;
    ``out=`` must be None."""
    no_out(out, "outer")
    return Array(L.outer(node_of(a), node_of(b)))
