"""``pa.Array``: the lazy, NumPy-like handle users hold.

An Array wraps one DAG node.  Its shape and dtype are known at once; every
operator builds a new node.  ``==`` and friends are elementwise, as in NumPy;
structural identity of two expressions is ``a.node is b.node`` (nodes are
interned, see :mod:`polyarray.ir.nodes`).

The methods unwrap their operands, call the node builders of
:mod:`polyarray.ops` and wrap the result.  ``evaluate`` and ``to_numpy``
compile, which :mod:`polyarray.program` (above this module) defines.
"""
from __future__ import annotations

import weakref

import numpy as np

from .ir import nodes as N
from .ops import arrange, assign, eager, elementwise, indexing, linalg, matrices
from .ops import ordering, reductions, scans, shapes, ufuncs, views as V
from .ops import complex as complex_ops
from .ops.indexing import NonConcreteBooleanIndexError
from .ops.reductions import NoValue


# the arrays made or written while a pa.jit call with graph breaks traces
# (a list of weak references per session, with ``element_write()``, which
# counts writes of single elements; polyarray.tracing), above the arrays made
# outside every session (the bottom entry: polyarray.reevaluation)
TRACKED = []
# ``polyarray.masked.select``, registered there (it is a layer above this one)
KEEP_SELECTION = []


