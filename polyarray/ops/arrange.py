"""Rearranging nodes: ``atleast_*d``, the ``*stack`` family, ``unstack``,
``meshgrid``, ``indices``, ``tile``, ``repeat``, ``kron``, ``roll``,
``diff``/``ediff1d``, ``fliplr``/``flipud``/``rot90``, and the pieces of
``split`` and ``insert``/``delete``/``append`` (concrete positions: slices
joined, or gathers by host indices).

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
from .axes import axis_index, normalize_axis_index, normalize_axis_tuple
from .creation import arange, as_node, index_constant
from .elementwise import apply_ufunc, astype, where
from .shapes import (broadcast_arrays, broadcast_to, concatenate, flip, remap, reshape,
                     transpose)


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



# -- splitting, adding and removing elements ------------------------------------

def split_bounds(n, indices_or_sections, equal=False) -> list:
    """``[(start, stop)]`` of each piece of an axis of ``n`` (NumPy's
    ``array_split``; ``equal``: ``split``'s "equal division" check).
    ``start``/``stop`` are Python slice bounds (negative ones count from
    the end, as NumPy slices them)."""
    try:
        points = [0] + [operator.index(i) for i in indices_or_sections] + [n]
    except TypeError:
        if isinstance(indices_or_sections, N.Node):
            raise TypeError("split: indices_or_sections must be an int or a sequence of "
                            "ints, not a lazy array (the pieces' shapes depend on it)") from None
        sections = int(indices_or_sections)
        if equal and n % sections:
            raise ValueError("array split does not result in an equal division") from None
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.") from None
        each, extras = divmod(n, sections)
        sizes = [0] + extras * [each + 1] + (sections - extras) * [each]
        points = np.cumsum(sizes).tolist()
    return list(zip(points[:-1], points[1:]))


def split_axis(name, ndim) -> int:
    """The axis ``hsplit``/``vsplit``/``dsplit`` split, with NumPy's errors."""
    need = {"hsplit": 1, "vsplit": 2, "dsplit": 3}[name]
    if ndim < need:
        raise ValueError(f"{name} only works on arrays of {need} or more dimensions")
    return {"hsplit": 1 if ndim > 1 else 0, "vsplit": 0, "dsplit": 2}[name]


def append(arr, values, axis=None) -> N.Node:
    """``concatenate((arr, values), axis)``; both flattened when ``axis`` is None."""
    node, vals = as_node(arr), as_node(values)
    if axis is None:
        node, vals, axis = reshape(node, (-1,)), reshape(vals, (-1,)), 0
    return concatenate([node, vals], axis)


_MAX_PIECES = 16        # runs joined as a concatenation of slices; more: a gather


def _gather_axis(node, positions, axis):
    """``node`` at ``positions`` (host ints, in range) along ``axis``."""
    positions = np.asarray(positions, np.int64)
    names = (binding_name(0), binding_name(1))
    idx = [index_var(d) for d in range(node.ndim)]
    idx[axis] = read(names[1], (index_var(axis),))
    shape = node.shape[:axis] + (len(positions),) + node.shape[axis + 1:]
    return N.IndexLambda.make(shape, node.dtype, read(names[0], idx),
                              ((names[0], node), (names[1], index_constant(positions))),
                              f"gather[axis={axis}]")


def _assemble(sources, plan, axis):
    """The array whose slices along ``axis`` are ``sources[s]``'s slice
    ``k`` for each ``(s, k)`` of ``plan``: runs of consecutive slices of one
    source joined as slices, or (many runs) gathers picked by a select."""
    runs = []
    for s, k in plan:
        if runs and runs[-1][0] == s and runs[-1][2] == k:
            runs[-1][2] += 1
        else:
            runs.append([s, k, k + 1])
    shape = list(sources[0].shape)
    shape[axis] = len(plan)
    if not runs:
        return _gather_axis(sources[0], [], axis)
    if len(runs) <= _MAX_PIECES:
        pieces = [sources[s] if (a, b) == (0, sources[s].shape[axis]) else
                  _slice_axis(sources[s], axis, a, b - a) for s, a, b in runs]
        return pieces[0] if len(pieces) == 1 else concatenate(pieces, axis)
    plan = np.asarray(plan, np.int64).reshape(-1, 2)
    parts = [_gather_axis(src, np.where(plan[:, 0] == s, plan[:, 1], 0), axis)
             for s, src in enumerate(sources)]
    if len(parts) == 1:
        return parts[0]
    pick = as_node((plan[:, 0] == 1).reshape((len(plan),) + (1,) * (len(shape) - axis - 1)))
    return where(pick, parts[1], parts[0])


def _axis_of(node, axis):
    """NumPy's ``axis=None``: the flattened array, axis 0."""
    if axis is None:
        return (reshape(node, (-1,)) if node.ndim != 1 else node), 0
    return node, normalize_axis_index(axis, node.ndim)


def delete(arr, obj, axis=None) -> N.Node:
    """``arr`` without the slices ``obj`` along ``axis`` (flattened when
    None).  ``obj`` must be concrete (an int, a slice, ints or booleans):
    NumPy's own ``delete`` of the positions gives its errors."""
    node, axis = _axis_of(as_node(arr), axis)
    if isinstance(obj, N.Node):
        if not isinstance(obj, N.DataWrapper):
            raise TypeError("delete: obj must be an int, a slice or host data, not a lazy "
                            "array (the result's shape depends on it)")
        obj = obj.data
    n = node.shape[axis]
    where_ = (1,) * axis + (n,) + (1,) * (node.ndim - axis - 1)
    keep = np.delete(np.arange(n).reshape(where_), obj, axis).reshape(-1)
    return _assemble([node], [(0, int(k)) for k in keep], axis)


def _converted(values, dtype):
    """``values`` as NumPy's ``np.array(values, dtype=dtype)`` makes them."""
    if isinstance(values, N.Node):
        return astype(values, dtype)
    scratch = np.empty(np.shape(values), dtype)
    scratch[...] = values
    return as_node(scratch)


def _fit(v, shape):
    """``v`` broadcast into a region of ``shape`` (NumPy's setitem rule)."""
    while v.ndim > len(shape) and v.shape[0] == 1:
        v = reshape(v, v.shape[1:])
    if v.ndim > len(shape) or any(a not in (1, b) for a, b in
                                  zip(v.shape, shape[len(shape) - v.ndim:])):
        text = lambda s: "(" + ",".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"  # noqa: E731
        raise ValueError(f"could not broadcast input array from shape {text(v.shape)} "
                         f"into shape {text(shape)}")
    return broadcast_to(v, shape)


def insert(arr, obj, values, axis=None) -> N.Node:
    """``values`` inserted before the positions ``obj`` along ``axis``
    (flattened when None), NumPy's algorithm step by step.  ``obj`` must be
    concrete; ``values`` may be lazy (cast to ``arr``'s dtype)."""
    node, axis = _axis_of(as_node(arr), axis)
    if isinstance(obj, N.Node):
        if not isinstance(obj, N.DataWrapper):
            raise TypeError("insert: obj must be an int, a slice or host data, not a lazy "
                            "array (the result's shape depends on it)")
        obj = obj.data
    n = node.shape[axis]
    if isinstance(obj, slice):
        indices = np.arange(*obj.indices(n), dtype=np.intp)
    else:
        indices = np.array(obj)
        if indices.dtype == bool:
            if indices.ndim != 1:
                raise ValueError("boolean array argument obj to insert must be one "
                                 "dimensional")
            indices = np.flatnonzero(obj)
        elif indices.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional "
                             "or scalar")
    vals = _converted(values, node.dtype)
    region = list(node.shape)
    if indices.size == 1:
        index = indices.item()
        if index < -n or index > n:
            raise IndexError(f"index {obj} is out of bounds for axis {axis} with size {n}")
        index = operator.index(index) + (n if index < 0 else 0)
        if vals.ndim < node.ndim:
            vals = reshape(vals, (1,) * (node.ndim - vals.ndim) + vals.shape)
        if indices.ndim == 0:
            vals = transpose(vals, _moved(vals.ndim, axis))
        region[axis] = vals.shape[axis]
        vals = _fit(vals, tuple(region))
        plan = [(0, k) for k in range(index)] + [(1, k) for k in range(region[axis])] + \
               [(0, k) for k in range(index, n)]
        return _assemble([node, vals], plan, axis)
    if indices.size == 0 and not isinstance(obj, np.ndarray):
        indices = indices.astype(np.intp)
    indices = indices.copy()
    indices[indices < 0] += n
    numnew = len(indices)
    order = indices.argsort(kind="mergesort")
    indices[order] += np.arange(numnew)
    old = np.ones(n + numnew, dtype=bool)
    old[indices] = False                        # NumPy's IndexError when out of range
    region[axis] = numnew
    vals = _fit(vals, tuple(region))
    plan, source = [None] * (n + numnew), np.full(n + numnew, -1)
    source[indices] = np.arange(numnew)
    j = 0
    for pos in range(n + numnew):
        if old[pos]:
            plan[pos], j = (0, j), j + 1
        else:
            plan[pos] = (1, int(source[pos]))
    return _assemble([node, vals], plan, axis)


