"""Evaluate an IndexLambda's pymbolic expression with NumPy.

Index variables become broadcastable ``arange``s.  A read whose indices are
affine in the index variables (transpose, broadcast, slices, flips) becomes a
zero-copy strided view; any other read (gathers, div/mod) falls back to
NumPy fancy indexing.  Value calls map to the NumPy ufunc of the same name,
so results follow NumPy's semantics exactly.
"""
from __future__ import annotations

import numbers

import numpy as np
import pymbolic.primitives as p
from numpy.lib.stride_tricks import as_strided
from pymbolic.mapper import Mapper

from polyarray.codegen.user_functions import is_user_function
from .custom import call_elementwise


def index_var_number(name: str):
    if name.startswith("_") and name[1:].isdigit():
        return int(name[1:])
    return None


def affine(expr, nvars):
    """``(constant, [coeff per index var])`` if ``expr`` is affine, else None."""
    if isinstance(expr, (numbers.Integral, np.integer)) and not isinstance(expr, bool):
        return int(expr), [0] * nvars
    if isinstance(expr, p.Variable):
        k = index_var_number(expr.name)
        if k is None:
            return None
        coeffs = [0] * nvars
        coeffs[k] = 1
        return 0, coeffs
    if isinstance(expr, p.Sum):
        const, coeffs = 0, [0] * nvars
        for child in expr.children:
            a = affine(child, nvars)
            if a is None:
                return None
            const += a[0]
            coeffs = [x + y for x, y in zip(coeffs, a[1])]
        return const, coeffs
    if isinstance(expr, p.Product):
        scale, var_part = 1, None
        for child in expr.children:
            if isinstance(child, (numbers.Integral, np.integer)):
                scale *= int(child)
            elif var_part is None:
                var_part = affine(child, nvars)
                if var_part is None:
                    return None
            else:
                return None
        if var_part is None:
            return scale, [0] * nvars
        return scale * var_part[0], [scale * c for c in var_part[1]]
    return None


class NumpyExprEvaluator(Mapper):
    def __init__(self, shape, env):
        self.shape = shape
        self.env = env

    def map_constant(self, c):
        return c

    def map_variable(self, v):
        k = index_var_number(v.name)
        if k is not None:
            shape = [1] * len(self.shape)
            shape[k] = self.shape[k]
            return np.arange(self.shape[k], dtype=np.int64).reshape(shape)
        return self.env[v.name]

    def map_subscript(self, s):
        arr = self.env[s.aggregate.name]
        index = s.index if isinstance(s.index, tuple) else (s.index,)
        nvars = len(self.shape)
        maps = [affine(i, nvars) for i in index]
        if all(m is not None for m in maps):
            return self._strided_view(arr, maps)
        idx = tuple(self.rec(i) for i in index)
        return arr[idx]

    def _strided_view(self, arr, maps):
        offset = sum(m[0] * s for m, s in zip(maps, arr.strides))
        shape, strides = [], []
        for k, n in enumerate(self.shape):
            stride = sum(m[1][k] * s for m, s in zip(maps, arr.strides))
            used = any(m[1][k] for m in maps)
            shape.append(n if used else 1)
            strides.append(stride if used else 0)
        start = offset // arr.itemsize
        base = arr.reshape(-1)[start:start + 1] if arr.size else arr.reshape(-1)
        return as_strided(base, shape, strides, writeable=False)

    def map_call(self, c):
        name = c.function.name
        args = [self.rec(a) for a in c.parameters]
        if name.startswith("cast_"):
            return np.asarray(args[0]).astype(np.dtype(name[5:]))
        if name == "where":
            return np.where(*args)
        if name == "checked_index":
            return checked_index(*args)
        if name == "complex":           # parts joined exactly (no arithmetic)
            re, im = np.broadcast_arrays(*args)
            out = np.empty(re.shape, np.result_type(re.dtype, np.complex64))
            out.real, out.imag = re, im
            return out
        if is_user_function(name):      # pa.elementwise_kernel: the user's reference
            return call_elementwise(name, args)
        return getattr(np, name)(*args)

    # index arithmetic (int64)
    def map_sum(self, e):
        out = 0
        for child in e.children:
            out = out + self.rec(child)
        return out

    def map_product(self, e):
        out = 1
        for child in e.children:
            out = out * self.rec(child)
        return out

    def map_floor_div(self, e):
        return np.floor_divide(self.rec(e.numerator), self.rec(e.denominator))

    def map_remainder(self, e):
        return np.remainder(self.rec(e.numerator), self.rec(e.denominator))

    _CMP = {"<": np.less, "<=": np.less_equal, ">": np.greater,
            ">=": np.greater_equal, "==": np.equal, "!=": np.not_equal}

    def map_comparison(self, e):
        return self._CMP[e.operator](self.rec(e.left), self.rec(e.right))

    def map_logical_and(self, e):
        return np.logical_and.reduce([self.rec(c) for c in e.children])

    def map_logical_or(self, e):
        return np.logical_or.reduce([self.rec(c) for c in e.children])

    def map_logical_not(self, e):
        return np.logical_not(self.rec(e.child))

    def map_if(self, e):
        return np.where(self.rec(e.condition), self.rec(e.then), self.rec(e.else_))


def checked_index(raw, n, axis):
    """A gather's index into an axis of size ``n``: negative ones count from
    the end; any other out of range raises NumPy's IndexError, naming the
    index as the user passed it."""
    raw = np.asarray(raw)
    wide = raw.astype(np.int64) if raw.dtype != np.uint64 else raw
    bad = (wide >= n) | ((wide < -n) if raw.dtype.kind == "i" else False)
    if np.any(bad):
        raise IndexError(f"index {raw[bad].flat[0]} is out of bounds for axis {int(axis)} "
                         f"with size {int(n)}")
    if raw.dtype.kind == "u":
        return wide.astype(np.int64)
    return np.where(wide < 0, wide + n, wide)


def evaluate_index_lambda(shape, dtype, expr, env) -> np.ndarray:
    if 0 in shape:
        return np.empty(shape, dtype)
    value = NumpyExprEvaluator(shape, env).rec(expr)
    value = np.asarray(value)
    if value.dtype != dtype:
        raise AssertionError(f"internal dtype error: expression gave {value.dtype}, "
                             f"node says {dtype}: {expr}")
    return np.array(np.broadcast_to(value, shape), order="C")