def live_arrays(refs) -> list:
    """The distinct arrays still alive in ``refs`` (weak references to the
    arrays made or written, in that order); ``refs`` keeps only those."""
    alive, arrays, seen = [], [], set()
    for ref in refs:
        a = ref()
        if a is None or id(a) in seen:
            continue
        seen.add(id(a))
        alive.append(ref)
        arrays.append(a)
    refs[:] = alive
    return arrays


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
    ``np.asarray(x)``, ``float(x)``, ``bool(x)``).  Writes follow NumPy:
    ``x[i] = v``, ``x += 1`` and ``out=x`` change ``x`` and every view of it
    (``x[1:]``, ``x.T``, ``x.reshape(...)`` where NumPy gives a view), as
    functional updates of the DAG (see "NumPy's views and writes" below); arrays computed from
    ``x`` before the write keep their values.  ``==`` is elementwise,
    so arrays are unhashable: use ``x.node`` as a key.  Make one with
    ``pa.array``, ``pa.asarray`` or ``pa.placeholder``.  See
    ``python -m polyarray differences``."""
    __slots__ = ("_node", "_flags", "_strides", "__weakref__")    # the last two:
    # set on a few roots only (see "NumPy's views and writes")

    def __init__(self, node: N.Node):
        if not isinstance(node, N.Node):
            raise TypeError("Array wraps a polyarray node; use pa.array() "
                            "or pa.asarray() to make one from data")
        self._node = node
        if TRACKED:                     # a pa.jit call with graph breaks (tracing.py)
            TRACKED[-1].append(weakref.ref(self))

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

    @shape.setter
    def shape(self, value):
        """``x.shape = s``: ``x`` reshaped in place, as NumPy's setter: only
        where its memory takes the shape without a copy (else NumPy's
        AttributeError); views made before keep theirs."""
        set_shape(self, value)

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
        """``x[key] = value``: ``x`` and its views now hold "x with that region
        replaced" (NumPy's indices, broadcasting and casting); arrays computed
        from ``x`` before keep the old values."""
        setitem(self, key, value)

    def _write_root(self, node):
        """The one place a root array takes a new value (``write``)."""
        self._node = node

    def __repr__(self):
        from .ir.printing import describe
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

    # augmented assignment writes into the array (NumPy's ``out=x``): every
    # name and view of it sees the new value; a 0-d scalar is rebound
    def _ibin(name):
        def method(self, other):
            return in_place(self, name, lambda: elementwise.apply_ufunc(
                name, self._node, node_of(other)), other)
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
        if self.dtype.kind == "c" and ((type(other) is int and other == -1) or
                                       (type(other) is float and other == 0.5)):
            # and on complex arrays ``** -1`` into np.reciprocal, ``** 0.5`` into np.sqrt
            name = "reciprocal" if other == -1 else "sqrt"
            return Array(elementwise.apply_ufunc(name, self._node))
        return Array(elementwise.apply_ufunc("power", self._node, node_of(other)))

    def __ipow__(self, other):
        return in_place(self, "power", lambda: self.__pow__(other)._node, other)

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

    def __ilshift__(self, other):
        return in_place(self, "left_shift",
                        lambda: ufuncs.left_shift(self._node, node_of(other)), other)

    def __irshift__(self, other):
        return in_place(self, "right_shift",
                        lambda: ufuncs.right_shift(self._node, node_of(other)), other)

    def __matmul__(self, other):
        return Array(linalg.matmul(self._node, node_of(other), linalg.default_precision()))

    def __rmatmul__(self, other):
        return Array(linalg.matmul(node_of(other), self._node, linalg.default_precision()))

    def __imatmul__(self, other):
        return in_place(self, "matmul", lambda: linalg.matmul(
            self._node, node_of(other), linalg.default_precision()), other)

    # -- methods mirroring ndarray (NumPy's signatures; ``out`` must be None)
    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """The array converted to ``dtype`` (``ndarray.astype``), lazily.

        ``casting`` is checked as NumPy checks it (default "unsafe"); ``order``,
        ``subok`` and ``copy`` are accepted: a lazy array is never written in
        place."""
        if not np.can_cast(self.dtype, dtype, casting):
            raise TypeError(f"Cannot cast array data from {self.dtype!r} to "
                            f"{np.dtype(dtype)!r} according to the rule {casting!r}")
        if not copy and np.dtype(dtype) == self.dtype:
            return self
        return _like_0d(self, Array(elementwise.astype(self._node, dtype)))

    def copy(self, order="C"):
        """A copy (``ndarray.copy``): writes to either leave the other unchanged.
        ``order`` means nothing."""
        return _like_0d(self, Array(self._node))

    def __getitem__(self, key):
        return view_getitem(self, key)

    @property
    def real(self):
        """The real part (``ndarray.real``): a view, as NumPy's (writing it
        writes this array); a real array's is the array itself."""
        if self.dtype.kind != "c":
            return self
        return make_view(self, ("part", "real", lambda a: a.real))

    @real.setter
    def real(self, value):
        setitem(self.real, Ellipsis, value)

    @property
    def imag(self):
        """The imaginary part (``ndarray.imag``): a view of a complex array
        (writing it writes this array); read-only zeros for a real one, as
        NumPy's."""
        if self.dtype.kind != "c":
            return read_only_view(self, complex_ops.imag, lambda a: a.imag)
        return make_view(self, ("part", "imag", lambda a: a.imag))

    @imag.setter
    def imag(self, value):
        setitem(self.imag, Ellipsis, value)

    def conj(self):
        """The complex conjugate (``ndarray.conj``), lazily; a real array is
        returned itself, as NumPy's method does (``pa.conj`` gives the ufunc's
        loop dtype)."""
        if self.dtype.kind != "c":
            return self
        return Array(complex_ops.conj(self._node))

    conjugate = conj

    @property
    def T(self):
        """The array with its axes reversed (``ndarray.T``): a view."""
        return permuted(self, range(self.ndim - 1, -1, -1))

    @property
    def mT(self):
        """The array with its last two axes swapped (``ndarray.mT``): a view."""
        return permuted(self, shapes.permutation("matrix_transpose", self.ndim))

    def transpose(self, *axes):
        """The array with its axes permuted (``ndarray.transpose``: axes as a tuple
        or as separate arguments; reversed by default): a view."""
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return permuted(self, shapes.permutation("transpose", self.ndim, axes or None))

    def reshape(self, *shape, order="C", copy=None):
        """The array with a new shape (``ndarray.reshape``: the shape as a tuple or
        as separate ints); a view where NumPy gives one.  ``order`` "C" or "F"
        ("A" means "C")."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        out = reshaped(self, tuple(shape), "C" if order == "A" else order)
        if copy is False and not isinstance(out, View):
            raise ValueError("Unable to avoid creating a copy while reshaping.")
        return Array(out._node) if copy else out

    def ravel(self, order="C"):
        """The array flattened to 1-D (``ndarray.ravel``): a view where NumPy
        gives one, which is only where the memory is contiguous in that order
        (``x[::2].ravel()`` copies, where ``x[::2].reshape(-1)`` is a view).
        ``order`` "C" or "F"; "A" and "K" mean "C"."""
        if order not in ("C", "F", "A", "K"):
            raise ValueError(f"ravel: order must be one of 'C', 'F', 'A', or 'K' "
                             f"(got {order!r})")
        order = "F" if order == "F" else "C"
        flags = _layout(self).flags
        if flags.f_contiguous if order == "F" else flags.c_contiguous:
            return reshaped(self, (-1,), order, always_view=True)
        return Array(shapes.reshape(self._node, (-1,), order))

    def flatten(self, order="C"):
        """The array flattened to 1-D, a copy (``ndarray.flatten``)."""
        return Array(shapes.ravel(self._node, order))

    def squeeze(self, axis=None):
        """The array without its axes of length one (``ndarray.squeeze``): a view."""
        return reshaped(self, shapes.squeeze(self._node, axis).shape,
                              always_view=True)

    def swapaxes(self, axis1, axis2):
        """The array with ``axis1`` and ``axis2`` interchanged (``ndarray.swapaxes``):
        a view."""
        return permuted(self, shapes.permutation("swapaxes", self.ndim, axis1, axis2))

    def clip(self, min=None, max=None, out=None, **kwargs):    # noqa: A002
        """The values limited to ``[min, max]`` (``ndarray.clip``, as ``pa.clip``), lazily."""
        if kwargs:
            raise TypeError(f"clip: unsupported keyword arguments {sorted(kwargs)}")
        node = elementwise.clip(self._node, node_of(min), node_of(max))
        return _same_or_new(self, node) if out is None else into_out(out, "clip", node)

    def round(self, decimals=0, out=None):
        """The values rounded to ``decimals``, halves to even (``ndarray.round``, as
        ``pa.round``), lazily."""
        node = elementwise.round(self._node, decimals)
        return _same_or_new(self, node) if out is None else into_out(out, "round", node)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue,
            where=True):
        """Sum over ``axis`` (``ndarray.sum``, as ``pa.sum``), lazily."""
        return into_out(out, "sum", reductions.sum(self._node, axis, dtype, keepdims,
                                                   initial, node_of(where)))

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue,
             where=True):
        """Product over ``axis`` (``ndarray.prod``, as ``pa.prod``), lazily."""
        return into_out(out, "prod", reductions.prod(self._node, axis, dtype, keepdims,
                                                     initial, node_of(where)))

    def max(self, axis=None, out=None, keepdims=False, initial=NoValue, where=True):
        """Maximum over ``axis``, NaN propagated (``ndarray.max``, as ``pa.max``), lazily."""
        return into_out(out, "max", reductions.max(self._node, axis, keepdims, initial,
                                                   node_of(where)))

    def min(self, axis=None, out=None, keepdims=False, initial=NoValue, where=True):
        """Minimum over ``axis``, NaN propagated (``ndarray.min``, as ``pa.min``), lazily."""
        return into_out(out, "min", reductions.min(self._node, axis, keepdims, initial,
                                                   node_of(where)))

    def any(self, axis=None, out=None, keepdims=False, *, where=True):
        """Whether any element over ``axis`` is true (``ndarray.any``), as a lazy bool
        array; ``bool()`` of it evaluates."""
        return into_out(out, "any", reductions.any(self._node, axis, keepdims, node_of(where)))

    def all(self, axis=None, out=None, keepdims=False, *, where=True):
        """Whether all elements over ``axis`` are true (``ndarray.all``), as a lazy
        bool array; ``bool()`` of it evaluates."""
        return into_out(out, "all", reductions.all(self._node, axis, keepdims, node_of(where)))

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
        """Mean over ``axis`` (``ndarray.mean``, as ``pa.mean``), lazily."""
        return into_out(out, "mean", reductions.mean(self._node, axis, dtype, keepdims,
                                                     node_of(where)))

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
            correction=NoValue):
        """Variance over ``axis`` (``ndarray.var``, as ``pa.var``), lazily."""
        return into_out(out, "var", reductions.var(self._node, axis, dtype, ddof, keepdims,
                                                   node_of(where), correction))

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
            correction=NoValue):
        """Standard deviation over ``axis`` (``ndarray.std``, as ``pa.std``), lazily."""
        return into_out(out, "std", reductions.std(self._node, axis, dtype, ddof, keepdims,
                                                   node_of(where), correction))

    def argmax(self, axis=None, out=None, *, keepdims=False):
        """Index of the maximum over ``axis`` (``ndarray.argmax``, as ``pa.argmax``),
        lazily."""
        return into_out(out, "argmax", reductions.argmax(self._node, axis, keepdims))

    def argmin(self, axis=None, out=None, *, keepdims=False):
        """Index of the minimum over ``axis`` (``ndarray.argmin``, as ``pa.argmin``),
        lazily."""
        return into_out(out, "argmin", reductions.argmin(self._node, axis, keepdims))

    def dot(self, b, out=None):
        """Dot product with ``b`` (``ndarray.dot``, as ``pa.dot``), lazily."""
        return into_out(out, "dot", linalg.dot(self._node, node_of(b),
                                               linalg.default_precision()))

    def take(self, indices, axis=None, out=None, mode="raise"):
        """Elements at ``indices`` along ``axis`` (``ndarray.take``, as ``pa.take``:
        lazy indices are bounds-checked when the program runs), lazily."""
        return into_out(out, "take", indexing.take(self._node, node_of(indices), axis, mode))

    def diagonal(self, offset=0, axis1=0, axis2=1):
        """Diagonal ``offset`` of the ``axis1``/``axis2`` planes (``ndarray.diagonal``):
        a read-only view, as NumPy's."""
        matrices.diagonal(self._node, offset, axis1, axis2)       # NumPy's errors now
        return read_only_view(
            self, lambda n: matrices.diagonal(n, offset, axis1, axis2),
            lambda a: a.diagonal(offset, axis1, axis2))

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        """Sum along diagonal ``offset`` (``ndarray.trace``), lazily."""
        return into_out(out, "trace", matrices.trace(self._node, offset, axis1, axis2, dtype))

    def repeat(self, repeats, axis=None):
        """Each element repeated ``repeats`` times (``ndarray.repeat``),
        lazily in the array.  The result's shape depends on ``repeats``: a
        lazy array of them is evaluated now, as ``nonzero``'s input is
        (``pa.LazyValueError`` if it depends on placeholders)."""
        reps = eager.concrete(node_of(repeats), "repeat", lambda n: Array(n).evaluate())
        return Array(arrange.repeat(self._node, reps, axis))

    def nonzero(self):
        """Indices of the nonzero elements, one array per axis (``ndarray.nonzero``).

        Eager, as ``pa.nonzero``: the array is evaluated now (the result's shape
        depends on the values); ``pa.LazyValueError`` if it depends on
        placeholders."""
        values = eager.concrete(self._node, "nonzero", lambda n: Array(n).evaluate())
        return tuple(Array(n) for n in eager.nonzero(values))

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        """Sort in place along ``axis`` (``ndarray.sort``; stable, as every
        polyarray sort): this array and its views hold the sorted values."""
        write(self, ordering.sort(self._node, axis, kind, order, stable=stable))

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        """Indices that sort the array along ``axis`` (``ndarray.argsort``, as
        ``pa.argsort``: always stable), lazily."""
        return Array(ordering.argsort(self._node, axis, kind, order, stable=stable))

    def cumsum(self, axis=None, dtype=None, out=None):
        """Cumulative sum along ``axis`` (``ndarray.cumsum``, as ``pa.cumsum``), lazily."""
        return into_out(out, "cumsum", scans.cumsum(self._node, axis, dtype))

    def cumprod(self, axis=None, dtype=None, out=None):
        """Cumulative product along ``axis`` (``ndarray.cumprod``, as ``pa.cumprod``),
        lazily."""
        return into_out(out, "cumprod", scans.cumprod(self._node, axis, dtype))