def _moved(ndim, axis):
    """The axis order of ``np.moveaxis(v, 0, axis)``."""
    order = list(range(1, ndim))
    order.insert(axis, 0)
    return tuple(order)


def fliplr(m) -> N.Node:
    node = as_node(m)
    if node.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(node, 1)


def flipud(m) -> N.Node:
    node = as_node(m)
    if node.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(node, 0)


def rot90(m, k=1, axes=(0, 1)) -> N.Node:
    """NumPy's ``rot90``: flips and a transpose of the two ``axes``."""
    node = as_node(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    a0, a1 = (axis_index(a) for a in axes)
    if a0 == a1 or abs(a0 - a1) == node.ndim:
        raise ValueError("Axes must be different.")
    if not (-node.ndim <= a0 < node.ndim and -node.ndim <= a1 < node.ndim):
        raise ValueError(f"Axes={axes} out of range for array of ndim={node.ndim}.")
    k = operator.index(k) % 4
    if k == 0:
        return node
    if k == 2:
        return flip(flip(node, a0), a1)
    order = list(range(node.ndim))
    order[a0], order[a1] = order[a1], order[a0]
    if k == 1:
        return transpose(flip(node, a1), order)
    return flip(transpose(node, order), a1)


def ediff1d(ary, to_end=None, to_begin=None) -> N.Node:
    """Differences of the flattened ``ary``, with ``to_begin``/``to_end``
    (flattened, cast to ``ary``'s dtype under NumPy's ``same_kind`` check)."""
    node = reshape(as_node(ary), (-1,))
    parts = []
    for extra, what in ((to_begin, "to_begin"), (None, None), (to_end, "to_end")):
        if what is None:
            m = max(node.shape[0] - 1, 0)
            parts.append(apply_ufunc("subtract", _slice_axis(node, 0, 1, m),
                                     _slice_axis(node, 0, 0, m)))
            continue
        if extra is None:
            continue
        e = reshape(as_node(extra), (-1,))
        if not np.can_cast(e.dtype, node.dtype, casting="same_kind"):
            raise TypeError(f"dtype of `{what}` must be compatible with input `ary` under "
                            "the `same_kind` rule.")
        parts.append(astype(e, node.dtype))
    return parts[0] if len(parts) == 1 else concatenate(parts, 0)


def indices(dimensions, dtype=int, sparse=False):
    """The index grid (``np.indices``): a lazy constant per axis."""
    dims = tuple(operator.index(d) for d in dimensions)
    dtype = np.dtype(dtype)
    grids = []
    for d, n in enumerate(dims):
        shape = (1,) * d + (n,) + (1,) * (len(dims) - d - 1)
        grid = reshape(arange(n, dtype=dtype), shape)
        grids.append(grid if sparse else broadcast_to(grid, dims))
    if sparse:
        return tuple(grids)
    if not grids:
        return reshape(arange(0, dtype=dtype), (0,))
    return concatenate([reshape(g, (1,) + dims) for g in grids], 0)
