"""Diagonals, triangles, cross and dot products of vectors, and norms:
``diag``, ``diagonal``, ``trace``, ``tril``, ``triu``, ``cross``, ``vecdot``,
``norm``, ``vector_norm``, ``matrix_norm`` (NumPy's formulas, from
``numpy/linalg/_linalg.py`` and ``numpy/_core/numeric.py``), and the
stricter ``numpy.linalg`` spellings of ``outer`` and ``cross``.

Matrix norms ``ord`` 2, -2 and 'nuc' take the singular values
(``solvers.svd``), as NumPy's do.
"""
from __future__ import annotations

import math
import operator

import numpy as np
import pymbolic.primitives as p

from ..ir import nodes as N
from ..ir.expr import binding_name, broadcast_indices, call, index_var, read
from .axes import axis_index, normalize_axis_index, normalize_axis_tuple
from .complex import conj, imag, real
from .creation import array, as_node
from .elementwise import apply_ufunc as U, astype, broadcast_shapes
from .linalg import einsum, outer
from .reductions import max as max_, min as min_, sum as sum_
from .solvers import svd
from .shapes import concatenate, expand_dims, moveaxis, remap, reshape, transpose


def diagonal(a, offset=0, axis1=0, axis2=1) -> N.Node:
    node = as_node(a)
    if node.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    a1 = normalize_axis_index(axis1, node.ndim, "axis1")
    a2 = normalize_axis_index(axis2, node.ndim, "axis2")
    if a1 == a2:
        raise ValueError("axis1 and axis2 cannot be the same")
    k = operator.index(offset)
    n1, n2 = node.shape[a1], node.shape[a2]
    r0, c0 = (0, k) if k >= 0 else (-k, 0)
    length = max(0, min(n1 - r0, n2 - c0))
    rest = [d for d in range(node.ndim) if d not in (a1, a2)]
    t = index_var(len(rest))
    idx = [None] * node.ndim
    for out_d, d in enumerate(rest):
        idx[d] = index_var(out_d)
    idx[a1], idx[a2] = t + r0 if r0 else t, t + c0 if c0 else t
    shape = tuple(node.shape[d] for d in rest) + (length,)
    return remap(node, shape, idx, f"diagonal[{k}, {a1}, {a2}]")


def trace(a, offset=0, axis1=0, axis2=1, dtype=None) -> N.Node:
    return sum_(diagonal(a, offset, axis1, axis2), -1, dtype)


def diag(v, k=0) -> N.Node:
    """1-d: a square matrix with ``v`` on diagonal ``k``; 2-d: that diagonal."""
    node = as_node(v)
    k = operator.index(k)
    if node.ndim == 2:
        return diagonal(node, k)
    if node.ndim != 1:
        raise ValueError(f"Input must be 1- or 2-d (got shape {node.shape}).")
    n = node.shape[0]
    size = n + abs(k)
    i, j = index_var(0), index_var(1)
    src = i if k >= 0 else j
    name = binding_name(0)
    zero = node.dtype.type(0)
    if n == 0:
        expr = zero
    else:       # read in range everywhere; the select keeps the diagonal
        src = p.If(p.Comparison(src, "<", n - 1), src, n - 1) if n > 1 else 0
        expr = call("where", p.Comparison(j - i, "==", k), read(name, (src,)), zero)
    return N.IndexLambda.make((size, size), node.dtype, expr, ((name, node),), f"diag(k={k})")


def _triangle(m, k, lower):
    node = as_node(m)
    if node.ndim == 0:
        raise ValueError(f"{'tril' if lower else 'triu'}: the array must be at least 1-d")
    k = operator.index(k)
    rows, cols = node.shape[-2:] if node.ndim >= 2 else node.shape * 2
    shape = broadcast_shapes(node.shape, (rows, cols))
    nd = len(shape)
    i, j = index_var(nd - 2), index_var(nd - 1)
    keep = p.Comparison(j - i, "<=", k) if lower else p.Comparison(j - i, ">=", k)
    name = binding_name(0)
    expr = call("where", keep, read(name, broadcast_indices(node.shape, shape)),
                node.dtype.type(0))
    return N.IndexLambda.make(shape, node.dtype, expr, ((name, node),),
                              f"{'tril' if lower else 'triu'}(k={k})")


