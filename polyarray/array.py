"""``pa.Array``: the lazy, NumPy-like handle users hold.

An Array wraps one DAG node.  Its shape and dtype are known at once; every
operator builds a new node.  ``==`` and friends are elementwise, as in NumPy;
structural identity of two expressions is ``a.node is b.node`` (nodes are
interned, see :mod:`polyarray.codegen.ir.nodes`).

The methods unwrap their operands, call the node builders of
:mod:`polyarray.ops` and wrap the result.  ``evaluate`` and ``to_numpy``
compile, which :mod:`polyarray.program` (above this module) defines.
"""
from __future__ import annotations

import numpy as np

from .codegen.ir import nodes as N
from .ops import arrange, assign, eager, elementwise, indexing, linalg, matrices
from .ops import ordering, reductions, scans, shapes, ufuncs
from .ops.axes import no_out
from .ops.reductions import NoValue


def node_of(x):
    """The node of a ``pa.Array``; anything else unchanged."""
    return x._node if isinstance(x, Array) else x


def wrap(result):
    """A node, or a (named) tuple of nodes, as Arrays (``node_of`` undone)."""
    if isinstance(result, tuple):
        items = [wrap(r) for r in result]
        return type(result)(*items) if hasattr(result, "_fields") else tuple(items)
    return Array(result)


def _same_or_new(x, node):
    """``x`` itself where an operation left its node unchanged (``clip``
    with no bounds, ``round`` of integers), as NumPy-style code expects."""
    return x if isinstance(x, Array) and x._node is node else Array(node)