def _unpickle(state):
    from . import pickling
    return Array(pickling.restore_dag(state)[0])

# -- NumPy's views and writes -----------------------------------------------------
#
# In NumPy, ``y = x[1:]`` shares ``x``'s memory: ``y += 1`` changes ``x``,
# ``x[...] = 0`` changes ``y``, and ``x += v`` changes the array that every
# name bound to ``x`` sees.  A lazy array has no memory, so the relation is
# kept instead (PyTorch's functionalization):
#
# * an Array that is not a view is a *root*: a write (``x[key] = v``,
#   ``x += v``, ``out=x``) replaces its node by the functional update ("x with
#   that region replaced", ``ops/assign.py``);
# * a ``View`` holds its root and the steps that make it from the root's
#   value (``ops/views.py``): its node is recomputed when the root's node
#   has changed since it was last read (compared by identity), and a write
#   to it is carried back through the steps in reverse and written to the
#   root.
#
# View or copy is NumPy's decision: basic indexing, transposes, squeeze and
# expand_dims give views; indexing every axis with an integer gives a scalar
# (a copy that ``+=`` rebinds, as NumPy scalars are immutable), and so do 0-d
# results of operations; reshape/ravel give a view where NumPy's memory
# allows one; diagonal and broadcast_to give read-only views.

