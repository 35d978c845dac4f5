"""``pa.add``, ``pa.minimum``, ...: ufunc objects, as NumPy's are.

NumPy code calls a ufunc's methods as often as the ufunc itself
(``np.minimum.outer(a, b)``, ``np.add.reduce(x)``, ``np.add.at(a, i, v)``),
so each of polyarray's elementwise functions is a ``ufunc``: calling it is
the function, and its methods follow NumPy's:

* ``outer(A, B)``: the ufunc of ``A[..., None, ...]`` and ``B``;
* ``reduce`` / ``accumulate``: the reductions and scans that compute them
  (``add`` -> ``sum``/``cumsum``, ``maximum`` -> ``max``, ``logical_or`` ->
  ``any``, ...); other ufuncs fold along the axis, one elementwise step per
  element, as NumPy's loop does (for short axes);
* ``at(a, indices, b)``: NumPy's unbuffered in-place update of the
  polyarray array ``a``: repeated indices apply once per occurrence, in
  order (as many update rounds as the most repeated index).

``nin``, ``nout``, ``nargs``, ``identity``, ``types`` and ``signature`` are
NumPy's own.  ``reduceat`` raises ``NotImplementedError``.
"""
from __future__ import annotations

import sys

import numpy as np

from .array import Array, ufunc_into

_REDUCTION = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
              "logical_and": "all", "logical_or": "any", "fmax": "nanmax", "fmin": "nanmin"}
_SCAN = {"add": "cumsum", "multiply": "cumprod"}
_FOLD_MAX = 64          # the longest axis folded one elementwise step per element


def _pa():
    return sys.modules["polyarray"]


class ufunc:                    # noqa: N801  (NumPy's name)
    """An elementwise function with NumPy's ufunc methods (see the module
    docstring); calling it is the function."""

    def __init__(self, function, numpy_ufunc: np.ufunc):
        self._function, self._numpy = function, numpy_ufunc
        self.__name__ = self.__qualname__ = function.__name__
        self.__doc__ = function.__doc__
        self.__wrapped__ = function

    def __call__(self, *args, **kwargs):
        if not kwargs and any(type(a).__name__ == "Selected" for a in args):
            from .masked import apply_ufunc         # x[mask] kept in place
            kept = apply_ufunc(self._numpy, args)
            if kept is not None:
                return kept
        return self._function(*args, **kwargs)

    def __repr__(self):
        return f"<polyarray ufunc '{self.__name__}'>"

    def __getattr__(self, name):
        if name in ("nin", "nout", "nargs", "identity", "types", "ntypes", "signature"):
            return getattr(self._numpy, name)
        raise AttributeError(f"polyarray ufunc {self.__name__!r} has no attribute {name!r}")

    # -- methods ------------------------------------------------------------------
    def outer(self, A, B, /, **kwargs):
        """``ufunc(A[..., None...], B)``: every pair (``np.ufunc.outer``)."""
        self._binary("outer")
        pa = _pa()
        a, b = pa.asarray(A), pa.asarray(B)
        return self(pa.reshape(a, a.shape + (1,) * b.ndim), b, **kwargs)

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False,
               initial=np._NoValue, where=True):
        """``array`` reduced by the ufunc along ``axis`` (``np.ufunc.reduce``)."""
        self._binary("reduce")
        pa = _pa()
        name = _REDUCTION.get(self.__name__)
        if name is not None:
            kwargs = {"axis": axis, "keepdims": keepdims}
            if dtype is not None and name in ("sum", "prod"):
                kwargs["dtype"] = dtype
            if initial is not np._NoValue:
                kwargs["initial"] = initial
            if where is not True:
                kwargs["where"] = where
            result = getattr(pa, name)(array, **kwargs)
            if dtype is not None and "dtype" not in kwargs:
                result = result.astype(dtype)
            return _into(out, result, self.__name__)
        if where is not True or initial is not np._NoValue:
            raise NotImplementedError(f"polyarray: {self.__name__}.reduce with where= or "
                                      "initial= is not supported")
        x = pa.asarray(array)
        axes = tuple(range(x.ndim)) if axis is None else \
            (axis if isinstance(axis, tuple) else (axis,))
        axes = tuple(sorted((a % x.ndim for a in axes), reverse=True))
        for a in axes:
            x = self._fold(x, a, keepdims, dtype)
        return _into(out, x, self.__name__)

    def accumulate(self, array, axis=0, dtype=None, out=None):
        """The running ufunc along ``axis`` (``np.ufunc.accumulate``)."""
        self._binary("accumulate")
        pa = _pa()
        name = _SCAN.get(self.__name__)
        if name is not None:
            return _into(out, getattr(pa, name)(array, axis=axis, dtype=dtype), self.__name__)
        x = pa.asarray(array)
        axis %= max(x.ndim, 1)
        n = x.shape[axis]
        if n > _FOLD_MAX:
            raise NotImplementedError(self._too_long("accumulate", n))
        take = lambda i: pa.take(x, pa.asarray([i]), axis=axis)     # noqa: E731
        parts, acc = [], None
        for i in range(n):
            acc = take(i) if acc is None else self(acc, take(i))
            parts.append(acc if dtype is None else acc.astype(dtype))
        return _into(out, pa.concatenate(parts, axis=axis), self.__name__)

    def at(self, a, indices, b=None, /):
        """``a[indices] = ufunc(a[indices], b)`` with every repeated index
        applied once per occurrence, in order (``np.ufunc.at``); ``a`` is a
        polyarray array, written in place."""
        pa = _pa()
        if not isinstance(a, Array):
            raise TypeError(f"{self.__name__}.at: the array to update must be a polyarray "
                            f"array (it is written in place), got {type(a).__name__}")
        if (b is None) != (self._numpy.nin == 1):
            raise TypeError(f"{self.__name__}.at takes {'no' if self._numpy.nin == 1 else 'a'} "
                            "second operand")
        key = indices if isinstance(indices, tuple) else (indices,)
        if any(isinstance(k, Array) for k in key):
            raise NotImplementedError(f"{self.__name__}.at with lazy indices is not supported; "
                                      "pass the indices as a NumPy array")
        region_shape = np.empty(a.shape, np.bool_)[key].shape     # NumPy's IndexErrors
        advanced = [np.asarray(k) for k in key if not (k is None or k is Ellipsis
                                                      or isinstance(k, slice))]
        rounds = _rounds(key, advanced, a.shape)
        values = None if b is None else pa.broadcast_to(pa.asarray(b), region_shape)
        for sub_key, picks in rounds:
            current = a[sub_key]
            if values is None:
                new = self(current)
            else:
                v = values if picks is None else pa.take(values, pa.asarray(picks),
                                                         axis=_first_advanced_axis(key))
                new = self(current, v)
            a[sub_key] = new.astype(a.dtype, casting="unsafe") if new.dtype != a.dtype \
                else new

    def reduceat(self, *args, **kwargs):
        """Not supported (``NotImplementedError``)."""
        raise NotImplementedError(f"polyarray: {self.__name__}.reduceat is not supported; "
                                  f"use {self.__name__}.reduce on slices")

    # -- helpers ------------------------------------------------------------------
    def _binary(self, method):
        if self._numpy.nin != 2:
            raise ValueError(f"{method} only supported for binary functions")

    def _too_long(self, method, n):
        return (f"polyarray: {self.__name__}.{method} over an axis of {n} elements is not "
                f"supported (it folds one step per element, up to {_FOLD_MAX}); NumPy's "
                f"add, multiply, maximum, minimum, logical_and, logical_or have kernels")

    def _fold(self, x, axis, keepdims, dtype):
        pa = _pa()
        n = x.shape[axis]
        if n == 0:
            if self._numpy.identity is None:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} "
                                 "which has no identity")
            shape = x.shape[:axis] + ((1,) if keepdims else ()) + x.shape[axis + 1:]
            return pa.full(shape, self._numpy.identity, dtype or x.dtype)
        if n > _FOLD_MAX:
            raise NotImplementedError(self._too_long("reduce", n))
        acc = None
        for i in range(n):
            item = pa.take(x, pa.asarray([i]), axis=axis)
            acc = item if acc is None else self(acc, item)
        if dtype is not None:
            acc = acc.astype(dtype)
        return acc if keepdims else pa.squeeze(acc, axis=axis)


