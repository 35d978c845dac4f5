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
from .ops import arrange, eager, elementwise, indexing, linalg, matrices, ordering
from .ops import reductions, scans, shapes, ufuncs
from .ops.axes import no_out
from .ops.reductions import NoValue


def node_of(x):
    """The node of a ``pa.Array``; anything else unchanged."""
    return x._node if isinstance(x, Array) else x


def _same_or_new(x, node):
    """``x`` itself where an operation left its node unchanged (``clip``
    with no bounds, ``round`` of integers), as NumPy-style code expects."""
    return x if isinstance(x, Array) and x._node is node else Array(node)


class Array:
    __slots__ = ("_node", "__weakref__")

    def __init__(self, node: N.Node):
        if not isinstance(node, N.Node):
            raise TypeError("Array wraps a polyarray node; use pa.array() "
                            "or pa.asarray() to make one from data")
        self._node = node

    # -- metadata, concrete at once --------------------------------------
    @property
    def node(self) -> N.Node:
        return self._node

    @property
    def shape(self) -> tuple:
        return self._node.shape

    @property
    def dtype(self) -> np.dtype:
        return self._node.dtype

    @property
    def ndim(self) -> int:
        return len(self._node.shape)

    @property
    def size(self) -> int:
        return self._node.size

    @property
    def itemsize(self) -> int:
        return self._node.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (0-d array)")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    # __bool__, __float__, __int__, __index__, __array__, __array_ufunc__,
    # __array_function__, item, tolist, __dlpack__ ...: polyarray.protocols
    # (they evaluate, so they live above polyarray.program)

    def __setitem__(self, key, value):
        raise TypeError("polyarray arrays are immutable expressions; build a "
                        "new array instead, e.g. pa.where(mask, value, x)")

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
    __hash__ = None          # elementwise __eq__: use ``.node`` as a dict key

    def __pow__(self, other):
        # ndarray.__pow__ turns ``** 2`` into np.square (bool ** 2 -> int8)
        if type(other) is int and other == 2:
            return Array(elementwise.apply_ufunc("square", self._node))
        return Array(elementwise.apply_ufunc("power", self._node, node_of(other)))

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

    def __matmul__(self, other):
        return Array(linalg.matmul(self._node, node_of(other)))

    def __rmatmul__(self, other):
        return Array(linalg.matmul(node_of(other), self._node))

    # -- methods mirroring ndarray (NumPy's signatures; ``out`` must be None)
    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """``copy`` is accepted: a lazy array is never written in place."""
        if not np.can_cast(self.dtype, dtype, casting):
            raise TypeError(f"Cannot cast array data from {self.dtype!r} to "
                            f"{np.dtype(dtype)!r} according to the rule {casting!r}")
        return Array(elementwise.astype(self._node, dtype))

    def __getitem__(self, key):
        key = tuple(map(node_of, key)) if isinstance(key, tuple) else node_of(key)
        return Array(indexing.getitem(self._node, key))

    @property
    def T(self):
        return Array(shapes.transpose(self._node))

    @property
    def mT(self):
        return Array(shapes.matrix_transpose(self._node))

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return Array(shapes.transpose(self._node, axes or None))

    def reshape(self, *shape, order="C", copy=None):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return Array(shapes.reshape(self._node, tuple(shape),
                                    order="C" if order == "A" else order))

    def ravel(self, order="C"):
        return Array(shapes.ravel(self._node, order))

    flatten = ravel

    def squeeze(self, axis=None):
        return Array(shapes.squeeze(self._node, axis))

    def swapaxes(self, axis1, axis2):
        return Array(shapes.swapaxes(self._node, axis1, axis2))

    def clip(self, min=None, max=None, out=None, **kwargs):    # noqa: A002
        no_out(out, "clip")
        if kwargs:
            raise TypeError(f"clip: unsupported keyword arguments {sorted(kwargs)}")
        return _same_or_new(self, elementwise.clip(self._node, node_of(min), node_of(max)))

    def round(self, decimals=0, out=None):
        no_out(out, "round")
        return _same_or_new(self, elementwise.round(self._node, decimals))

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue,
            where=True):
        no_out(out, "sum")
        return Array(reductions.sum(self._node, axis, dtype, keepdims, initial,
                                    node_of(where)))

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=NoValue,
             where=True):
        no_out(out, "prod")
        return Array(reductions.prod(self._node, axis, dtype, keepdims, initial,
                                     node_of(where)))

    def max(self, axis=None, out=None, keepdims=False, initial=NoValue, where=True):
        no_out(out, "max")
        return Array(reductions.max(self._node, axis, keepdims, initial, node_of(where)))

    def min(self, axis=None, out=None, keepdims=False, initial=NoValue, where=True):
        no_out(out, "min")
        return Array(reductions.min(self._node, axis, keepdims, initial, node_of(where)))

    def any(self, axis=None, out=None, keepdims=False, *, where=True):
        no_out(out, "any")
        return Array(reductions.any(self._node, axis, keepdims, node_of(where)))

    def all(self, axis=None, out=None, keepdims=False, *, where=True):
        no_out(out, "all")
        return Array(reductions.all(self._node, axis, keepdims, node_of(where)))

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
        no_out(out, "mean")
        return Array(reductions.mean(self._node, axis, dtype, keepdims, node_of(where)))

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
            correction=NoValue):
        no_out(out, "var")
        return Array(reductions.var(self._node, axis, dtype, ddof, keepdims, node_of(where),
                                    correction))

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
            correction=NoValue):
        no_out(out, "std")
        return Array(reductions.std(self._node, axis, dtype, ddof, keepdims, node_of(where),
                                    correction))

    def argmax(self, axis=None, out=None, *, keepdims=False):
        no_out(out, "argmax")
        return Array(reductions.argmax(self._node, axis, keepdims))

    def argmin(self, axis=None, out=None, *, keepdims=False):
        no_out(out, "argmin")
        return Array(reductions.argmin(self._node, axis, keepdims))

    def dot(self, b, out=None):
        no_out(out, "dot")
        return Array(linalg.dot(self._node, node_of(b)))

    def take(self, indices, axis=None, out=None, mode="raise"):
        no_out(out, "take")
        return Array(indexing.take(self._node, node_of(indices), axis, mode))

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return Array(matrices.diagonal(self._node, offset, axis1, axis2))

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        no_out(out, "trace")
        return Array(matrices.trace(self._node, offset, axis1, axis2, dtype))

    def repeat(self, repeats, axis=None):
        return Array(arrange.repeat(self._node, node_of(repeats), axis))

    def nonzero(self):
        """Eager, as ``pa.nonzero`` (the result's shape depends on the values)."""
        values = eager.concrete(self._node, "nonzero", lambda n: Array(n).evaluate())
        return tuple(Array(n) for n in eager.nonzero(values))

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        """NumPy's ``ndarray.sort`` sorts in place; polyarray arrays are immutable."""
        raise TypeError("polyarray arrays are immutable, so Array.sort cannot sort in "
                        "place: use pa.sort(x, axis=...), which returns a sorted array")

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        return Array(ordering.argsort(self._node, axis, kind, order, stable=stable))

    def cumsum(self, axis=None, dtype=None, out=None):
        return Array(scans.cumsum(self._node, axis, dtype, out))

    def cumprod(self, axis=None, dtype=None, out=None):
        return Array(scans.cumprod(self._node, axis, dtype, out))