# a root's ``_flags`` (unset: 0): NumPy would not let a write reach it; a 0-d
# root that is an array (pa.zeros(()), a 0-d argument of pa.jit), not a scalar.
# A root's ``_strides`` (unset: C-contiguous): a pa.jit argument's, in bytes.
READ_ONLY, ARRAY_0D = 1, 2


def _flags(x) -> int:
    return getattr(x, "_flags", 0)


class View(Array):
    """A lazy NumPy view: ``_root`` (an Array that is not a view) and the
    ``_steps`` that make this array from the root's value; its node follows
    the root's."""
    __slots__ = ("_root", "_steps", "_from", "_value", "_root_shape", "_root_strides")

    @property
    def _node(self):
        current = self._root._node
        if current is not self._from:
            value = _root_value(self, current)
            for step in self._steps:
                value = V.forward(step, value)
            self._from, self._value = current, value
        return self._value


def make_view(x: Array, step) -> Array:
    """``x`` transformed by ``step``, as a view of ``x``'s root."""
    if isinstance(x, View):
        root, steps = x._root, x._steps + (step,)
    else:
        root, steps = x, (step,)
    value = V.forward(step, x._node)
    view = object.__new__(View)
    view._root, view._steps = root, steps
    view._from, view._value = root._node, value
    if isinstance(x, View):
        view._root_shape, view._root_strides = x._root_shape, x._root_strides
    else:
        view._root_shape, view._root_strides = x.shape, getattr(x, "_strides", None)
    return view


