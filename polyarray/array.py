"""``pa.Array``: the lazy, NumPy-like handle users hold.

An Array wraps one DAG node.  Its shape and dtype are known at once; every
operator builds a new node.  ``==`` and friends are elementwise, as in NumPy;
structural identity of two expressions is ``a.node is b.node`` (nodes are
interned, see :mod:`polyarray.nodes`).
"""
from __future__ import annotations

import numpy as np

from .codegen.ir import nodes as N


class Array:
    __slots__ = ("_node", "__weakref__")
    # NumPy must hand mixed operations (``ndarray + Array``) to us.
    __array_ufunc__ = None

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

    def __bool__(self):
        raise TypeError(
            "the truth value of a lazy polyarray array is unknown until it is "
            "evaluated; use pa.where(...) to select, or evaluate it first "
            "(bool(x.to_numpy(...)))")

    def _no_concrete(self, what):
        raise TypeError(f"{what}() of a lazy polyarray array needs its value; "
                        "evaluate it first (e.g. x.to_numpy(...))")

    def __float__(self):
        self._no_concrete("float")

    def __int__(self):
        self._no_concrete("int")

    def __index__(self):
        self._no_concrete("index")

    def __setitem__(self, key, value):
        raise TypeError("polyarray arrays are immutable expressions; build a "
                        "new array instead, e.g. pa.where(mask, value, x)")

    def __repr__(self):
        from .codegen.ir.printing import describe
        return describe(self._node)

    # -- evaluation ------------------------------------------------------
    def evaluate(self, target=None, /, **bindings):
        """Evaluate on ``target`` (default: the current default target)."""
        from .program import compile as _compile
        return _compile(self, target=target)(**bindings)

    def to_numpy(self, /, **bindings) -> np.ndarray:
        """Evaluate with the NumPy reference target."""
        return self.evaluate("numpy", **bindings)

    # -- arithmetic ------------------------------------------------------
    def _bin(name, reflected=False):
        def method(self, other):
            from .elementwise import apply_ufunc
            if reflected:
                return apply_ufunc(name, other, self)
            return apply_ufunc(name, self, other)
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
        from .elementwise import apply_ufunc
        # ndarray.__pow__ turns ``** 2`` into np.square (bool ** 2 -> int8)
        if type(other) is int and other == 2:
            return apply_ufunc("square", self)
        return apply_ufunc("power", self, other)          # elementwise __eq__: use .node as a dict key

    def __neg__(self):
        from .elementwise import apply_ufunc
        return apply_ufunc("negative", self)

    def __pos__(self):
        from .elementwise import apply_ufunc
        return apply_ufunc("positive", self)

    def __abs__(self):
        from .elementwise import apply_ufunc
        return apply_ufunc("absolute", self)

    def __invert__(self):
        from .elementwise import apply_ufunc
        return apply_ufunc("invert", self)

    def __matmul__(self, other):
        from .linalg import matmul
        return matmul(self, other)

    def __rmatmul__(self, other):
        from .linalg import matmul
        return matmul(other, self)

    # -- methods mirroring ndarray ---------------------------------------
    def astype(self, dtype):
        from .elementwise import astype
        return astype(self, dtype)

    def __getitem__(self, key):
        from .indexing import getitem
        return getitem(self, key)

    @property
    def T(self):
        from .shapes import transpose
        return transpose(self)

    def transpose(self, *axes):
        from .shapes import transpose
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return transpose(self, axes or None)

    def reshape(self, *shape, order="C"):
        from .shapes import reshape
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return reshape(self, tuple(shape), order=order)

    def ravel(self):
        from .shapes import ravel
        return ravel(self)

    flatten = ravel

    def squeeze(self, axis=None):
        from .shapes import squeeze
        return squeeze(self, axis)

    def swapaxes(self, axis1, axis2):
        from .shapes import swapaxes
        return swapaxes(self, axis1, axis2)

    def clip(self, min=None, max=None):
        from .elementwise import clip
        return clip(self, min, max)

    def round(self, decimals=0):
        from .elementwise import round as _round
        return _round(self, decimals)

    def _red(name):
        def method(self, axis=None, keepdims=False, **kw):
            from . import reductions
            return getattr(reductions, name)(self, axis=axis, keepdims=keepdims, **kw)
        method.__name__ = name
        return method

    sum, prod, mean = _red("sum"), _red("prod"), _red("mean")
    max, min, any, all = _red("max"), _red("min"), _red("any"), _red("all")
    var, std = _red("var"), _red("std")
    del _red

    def argmax(self, axis=None):
        from .reductions import argmax
        return argmax(self, axis)

    def argmin(self, axis=None):
        from .reductions import argmin
        return argmin(self, axis)

    def dot(self, other):
        from .linalg import dot
        return dot(self, other)