def _into(out, result, name):
    if out is None:
        return result
        return ufunc_into(out, name, True, lambda _: result.node)


def _first_advanced_axis(key):
    for d, k in enumerate(key):
        if not (k is None or k is Ellipsis or isinstance(k, slice)):
            return d
    return 0


def _rounds(key, advanced, shape):
    """[(key, positions of the values it takes)]: one round per occurrence
    of the most repeated index, each round's indices distinct, in NumPy's
    order.  ``positions`` None: all values, one round."""
    if not advanced:
        return [(key, None)]
    arrays = np.broadcast_arrays(*advanced)
    if arrays[0].ndim != 1 or len(advanced) != len(arrays):
        flat = [a.ravel() for a in arrays]
    else:
        flat = arrays
    if any(a.dtype == np.bool_ for a in advanced):
        return [(key, None)]                     # a mask selects each element once
    dims = [shape[d] for d, k in enumerate(key)
            if not (k is None or k is Ellipsis or isinstance(k, slice))][:len(flat)]
    linear = np.ravel_multi_index([np.asarray(a) % n for a, n in zip(flat, dims)], dims)
    if len(np.unique(linear)) == linear.size:
        return [(key, None)]
    rank = np.zeros(linear.size, np.int64)
    seen = {}
    for i, v in enumerate(linear.tolist()):
        rank[i] = seen.get(v, 0)
        seen[v] = rank[i] + 1
    out = []
    for r in range(int(rank.max()) + 1):
        picks = np.nonzero(rank == r)[0]
        sub = []
        j = 0
        for k in key:
            if k is None or k is Ellipsis or isinstance(k, slice):
                sub.append(k)
            else:
                sub.append(np.asarray(flat[j])[picks])
                j += 1
        out.append((tuple(sub), picks))
    return out