def _root_value(view: View, current):
    """The root's value ``current`` in the shape the view was made from (a
    root reshaped in place since, ``x.shape = s``, is the same memory)."""
    if current.shape == view._root_shape:
        return current
    return shapes.reshape(current, view._root_shape)


def set_shape(x: Array, value) -> None:
    """NumPy's ``x.shape = value`` (the same memory, another shape)."""
    if getattr(x, "_shape_fixed", False):        # a shared variable: its shape is its value's
        raise AttributeError(f"{x!r} cannot be reshaped in place; reshape what reads it "
                             "(x.reshape(...))")
    node = shapes.reshape(x._node, value)           # NumPy's errors first
    fake = _layout(x)
    try:
        moved = np.reshape(fake, node.shape, copy=False)
    except ValueError:
        raise AttributeError("Incompatible shape for in-place modification. Use `.reshape()` "
                             "to make a copy with the desired shape.") from None
    if isinstance(x, View):
        x._steps = x._steps + (("reshape", node.shape, "C"),)
        x._from = None
        return
    x._node = node
    if getattr(x, "_strides", None) is not None:
        x._strides = None
        set_strides(x, moved.strides)


def root_of(x: Array) -> Array:
    return x._root if isinstance(x, View) else x


def mark_array_0d(x: Array) -> Array:
    """A 0-d root that is an array (NumPy's ``np.zeros(())``), not a scalar:
    ``+=`` writes to it."""
    x._flags = _flags(x) | ARRAY_0D
    return x