class Array:
    """A lazy n-dimensional array: NumPy's ``ndarray`` as an expression.

    Its ``shape`` and ``dtype`` are known at once; operators, methods and
    ``pa.*`` functions build new expressions, and nothing is computed until it
    is evaluated (``x.evaluate()``, ``pa.compile``, or an eager hook such as
    ``np.asarray(x)``, ``float(x)``, ``bool(x)``).  Expressions are immutable:
    ``x[i] = v`` and ``x += 1`` rebind the handle ``x`` to a new expression
    (other arrays made from the old one keep its value, as with JAX's
    ``x.at[i].set(v)``), and ``out=`` must be None.  ``==`` is elementwise,
    so arrays are unhashable: use ``x.node`` as a key.  Make one with
    ``pa.array``, ``pa.asarray`` or ``pa.placeholder``.  See
    docs/numpy_differences.md."""
    __slots__ = ("_node", "__weakref__")

    def __init__(self, node: N.Node):
        if not isinstance(node, N.Node):
            raise TypeError("Array wraps a polyarray node; use pa.array() "
                            "or pa.asarray() to make one from data")
        self._node = node

    # -- metadata, concrete at once --------------------------------------
    @property
    def node(self) -> N.Node:
        """The DAG node this array wraps (interned: ``a.node is b.node`` when
        the two expressions are the same)."""
        return self._node

    @property
    def shape(self) -> tuple:
        """Tuple of the array's dimensions (``ndarray.shape``), known without evaluating."""
        return self._node.shape

    @property
    def dtype(self) -> np.dtype:
        """The elements' dtype (``ndarray.dtype``), known without evaluating."""
        return self._node.dtype

    @property
    def ndim(self) -> int:
        """Number of dimensions (``ndarray.ndim``)."""
        return len(self._node.shape)

    @property
    def size(self) -> int:
        """Number of elements (``ndarray.size``)."""
        return self._node.size

    @property
    def itemsize(self) -> int:
        """Bytes per element (``ndarray.itemsize``)."""
        return self._node.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes the evaluated array takes (``ndarray.nbytes``)."""
        return self.size * self.itemsize

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (0-d array)")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    # -- copies and pickles ----------------------------------------------
    def __copy__(self):
        """Another handle of the same expression (``x[i] = v`` rebinds one)."""
        return Array(self._node)

    def __deepcopy__(self, memo):
        """The same expression over copies of the shared variables it reads."""
        from . import pickling
        return Array(pickling.deep_copy(self._node, memo))

    def __reduce__(self):
        # the DAG as a flat table, with the shared variables it reads and the
        # custom kernels' functions it calls (polyarray.pickling)
        from . import pickling
        return _unpickle, (pickling.dag_state([self._node]),)

    # __bool__, __float__, __int__, __index__, __array__, __array_ufunc__,
    # __array_function__, item, tolist, __dlpack__ ...: polyarray.protocols
    # (they evaluate, so they live above polyarray.program)

    def __setitem__(self, key, value):
        """``x[key] = value`` rebinds this handle to "x with that region
        replaced" (NumPy's indices, broadcasting and casting); arrays made
        from the old expression, views included, keep the old values."""
        key = tuple(map(node_of, key)) if isinstance(key, tuple) else node_of(key)
        self._node = assign.setitem(self._node, key, node_of(value))

    def __repr__(self):
        from .codegen.ir.printing import describe
        return describe(self._node)

    # -- evaluation: ``evaluate`` and ``to_numpy`` (see the module docstring)

    # -- arithmetic ------------------------------------------------------
    def _bin(name, reflected=False):
        def method(self, other):
            if reflected:
                return Array(elementwise.apply_ufunc(name, node_of(other), self._node))
            return Array(elementwise.apply_ufunc(name, self._node, node_of(other)))
        method.__name__ = name
        return method

    __add__, __radd__ = _bin("add"), _bin("add", True)
    __sub__, __rsub__ = _bin("subtract"), _bin("subtract", True)
    __mul__, __rmul__ = _bin("multiply"), _bin("multiply", True)
    __truediv__, __rtruediv__ = _bin("divide"), _bin("divide", True)
    __floordiv__, __rfloordiv__ = _bin("floor_divide"), _bin("floor_divide", True)
    __mod__, __rmod__ = _bin("remainder"), _bin("remainder", True)
    __rpow__ = _bin("power", True)
    __and__, __rand__ = _bin("bitwise_and"), _bin("bitwise_and", True)
    __or__, __ror__ = _bin("bitwise_or"), _bin("bitwise_or", True)
    __xor__, __rxor__ = _bin("bitwise_xor"), _bin("bitwise_xor", True)
    __lt__, __le__ = _bin("less"), _bin("less_equal")
    __gt__, __ge__ = _bin("greater"), _bin("greater_equal")
    __eq__, __ne__ = _bin("equal"), _bin("not_equal")
    del _bin

    # augmented assignment rebinds the name to a new expression (arrays are
    # immutable): other handles of the old value keep it, as in JAX
    def _ibin(name):
        def method(self, other):
            return _in_place(elementwise.apply_ufunc(name, self._node, node_of(other)),
                             name, self)
        method.__name__ = "__i" + name + "__"
        return method

    __iadd__, __isub__, __imul__ = _ibin("add"), _ibin("subtract"), _ibin("multiply")
    __itruediv__, __ifloordiv__ = _ibin("divide"), _ibin("floor_divide")
    __imod__ = _ibin("remainder")
    __iand__, __ior__, __ixor__ = _ibin("bitwise_and"), _ibin("bitwise_or"), _ibin("bitwise_xor")
    del _ibin
    __hash__ = None          # elementwise __eq__: use ``.node`` as a dict key

    def __pow__(self, other):
        # ndarray.__pow__ turns ``** 2`` into np.square (bool ** 2 -> int8)
        if type(other) is int and other == 2:
            return Array(elementwise.apply_ufunc("square", self._node))
        return Array(elementwise.apply_ufunc("power", self._node, node_of(other)))

    def __ipow__(self, other):
        return _in_place(self.__pow__(other)._node, "power", self)

    def __neg__(self):
        return Array(elementwise.apply_ufunc("negative", self._node))

    def __pos__(self):
        return Array(elementwise.apply_ufunc("positive", self._node))

    def __abs__(self):
        return Array(elementwise.apply_ufunc("absolute", self._node))

    def __invert__(self):
        return Array(elementwise.apply_ufunc("invert", self._node))

    def __lshift__(self, other):
        return Array(ufuncs.left_shift(self._node, node_of(other)))

    def __rlshift__(self, other):
        return Array(ufuncs.left_shift(node_of(other), self._node))

    def __rshift__(self, other):
        return Array(ufuncs.right_shift(self._node, node_of(other)))

    def __rrshift__(self, other):
        return Array(ufuncs.right_shift(node_of(other), self._node))

    __ilshift__, __irshift__ = __lshift__, __rshift__

    def __matmul__(self, other):
        return Array(linalg.matmul(self._node, node_of(other)))

    def __rmatmul__(self, other):
        return Array(linalg.matmul(node_of(other), self._node))

    __imatmul__ = __matmul__

    # -- methods mirroring ndarray (NumPy's signatures; ``out`` must be None)
    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """The array converted to ``dtype`` (``ndarray.astype``), lazily.

        ``casting`` is checked as NumPy checks it (default "unsafe"); ``order``,
        ``subok`` and ``copy`` are accepted: a lazy array is never written in
        place."""
        if not np.can_cast(self.dtype, dtype, casting):
            raise TypeError(f"Cannot cast array data from {self.dtype!r} to "
                            f"{np.dtype(dtype)!r} according to the rule {casting!r}")
        return Array(elementwise.astype(self._node, dtype))

    def copy(self, order="C"):
        """A new handle of the same expression (``ndarray.copy``): ``x[i] = v``
        on one leaves the other unchanged.  ``order`` means nothing."""
        return Array(self._node)

    def __getitem__(self, key):
        key = tuple(map(node_of, key)) if isinstance(key, tuple) else node_of(key)
        return Array(assign.getitem(self._node, key))

    @property
    def T(self):
        """The array with its axes reversed (``ndarray.T``), lazily."""
        return Array(shapes.transpose(self._node))

    @property
    def mT(self):
        """The array with its last two axes swapped (``ndarray.mT``), lazily."""
        return Array(shapes.matrix_transpose(self._node))

    def transpose(self, *axes):
        """The array with its axes permuted (``ndarray.transpose``: axes as a tuple
        or as separate arguments; reversed by default), lazily."""
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return Array(shapes.transpose(self._node, axes or None))

    def reshape(self, *shape, order="C", copy=None):
        """The array with a new shape (``ndarray.reshape``: the shape as a tuple or
        as separate ints), lazily; ``order`` "C" or "F" ("A" means "C")."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return Array(shapes.reshape(self._node, tuple(shape),
                                    order="C" if order == "A" else order))

    def ravel(self, order="C"):
        """The array flattened to 1-D (``ndarray.ravel``; ``flatten`` is the same
        method, and neither copies anything: both are lazy expressions).
        ``order`` "C" or "F"; "A" and "K" mean "C"."""
        return Array(shapes.ravel(self._node, order))

    flatten = ravel

    def squeeze(self, axis=None):
        """The array without its axes of length one (``ndarray.squeeze``), lazily."""
        return Array(shapes.squeeze(self._node, axis))

    def swapaxes(self, axis1, axis2):
        """The array with ``axis1`` and ``axis2`` interchanged (``ndarray.swapaxes``), lazily."""
        return Array(shapes.swapaxes(self._node, axis1, axis2))

    def clip(self, min=None, max=None, out=None, **kwargs):    # noqa: A002
        """The values limited to ``[min, max]`` (``ndarray.clip``, as ``pa.clip``), lazily."""
        no_out(out, "clip")
        if kwargs:
            raise TypeError(f"clip: unsupported keyword arguments {sorted(kwargs)}")
        return _same_or_new(self, elementwise.clip(self._node, node_of(min), node_of(max)))

    def round(self, decimals=0, out=None):
        """The values rounded to ``decimals``, halves to even (``ndarray.round``, as
        ``pa.round``), lazily."""
        no_out(out, "round")
        return _same_or_new(self, elementwise.round(self._node, decimals))

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue,
            where=True):
        """Sum over ``axis`` (``ndarray.sum``, as ``pa.sum``), lazily."""
        no_out(out, "sum")
        return Array(reductions.sum(self._node, axis, dtype, keepdims, initial,
                                    node_of(where)))

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue,
             where=True):
        """Product over ``axis`` (``ndarray.prod``, as ``pa.prod``), lazily."""
        no_out(out, "prod")
        return Array(reductions.prod(self._node, axis, dtype, keepdims, initial,
                                     node_of(where)))

    def max(self, axis=None, out=None, keepdims=False, initial=NoValue, where=True):
        """Maximum over ``axis``, NaN propagated (``ndarray.max``, as ``pa.max``), lazily."""
        no_out(out, "max")
        return Array(reductions.max(self._node, axis, keepdims, initial, node_of(where)))

    def min(self, axis=None, out=None, keepdims=False, initial=NoValue, where=True):
        """Minimum over ``axis``, NaN propagated (``ndarray.min``, as ``pa.min``), lazily."""
        no_out(out, "min")
        return Array(reductions.min(self._node, axis, keepdims, initial, node_of(where)))

    def any(self, axis=None, out=None, keepdims=False, *, where=True):
        """Whether any element over ``axis`` is true (``ndarray.any``), as a lazy bool
        array; ``bool()`` of it evaluates."""
        no_out(out, "any")
        return Array(reductions.any(self._node, axis, keepdims, node_of(where)))

    def all(self, axis=None, out=None, keepdims=False, *, where=True):
        """Whether all elements over ``axis`` are true (``ndarray.all``), as a lazy
        bool array; ``bool()`` of it evaluates."""
        no_out(out, "all")
        return Array(reductions.all(self._node, axis, keepdims, node_of(where)))

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
        """Mean over ``axis`` (``ndarray.mean``, as ``pa.mean``), lazily."""
        no_out(out, "mean")
        return Array(reductions.mean(self._node, axis, dtype, keepdims, node_of(where)))

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
            correction=NoValue):
        """Variance over ``axis`` (``ndarray.var``, as ``pa.var``), lazily."""
        no_out(out, "var")
        return Array(reductions.var(self._node, axis, dtype, ddof, keepdims, node_of(where),
                                    correction))

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
            correction=NoValue):
        """Standard deviation over ``axis`` (``ndarray.std``, as ``pa.std``), lazily."""
        no_out(out, "std")
        return Array(reductions.std(self._node, axis, dtype, ddof, keepdims, node_of(where),
                                    correction))

    def argmax(self, axis=None, out=None, *, keepdims=False):
        """Index of the maximum over ``axis`` (``ndarray.argmax``, as ``pa.argmax``),
        lazily."""
        no_out(out, "argmax")
        return Array(reductions.argmax(self._node, axis, keepdims))

    def argmin(self, axis=None, out=None, *, keepdims=False):
        """Index of the minimum over ``axis`` (``ndarray.argmin``, as ``pa.argmin``),
        lazily."""
        no_out(out, "argmin")
        return Array(reductions.argmin(self._node, axis, keepdims))

    def dot(self, b, out=None):
        """Dot product with ``b`` (``ndarray.dot``, as ``pa.dot``), lazily."""
        no_out(out, "dot")
        return Array(linalg.dot(self._node, node_of(b)))

    def take(self, indices, axis=None, out=None, mode="raise"):
        """Elements at ``indices`` along ``axis`` (``ndarray.take``, as ``pa.take``:
        lazy indices are bounds-checked when the program runs), lazily."""
        no_out(out, "take")
        return Array(indexing.take(self._node, node_of(indices), axis, mode))

    def diagonal(self, offset=0, axis1=0, axis2=1):
        """Diagonal ``offset`` of the ``axis1``/``axis2`` planes (``ndarray.diagonal``),
        lazily."""
        return Array(matrices.diagonal(self._node, offset, axis1, axis2))

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        """Sum along diagonal ``offset`` (``ndarray.trace``), lazily."""
        no_out(out, "trace")
        return Array(matrices.trace(self._node, offset, axis1, axis2, dtype))

    def repeat(self, repeats, axis=None):
        """Each element repeated ``repeats`` times (``ndarray.repeat``, as
        ``pa.repeat``: ``repeats`` must be concrete), lazily."""
        return Array(arrange.repeat(self._node, node_of(repeats), axis))

    def nonzero(self):
        """Indices of the nonzero elements, one array per axis (``ndarray.nonzero``).

        Eager, as ``pa.nonzero``: the array is evaluated now (the result's shape
        depends on the values); ``pa.LazyValueError`` if it depends on
        placeholders."""
        values = eager.concrete(self._node, "nonzero", lambda n: Array(n).evaluate())
        return tuple(Array(n) for n in eager.nonzero(values))

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        """Refused: NumPy's ``ndarray.sort`` sorts in place, and polyarray arrays
        are immutable (TypeError).  Use ``x = pa.sort(x, axis)``."""
        raise TypeError("polyarray arrays are immutable, so Array.sort cannot sort in "
                        "place: use pa.sort(x, axis=...), which returns a sorted array")

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        """Indices that sort the array along ``axis`` (``ndarray.argsort``, as
        ``pa.argsort``: always stable), lazily."""
        return Array(ordering.argsort(self._node, axis, kind, order, stable=stable))

    def cumsum(self, axis=None, dtype=None, out=None):
        """Cumulative sum along ``axis`` (``ndarray.cumsum``, as ``pa.cumsum``), lazily."""
        return Array(scans.cumsum(self._node, axis, dtype, out))

    def cumprod(self, axis=None, dtype=None, out=None):
        """Cumulative product along ``axis`` (``ndarray.cumprod``, as ``pa.cumprod``),
        lazily."""
        return Array(scans.cumprod(self._node, axis, dtype, out))


def _unpickle(state):
    from . import pickling
    return Array(pickling.restore_dag(state)[0])


def _in_place(node, ufunc, left):
    """The result of ``a op= b``, which rebinds ``a``; where NumPy, writing
    into ``a``, would refuse the cast back to ``a``'s dtype, NumPy's error
    (``y += 0.5`` on integers, ``x[:2] /= 2``).  A 0-d ``a`` is rebound as
    NumPy's scalars are (``x[0] /= 2`` casts back unsafely)."""
    if left.ndim == 0 or np.can_cast(node.dtype, left.dtype, "same_kind"):
        return Array(node)
    raise TypeError(f"Cannot cast ufunc {ufunc!r} output from {node.dtype!r} to "
                    f"{left.dtype!r} with casting rule 'same_kind'")
