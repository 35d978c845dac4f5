"""Rearranging nodes: ``atleast_*d``, the ``*stack`` family, ``unstack``,
``meshgrid``, ``tile``, ``repeat``, ``kron``, ``roll`` and ``diff``.

All are index remaps (IndexLambdas reading their input at computed
indices), reshapes, broadcasts and concatenations of existing nodes; every
index a remap reads is in range by construction (``roll`` picks its source
with a conditional, ``tile`` with a remainder), so no target ever reads
outside a buffer.  NumPy's own functions are the model, step for step
(``numpy/_core/shape_base.py``, ``numpy/lib/_function_base_impl.py``).
"""
from __future__ import annotations

import operator

import numpy as np
import pymbolic.primitives as p

from ..ir import nodes as N
from ..ir.expr import binding_name, index_var, read
from .axes import normalize_axis_index, normalize_axis_tuple
from .creation import as_node, index_constant
from .elementwise import apply_ufunc
from .shapes import broadcast_arrays, broadcast_to, concatenate, remap, reshape


def atleast_nd(a, n: int) -> N.Node:
    """``np.atleast_1d/2d/3d`` for one array: (N,) is (1, N) in 2-d and
    (1, N, 1) in 3-d, (M, N) is (M, N, 1) in 3-d."""
    node = as_node(a)
    s = node.shape
    if node.ndim >= n:
        return node
    if n == 1:
        shape = (1,)
    elif n == 2:
        shape = (1,) + s if node.ndim == 1 else (1, 1)
    else:
        shape = {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[node.ndim]
    return reshape(node, shape)


def _sequence(tup, name):
    if not isinstance(tup, (list, tuple)) and not (isinstance(tup, np.ndarray)
                                                   or isinstance(tup, N.Node)):
        raise TypeError(f"{name}: arrays to stack must be passed as a \"sequence\" type "
                        "such as list or tuple.")
    if isinstance(tup, N.Node):
        return [remap_index(tup, 0, k) for k in range(tup.shape[0])] if tup.ndim else [tup]
    return list(tup)


def hstack(tup, dtype=None, casting="same_kind") -> N.Node:
    arrs = [atleast_nd(a, 1) for a in _sequence(tup, "hstack")]
    axis = 0 if arrs and arrs[0].ndim == 1 else 1
    return concatenate(arrs, axis, dtype=dtype, casting=casting)


def vstack(tup, dtype=None, casting="same_kind") -> N.Node:
    arrs = [atleast_nd(a, 2) for a in _sequence(tup, "vstack")]
    return concatenate(arrs, 0, dtype=dtype, casting=casting)


def dstack(tup) -> N.Node:
    arrs = [atleast_nd(a, 3) for a in _sequence(tup, "dstack")]
    return concatenate(arrs, 2)


def column_stack(tup) -> N.Node:
    """1-d arrays become columns; 2-d ones are joined as they are."""
    arrs = []
    for a in _sequence(tup, "column_stack"):
        node = as_node(a)
        if node.ndim < 2:
            node = reshape(node, (-1, 1))
        arrs.append(node)
    return concatenate(arrs, 1)


def remap_index(node, axis, k) -> N.Node:
    """``node`` at index ``k`` of ``axis`` (that axis dropped)."""
    idx = [index_var(d) for d in range(axis)] + [k] + \
          [index_var(d - 1) for d in range(axis + 1, node.ndim)]
    shape = node.shape[:axis] + node.shape[axis + 1:]
    return remap(node, shape, idx, f"index[axis={axis}, {k}]")


def unstack(x, axis=0) -> tuple:
    node = as_node(x)
    if node.ndim == 0:
        raise ValueError("Input array must be at least 1-d.")
    axis = normalize_axis_index(axis, node.ndim)
    return tuple(remap_index(node, axis, k) for k in range(node.shape[axis]))


def meshgrid(*xi, sparse=False, indexing="xy") -> tuple:
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    s0 = (1,) * ndim
    out = [reshape(as_node(x), s0[:i] + (-1,) + s0[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and ndim > 1:
        out[0] = reshape(out[0], (1, -1) + s0[2:])
        out[1] = reshape(out[1], (-1, 1) + s0[2:])
    if not sparse:
        out = broadcast_arrays(*out)
    return tuple(out)


def _reps(reps):
    try:
        return tuple(operator.index(r) for r in reps)
    except TypeError:
        return (operator.index(reps),)


def tile(A, reps) -> N.Node:
    """``out[i] = A[i % n]`` per axis, after NumPy's padding of ``A``'s
    shape or of ``reps`` with leading ones."""
    node = as_node(A)
    tup = _reps(reps)
    if any(r < 0 for r in tup):
        raise ValueError(f"tile: negative dimensions are not allowed: reps={tup}")
    d = len(tup)
    if node.ndim < d:
        node = reshape(node, (1,) * (d - node.ndim) + node.shape)
    tup = (1,) * (node.ndim - d) + tup
    if all(r == 1 for r in tup):
        return node
    shape = tuple(n * r for n, r in zip(node.shape, tup))
    idx = [index_var(k) if r == 1 or n <= 1 else p.Remainder(index_var(k), n)
           for k, (n, r) in enumerate(zip(node.shape, tup))]
    idx = [0 if n == 1 else i for i, n in zip(idx, node.shape)]
    return remap(node, shape, idx, f"tile[{tup}]")


def repeat(a, repeats, axis=None) -> N.Node:
    """Each element ``repeats`` times along ``axis`` (flattened when None).
    ``repeats`` must be concrete (an int, or host data of one int per
    element): the output's shape depends on it."""
    node = as_node(a)
    if axis is None:
        node, axis = reshape(node, (-1,)), 0
    axis = normalize_axis_index(axis, node.ndim)
    if isinstance(repeats, N.Node):
        if not isinstance(repeats, N.DataWrapper):
            raise TypeError("repeat: repeats must be an int or host data (a list or a NumPy "
                            "array), not a lazy array: the output's shape depends on them")
        repeats = repeats.data
    n = node.shape[axis]
    src = np.repeat(np.arange(n, dtype=np.int64), repeats)     # NumPy's checks and errors
    shape = node.shape[:axis] + (len(src),) + node.shape[axis + 1:]
    reps = np.asarray(repeats)
    if reps.size == 1:
        r = int(reps.reshape(()))
        if r == 1:
            return node
        idx = [index_var(d) for d in range(node.ndim)]
        idx[axis] = p.FloorDiv(index_var(axis), r) if r else 0
        return remap(node, shape, idx, f"repeat[{r}, axis={axis}]")
    names = (binding_name(0), binding_name(1))
    idx = [index_var(d) for d in range(node.ndim)]
    idx[axis] = read(names[1], (index_var(axis),))
    return N.IndexLambda.make(shape, node.dtype, read(names[0], idx),
                              ((names[0], node), (names[1], index_constant(src))),
                              f"repeat[axis={axis}]")


def kron(a, b) -> N.Node:
    """The Kronecker product: ``a`` and ``b`` interleaved axis by axis,
    multiplied by broadcasting, and reshaped."""
    na, nb = as_node(a), as_node(b)
    nd = max(na.ndim, nb.ndim)
    sa = (1,) * (nd - na.ndim) + na.shape
    sb = (1,) * (nd - nb.ndim) + nb.shape
    a2 = reshape(na, tuple(x for n in sa for x in (n, 1)))
    b2 = reshape(nb, tuple(x for n in sb for x in (1, n)))
    prod = apply_ufunc("multiply", a2, b2)
    return reshape(prod, tuple(m * n for m, n in zip(sa, sb)))


def roll(a, shift, axis=None) -> N.Node:
    node = as_node(a)
    if axis is None:
        return reshape(roll(reshape(node, (-1,)), shift, 0), node.shape)
    axes = normalize_axis_tuple(axis, node.ndim, allow_duplicate=True)
    b = np.broadcast(np.asarray(shift), np.asarray(axes))
    if b.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    shifts = [0] * node.ndim
    for sh, ax in b:
        shifts[int(ax)] += operator.index(sh)
    idx = []
    for d, (n, s) in enumerate(zip(node.shape, shifts)):
        s = s % n if n else 0
        i = index_var(d)
        idx.append(i if s == 0 else p.If(p.Comparison(i, "<", s), i + (n - s), i - s))
    if idx == [index_var(d) for d in range(node.ndim)]:
        return node
    return remap(node, node.shape, idx, f"roll[{tuple(shifts)}]")


def _slice_axis(node, axis, start, length):
    idx = [index_var(d) + start if d == axis and start else index_var(d)
           for d in range(node.ndim)]
    shape = node.shape[:axis] + (length,) + node.shape[axis + 1:]
    return remap(node, shape, idx, f"slice[axis={axis}, {start}:{start + length}]")


_NOVALUE = np._NoValue


def diff(a, n=1, axis=-1, prepend=_NOVALUE, append=_NOVALUE) -> N.Node:
    """``a[1:] - a[:-1]`` along ``axis``, ``n`` times (``!=`` for bools),
    after joining ``prepend`` and ``append`` (scalars broadcast)."""
    n = operator.index(n)
    node = as_node(a)
    if n == 0:
        return node
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    if node.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis_index(axis, node.ndim)
    parts = []
    for extra, at_end in ((prepend, False), (append, True)):
        if extra is _NOVALUE:
            continue
        e = as_node(extra)
        if e.ndim == 0:
            e = broadcast_to(e, node.shape[:axis] + (1,) + node.shape[axis + 1:])
        parts.append((at_end, e))
    if parts:
        node = concatenate([e for end, e in parts if not end] + [node] +
                           [e for end, e in parts if end], axis)
    op = "not_equal" if node.dtype == np.bool_ else "subtract"
    for _ in range(n):
        m = max(node.shape[axis] - 1, 0)
        node = apply_ufunc(op, _slice_axis(node, axis, 1, m), _slice_axis(node, axis, 0, m))
    return node