def mark_read_only(x: Array) -> Array:
    """A root that refuses writes, as a read-only NumPy array does."""
    x._flags = _flags(x) | READ_ONLY
    return x


def set_strides(x: Array, strides) -> None:
    """Record that root ``x`` (a pa.jit argument) has these strides (bytes),
    which decide which reshapes of it are """
    if tuple(strides) != V.c_strides(x.shape, x.dtype.itemsize):
        x._strides = tuple(strides)


def is_scalar(x: Array) -> bool:
    """Whether ``x`` stands for a NumPy scalar (immutable: ``+=`` rebinds)."""
    return not x.shape and not isinstance(x, View) and not _flags(x) & ARRAY_0D


def _like_0d(x: Array, result: Array) -> Array:
    """``result`` of a method that keeps what ``x`` is (``astype``, ``copy``):
    a 0-d array for a 0-d array, a scalar for a scalar."""
    return mark_array_0d(result) if not result.shape and not is_scalar(x) else result


def read_only_view(x: Array, make, fake) -> Array:
    """A view that NumPy makes read-only (``diagonal``, ``broadcast_to``):
    it follows ``x``, and writing to it raises NumPy's ValueError."""
    return make_view(x, ("read-only", make, fake))


def write(x: Array, node) -> None:
    """Give ``x`` the value ``node`` (same shape and dtype), and so every
    view of its root, as NumPy's write into shared memory would."""
    if isinstance(x, View):
        root = x._root
        values = [_root_value(x, root._node)]
        for step in x._steps[:-1]:
            values.append(V.forward(step, values[-1]))
        for step, base in zip(reversed(x._steps), reversed(values)):
            node = V.backward(step, base, node)
        x = root
    if _flags(x) & READ_ONLY:
        raise ValueError("assignment destination is read-only")
    if node.shape != x.shape:           # written through a view of its old shape
        node = shapes.reshape(node, x.shape)
    x._write_root(node)
    if TRACKED:
        TRACKED[-1].append(weakref.ref(x))


def setitem(x: Array, key, value) -> None:
    """``x[key] = value``, NumPy's way."""
    if is_scalar(x):
        raise TypeError(f"'numpy.{x.dtype.name}' object does not support item assignment "
                        "(this 0-d value is a scalar, as NumPy's result would be; make an "
                        "array with pa.asarray(value) or pa.zeros(()) to assign into)")
    _refuse_read_only(x, "assignment destination is read-only")
    if type(value).__name__ == "Selected" and value.write_into(x, key):
        return                      # x[mask] = f(x[mask]): in place (polyarray.masked)
    # the value first: reading it may take a graph break (a lazily masked
    # selection), which rebinds the function's arrays; x's node is read after
    new_value = node_of(value)
    nodes = _unwrap_key(key)
    current = x._node
    if not V.is_advanced(nodes):
        try:
            if assign.holds(current, nodes, new_value):
                return              # ``x[key] = x[key]``: the second half of ``x[key] += v``
        except (IndexError, TypeError, ValueError):
            pass                    # setitem raises NumPy's error below
    if TRACKED and not V.is_advanced(nodes) and V.is_scalar_key(nodes, x.ndim):
        TRACKED[-1].element_write()
    try:
        new = assign.setitem(current, nodes, new_value)
    except NonConcreteBooleanIndexError:
        concrete = _concrete_masks(nodes)        # inside a pa.jit call: a graph break
        if concrete is None:
            raise
        # the break rebound the function's arrays to its results: read them again
        new = assign.setitem(x._node, _refreshed(key, concrete), node_of(value))
    write(x, new)


def _unwrap_key(key):
    return tuple(map(node_of, key)) if isinstance(key, tuple) else node_of(key)