def tril(m, k=0) -> N.Node:
    return _triangle(m, k, True)


def triu(m, k=0) -> N.Node:
    return _triangle(m, k, False)


def _component(node, c):
    """``node[..., c]``."""
    idx = [index_var(d) for d in range(node.ndim - 1)] + [c]
    return remap(node, node.shape[:-1], idx, f"component[{c}]")


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None) -> N.Node:
    """NumPy's ``cross`` of 3-vectors, component by component.  2-vectors,
    deprecated in NumPy 2.0 and refused by NumPy 2.5, are refused with its
    error (the same answer on every NumPy)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    na, nb = as_node(a), as_node(b)
    if na.ndim < 1 or nb.ndim < 1:
        raise ValueError("At least one array has zero dimension")
    na = moveaxis(na, normalize_axis_index(axisa, na.ndim, "axisa"), -1)
    nb = moveaxis(nb, normalize_axis_index(axisb, nb.ndim, "axisb"), -1)
    da, db = na.shape[-1], nb.shape[-1]
    if da not in (2, 3) or db not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n"
                         f"(dimension must be 2 or 3), got {da} and {db}")
    if da == 2 or db == 2:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, "
                         f"but they are {da} and {db} dimensional instead.")
    shape = broadcast_shapes(na.shape[:-1], nb.shape[:-1], what="cross: vectors")
    axisc = normalize_axis_index(axisc, len(shape) + 1, "axisc")
    dtype = np.promote_types(na.dtype, nb.dtype)
    A = [astype(_component(na, c), dtype) for c in range(3)]
    B = [astype(_component(nb, c), dtype) for c in range(3)]

    def m(x, y):
        return astype(U("multiply", x, y), dtype)

    def sub(x, y):
        return astype(U("subtract", x, y), dtype)
    comps = [sub(m(A[1], B[2]), m(A[2], B[1])), sub(m(A[2], B[0]), m(A[0], B[2])),
             sub(m(A[0], B[1]), m(A[1], B[0]))]
    from .shapes import broadcast_to
    comps = [expand_dims(broadcast_to(c, shape), -1) for c in comps]
    return moveaxis(concatenate(comps, -1), -1, axisc)


def vecdot(x1, x2, axis=-1) -> N.Node:
    """``sum(x1 * x2)`` over ``axis`` (of each operand), one einsum; the other
    axes broadcast."""
    a, b = as_node(x1), as_node(x2)
    for k, n in enumerate((a, b)):
        if n.ndim == 0:
            raise ValueError(f"vecdot: Input operand {k} does not have enough dimensions "
                             "(has 0, gufunc core with signature (n),(n)->() requires 1)")
    a = moveaxis(a, normalize_axis_index(axis, a.ndim), -1)
    b = moveaxis(b, normalize_axis_index(axis, b.ndim), -1)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"vecdot: Input operand 1 has a mismatch in its core dimension 0, "
                         f"with gufunc signature (n),(n)->() (size {b.shape[-1]} is "
                         f"different from {a.shape[-1]}); shapes {a.shape} and {b.shape}")
    if a.dtype.kind == "c":         # NumPy's vecdot conjugates x1
        a = conj(a)
    return einsum("...i,...i->...", a, b)


def _inexact(x):
    node = as_node(x)
    return node if node.dtype.kind in "fc" else astype(node, np.float64)


def _sqrt_sumsq(x, axis, keepdims=False):
    """``sqrt(sum(|x| ** 2))``: a complex ``x``'s parts squared (NumPy's)."""
    if x.dtype.kind == "c":
        re, im = real(x), imag(x)
        sq = U("add", U("multiply", re, re), U("multiply", im, im))
    else:
        sq = U("multiply", x, x)
    return U("sqrt", sum_(sq, axis, keepdims=keepdims))


def _is(ord, value):
    return not isinstance(ord, str) and ord is not None and ord == value


def norm(x, ord=None, axis=None, keepdims=False) -> N.Node:
    node = _inexact(x)
    nd = node.ndim
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (_is(ord, 2) and nd == 1):
            r = _sqrt_sumsq(reshape(node, (-1,)), None)
            return reshape(r, (1,) * nd) if keepdims else r
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        axis = (axis_index(axis),)
    if len(axis) == 1:
        return _vector_norm(node, ord, axis, keepdims)
    if len(axis) != 2:
        raise ValueError("Improper number of dimensions to norm.")
    row, col = (normalize_axis_index(a, nd) for a in axis)
    if row == col:
        raise ValueError("Duplicate axes given.")
    absx = U("absolute", node)
    if _is(ord, 2) or _is(ord, -2) or ord == "nuc":
        # NumPy's _multi_svd_norm: the singular values of the (row, col) matrices
        rest = [a for a in range(nd) if a not in (row, col)]
        s = svd(transpose(node, rest + [row, col]), compute_uv=False)[0]
        fn = sum_ if ord == "nuc" else max_ if ord == 2 else min_
        ret = fn(s, -1)
    elif _is(ord, 1) or _is(ord, -1):
        fn = max_ if ord == 1 else min_
        ret = fn(sum_(absx, row), col - 1 if col > row else col)
    elif _is(ord, math.inf) or _is(ord, -math.inf):
        fn = max_ if ord > 0 else min_
        ret = fn(sum_(absx, col), row - 1 if row > col else row)
    elif ord in (None, "fro", "f"):
        ret = _sqrt_sumsq(node, (row, col))
    else:
        raise ValueError(f"Invalid norm order {ord!r} for matrices.")
    if keepdims:
        ret = expand_dims(ret, tuple(sorted((row, col))))
    return ret


def _vector_norm(node, ord, axis, keepdims):
    absx = U("absolute", node)
    if _is(ord, math.inf):
        return max_(absx, axis, keepdims)
    if _is(ord, -math.inf):
        return min_(absx, axis, keepdims)
    if _is(ord, 0):
        return sum_(astype(U("not_equal", node, 0), absx.dtype), axis, keepdims=keepdims)
    if _is(ord, 1):
        return sum_(absx, axis, keepdims=keepdims)
    if ord is None or _is(ord, 2):
        return _sqrt_sumsq(node, axis, keepdims)
    try:
        ord + 1
    except TypeError:
        raise ValueError(f"Invalid norm order '{ord}' for vectors") from None
    ret = sum_(U("power", absx, ord), axis, keepdims=keepdims)
    return U("power", ret, ret.dtype.type(1.0 / ord).item())


def vector_norm(x, axis=None, keepdims=False, ord=2) -> N.Node:
    """``numpy.linalg.vector_norm``: ``axis`` may name several axes (they
    are joined into one first)."""
    node = _inexact(x)
    shape = list(node.shape)
    if axis is None:
        y, ax = reshape(node, (-1,)), 0
    elif isinstance(axis, tuple):
        axes = normalize_axis_tuple(axis, node.ndim)
        rest = tuple(i for i in range(node.ndim) if i not in axes)
        y = transpose(node, axes + rest)
        y = reshape(y, (math.prod(node.shape[i] for i in axes),) + tuple(shape[i] for i in rest))
        ax = 0
    else:
        y, ax = node, axis
    res = norm(y, ord=ord, axis=ax)
    if keepdims:
        for i in normalize_axis_tuple(range(len(shape)) if axis is None else axis, len(shape)):
            shape[i] = 1
        res = reshape(res, tuple(shape))
    return res


def matrix_norm(x, keepdims=False, ord="fro") -> N.Node:
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def linalg_outer(x1, x2) -> N.Node:
    """``numpy.linalg.outer``: vectors only."""
    a, b = as_node(x1), as_node(x2)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError("Input arrays must be one-dimensional, but they are "
                         f"x1.ndim={a.ndim} and x2.ndim={b.ndim}.")
    return outer(a, b)


def linalg_cross(x1, x2, axis=-1) -> N.Node:
    """``numpy.linalg.cross``: 3-vectors only."""
    a, b = as_node(x1), as_node(x2)
    da = a.shape[normalize_axis_index(axis, a.ndim)] if a.ndim else 0
    db = b.shape[normalize_axis_index(axis, b.ndim)] if b.ndim else 0
    if da != 3 or db != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, "
                         f"but they are {da} and {db} dimensional instead.")
    return cross(a, b, axis=axis)


def triangle_indices(which, n, k=0, m=None) -> tuple:
    """``np.tril_indices``/``np.triu_indices``: concrete sizes, so host data
    (two int64 index arrays)."""
    rows, cols = getattr(np, f"{which}_indices")(n, k, m)
    return array(rows), array(cols)
