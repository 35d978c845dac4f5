"""Polynomials and 1-D convolution: ``polyval`` (Horner's scheme, NumPy's
order of operations), ``vander`` (powers by repeated multiplication, as
NumPy's ``multiply.accumulate``), and ``convolve``/``correlate`` (a
product of polynomials and its adjoint: each output is a sum over the
overlap, one reduction over an index remap, never a stored matrix)."""
from __future__ import annotations

import operator

import numpy as np
import pymbolic.primitives as p

from ..ir import nodes as N
from ..ir.expr import binding_name, call, index_var, read
from .creation import as_node, full, zeros_like
from .dtypes import check_dtype
from .elementwise import apply_ufunc as U, astype
from .indexing import getitem
from .reductions import any as any_, sum as sum_
from .shapes import concatenate, expand_dims, flip


def polyval(p_, x) -> N.Node:
    """``y = y * x + c`` for each coefficient ``c`` of ``p`` (highest power
    first), from ``zeros_like(x)``."""
    coeffs, xs = as_node(p_), as_node(x)
    if coeffs.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    y = zeros_like(xs)
    for k in range(coeffs.shape[0]):
        y = U("add", U("multiply", y, xs), getitem(coeffs, (k,)))
    return y


def vander(x, N_=None, increasing=False) -> N.Node:
    """Columns ``x ** k``, each the last times ``x`` (NumPy's accumulate),
    highest power first unless ``increasing``."""
    xs = as_node(x)
    if xs.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = xs.shape[0] if N_ is None else operator.index(N_)
    dtype = check_dtype(np.promote_types(xs.dtype, int), "vander")
    xs = astype(xs, dtype)
    cols, col = [], None
    for k in range(n):
        col = full(xs.shape, 1, dtype) if k == 0 else xs if k == 1 else U("multiply", col, xs)
        cols.append(expand_dims(col, 1))
    if not cols:
        return full((xs.shape[0], 0), 0, dtype)
    out = concatenate(cols if increasing else cols[::-1], 1)
    return out


_MODES = ("valid", "same", "full")


def _mode(mode):
    if isinstance(mode, int) and not isinstance(mode, bool) and 0 <= mode <= 2:
        return _MODES[mode]
    if mode not in _MODES:
        raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
    return mode


def _vector(v):
    node = as_node(v)
    if node.ndim > 1:
        raise ValueError("object too deep for desired array")
    return expand_dims(node, 0) if node.ndim == 0 else node


def correlate(a, v, mode="valid") -> N.Node:
    """``c[k] = sum_n a[n + k] v[n]`` over the lags ``mode`` keeps (NumPy's
    ``correlate`` of real arrays, its lags and offsets for each mode)."""
    mode = _mode(mode)
    x, y = _vector(a), _vector(v)
    m, n = x.shape[0], y.shape[0]
    if m == 0:
        raise ValueError("a cannot be empty")
    if n == 0:
        raise ValueError("v cannot be empty")
    dtype = check_dtype(np.result_type(x.dtype, y.dtype), "correlate")
    x, y = astype(x, dtype), astype(y, dtype)
    full_len, short = m + n - 1, min(m, n)
    if mode == "full":
        length, offset = full_len, 0
    elif mode == "valid":
        length, offset = max(m, n) - short + 1, short - 1
    else:
        length = max(m, n)
        offset = (short - 1) // 2 if m >= n else full_len - length - (short - 1) // 2
    # terms[k, j] = a[k + offset + j - (n - 1)] * v[j], 0 outside a
    k, j = index_var(0), index_var(1)
    at = k + j + (offset - (n - 1))
    inside = call("logical_and", p.Comparison(at, ">=", 0), p.Comparison(at, "<", m))
    clamped = p.If(p.Comparison(at, "<", 0), 0, p.If(p.Comparison(at, ">", m - 1), m - 1, at))
    names = (binding_name(0), binding_name(1))
    zero = dtype.type(0)
    product = "logical_and" if dtype == np.bool_ else "multiply"
    value = call("where", inside, call(product, read(names[0], (clamped,)),
                                       read(names[1], (j,))), zero)
    terms = N.IndexLambda.make((length, n), dtype, value, ((names[0], x), (names[1], y)),
                               f"correlate[{mode}] terms")
    if dtype == np.bool_:
        return any_(terms, 1)
    return sum_(terms, 1, dtype)


def convolve(a, v, mode="full") -> N.Node:
    """``correlate(a, v[::-1])`` with the longer operand first (NumPy's
    ``convolve``)."""
    mode = _mode(mode)
    x, y = _vector(a), _vector(v)
    if x.shape[0] == 0:
        raise ValueError("a cannot be empty")
    if y.shape[0] == 0:
        raise ValueError("v cannot be empty")
    if y.shape[0] > x.shape[0]:
        x, y = y, x
    return correlate(x, flip(y, 0), mode)