def _refreshed(key, concrete):
    """``key``'s items unwrapped now (after a graph break rebound its arrays),
    with the masks ``_concrete_masks`` computed."""
    if not isinstance(key, tuple):
        return concrete
    return tuple(c if isinstance(k, Array) and k.dtype == np.bool_ else node_of(k)
                 for k, c in zip(key, concrete))


def in_place(x: Array, ufunc: str, make, other) -> Array:
    """``x <op>= other``, the result's node made by ``make()``: written to
    ``x`` with NumPy's ``out=x`` rules (the result broadcast to ``x``'s
    shape only; cast back with ``same_kind``) and NumPy's order of errors
    (read-only, then the cast, then the shapes), or, where ``x`` is a
    scalar, a new scalar, as Python rebinds NumPy's immutable scalars."""
    if is_scalar(x):
        return Array(make())
    _refuse_read_only(x, "output array is read-only")
    result = _cast_checked_first(x.dtype, ufunc, make, (x, other))
    V.check_out(x.shape, x.dtype, result, ufunc)
    if result.shape != x.shape:
        result = shapes.broadcast_to(result, x.shape)
    write(x, elementwise.astype(result, x.dtype))
    return x


def _refuse_read_only(x: Array, message: str) -> None:
    """NumPy's ValueError for a write into a read-only array or view, raised
    before anything else is checked (as NumPy checks it first)."""
    if _flags(root_of(x)) & READ_ONLY or (isinstance(x, View) and any(
            step[0] == "read-only" for step in x._steps)):
        raise ValueError(message)


def _cast_checked_first(dtype, ufunc: str, make, operands):
    """``make()``; where it fails on the shapes, NumPy's casting error comes
    first if the ufunc's result could not be cast to ``dtype`` (NumPy picks
    the loop, and so the result's dtype, before it broadcasts)."""
    try:
        return make()
    except ValueError:
        uf = getattr(np, ufunc, None)
        if isinstance(uf, np.ufunc):
            try:
                loop = uf.resolve_dtypes(tuple(map(_operand_dtype, operands))
                                         + (None,) * uf.nout)
            except Exception:          # noqa: BLE001  (NumPy's own error follows)
                loop = None
            if loop is not None and not np.can_cast(loop[-1], dtype, "same_kind"):
                raise TypeError(f"Cannot cast ufunc {ufunc!r} output from {loop[-1]!r} to "
                                f"{dtype!r} with casting rule 'same_kind'") from None
        raise


# the functions whose ``out=`` NumPy casts into with the "unsafe" rule (its
# reductions and accumulations: np.sum(floats, out=ints) truncates); ufuncs
# and the others cast with "same_kind"
UNSAFE_OUT = frozenset({"sum", "prod", "max", "min", "amax", "amin", "mean", "var", "any",
                        "all", "cumsum", "cumprod", "cumulative_sum", "cumulative_prod",
                        "nansum", "nanprod", "nanmax", "nanmin", "nancumsum", "nancumprod"})


def out_casting(name: str) -> str:
    """NumPy's casting rule for the ``out=`` of function ``name``."""
    return "unsafe" if name in UNSAFE_OUT else "same_kind"


def _operand_dtype(o):
    """What ``ufunc.resolve_dtypes`` takes for an operand: its dtype, or the
    Python type of a (weak) Python scalar."""
    if isinstance(o, (Array, N.Node, np.ndarray, np.generic)):
        return o.dtype
    if isinstance(o, (int, float, complex)) and not isinstance(o, bool):
        return type(o)
    return np.asarray(o).dtype


def ufunc_into(out, ufunc: str, where, make, operands=None) -> Array:
    """``np.<ufunc>(..., out=out, where=where)``: the result (``make(True)``,
    a node) written into the polyarray array ``out``, with NumPy's rules
    (shape, the ``same_kind`` cast, or ``out_casting``'s for reductions)
    and order of errors (read-only, then the cast where ``operands`` are
    given, then the shapes); where ``where`` is False, ``out`` keeps its
    values.  Returns ``out``, as NumPy does."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError(f"numpy.{ufunc}: out must be a tuple of one array here, "
                             f"got {len(out)}")
        (out,) = out
    if not isinstance(out, Array):
        raise TypeError(f"numpy.{ufunc}: out= must be a polyarray array when the result "
                        f"is lazy, got {type(out).__name__}")
    _refuse_read_only(out, "output array is read-only")
    if operands is None:
        result = make(True)
    else:                   # NumPy's casting error before its broadcasting error
        result = _cast_checked_first(out.dtype, ufunc, lambda: make(True), operands)
    V.check_out(out.shape, out.dtype, result, ufunc, out_casting(ufunc))
    if result.shape != out.shape:
        result = shapes.broadcast_to(result, out.shape)
    result = elementwise.astype(result, out.dtype)
    if where is not True:
        mask = where._node if isinstance(where, Array) else where
        result = elementwise.where(mask, result, out._node)
    write(out, result)
    return out


# reductions: NumPy wants their ``out=`` of the result's exact shape
_REDUCTIONS = frozenset({"sum", "prod", "max", "min", "any", "all", "mean", "var", "std",
                         "argmax", "argmin"})


def into_out(out, name: str, node) -> Array:
    """A result ``node`` as an Array, or written into ``out=`` as NumPy's
    function ``name`` writes it (a reduction's ``out`` must have its exact
    shape; casts by ``out_casting``), which is returned."""
    if out is None:
        return Array(node)
    if name in _REDUCTIONS and isinstance(out, Array) and out.shape != node.shape:
        if out.ndim != node.ndim:
            raise ValueError(f"output parameter for reduction operation {name} has the wrong "
                             f"number of dimensions: Found {out.ndim} but expected {node.ndim}")
        raise ValueError(f"output parameter for reduction operation {name} has a "
                         f"non-matching shape: {out.shape}, expected {node.shape}")
    return ufunc_into(out, name, True, lambda _: node)


def view_getitem(x: Array, key) -> Array:
    """``x[key]``: a view for basic keys, a scalar where every axis is
    indexed by an integer, a copy for advanced keys."""
    nodes = _unwrap_key(key)
    if V.is_advanced(nodes) or V.is_scalar_key(nodes, x.ndim):
        try:
            return Array(assign.getitem(x._node, nodes))
        except NonConcreteBooleanIndexError:
            if isinstance(nodes, N.Node) and KEEP_SELECTION:    # x[mask] kept in place
                kept = KEEP_SELECTION[0](x, nodes)
                if kept is not None:
                    return kept
            concrete = _concrete_masks(nodes)    # inside a pa.jit call: a graph break
            if concrete is None:
                raise
            return Array(assign.getitem(x._node, _refreshed(key, concrete)))
    return make_view(x, ("index", nodes))


def _concrete_masks(key):
    """``key`` with its lazy boolean masks computed now, as NumPy has them:
    at a graph break inside a pa.jit call, else on the default target where
    they read no placeholder; None where a mask cannot be computed."""
    items = key if isinstance(key, tuple) else (key,)
    out = []
    for item in items:
        if isinstance(item, N.Node) and item.dtype == np.bool_:
            value = eager.value_at_break(item, "a boolean mask index")
            if value is None:
                if N.placeholders([item]):
                    return None
                value = eager.value_now(item, lambda n: Array(n).evaluate())
            item = value
        out.append(item)
    return tuple(out) if isinstance(key, tuple) else out[0]


def permuted(x: Array, axes) -> Array:
    """``x`` with its axes permuted: a view."""
    return make_view(x, ("axes", tuple(int(a) for a in axes)))


def reshaped(x: Array, shape, order="C", always_view=False) -> Array:
    """``x.reshape(shape, order)``: a view where NumPy would give one (its
    memory reshaped without a copy), else a new array."""
    node = shapes.reshape(x._node, shape, order)     # NumPy's errors first
    step = ("reshape", node.shape, order)
    if always_view or V.reshapes_in_place(_layout(x), node.shape, order):
        return make_view(x, step)
    return Array(node)


def _layout(x: Array) -> np.ndarray:
    if isinstance(x, View):
        return V.layout(x._root_shape, x.dtype, x._root_strides, x._steps)
    return V.layout(x.shape, x.dtype, getattr(x, "_strides", None), ())
