"""The parts of ``x[key] = v`` (``ops/assign.py``) that need no record of
earlier updates: the value as NumPy converts and broadcasts it, the test
"index in a slice", integer-array and boolean-mask keys."""
from __future__ import annotations

import functools
import math

import numpy as np
import pymbolic.primitives as p

from ..ir import nodes as N
from ..ir.expr import binding_name, call, cast, index_var, index_vars, read
from .creation import array, full, index_constant
from .dtypes import INDEX_DTYPE
from .elementwise import astype, where
from .indexing import NonConcreteBooleanIndexError, _expand, _format_key
from .reductions import max as reduce_max
from .shapes import broadcast_to, reshape


def _shape_text(shape):
    return "(" + ",".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def value_node(value, dtype) -> N.Node:
    """``value`` in ``dtype`` as NumPy's setitem converts it: lazy values and
    arrays cast unsafely, Python scalars through NumPy's own assignment (so
    300 into int8 is NumPy's OverflowError, NaN into int its ValueError)."""
    if isinstance(value, N.Node):
        return astype(value, dtype)
    scratch = np.empty(np.shape(value), dtype)
    scratch[...] = value                 # NumPy's own conversion and errors
    if scratch.ndim == 0:
        return full((), scratch[()], dtype)
    return array(scratch)


def fit(v, shape, advanced=False):
    """``v`` broadcast to the region's ``shape``, leading ones dropped first
    (NumPy accepts ``x[0] = ones((1, 1, 3))``)."""
    given = v.shape
    while v.ndim > len(shape) and v.shape[0] == 1:
        v = reshape(v, v.shape[1:])
    ok = v.ndim <= len(shape) and all(
        a in (1, b) for a, b in zip(v.shape, shape[len(shape) - v.ndim:]))
    if not ok:
        if advanced:
            raise ValueError(f"shape mismatch: value array of shape {_shape_text(given)} "
                             "could not be broadcast to indexing result of shape "
                             f"{_shape_text(shape)}")
        raise ValueError(f"could not broadcast input array from shape "
                         f"{_shape_text(v.shape)} into shape {_shape_text(shape)}")
    return broadcast_to(v, shape)


def full_range(r, n):
    return r == range(n)


def _clamp(j, n):
    if n <= 1:
        return 0
    return p.If(p.Comparison(j, "<", 0), 0, p.If(p.Comparison(j, ">", n - 1), n - 1, j))


def range_test(i, r):
    """(conditions that index ``i`` is in ``r``, its position in ``r``)."""
    lo, hi, step = min(r), max(r), abs(r.step)
    conds = [p.Comparison(i, ">=", lo)] if lo > 0 else []
    conds += [p.Comparison(i, "<=", hi)]
    first = r.start if r.step > 0 else hi
    offset = (i - first) if r.step > 0 else (first - i)
    if step != 1:
        conds.append(p.Comparison(p.Remainder(i - lo, step), "==", 0))
        offset = p.FloorDiv(offset, step)
    return conds, _clamp(offset, len(r))


def all_of(conds):
    return functools.reduce(lambda a, b: p.If(a, b, a), conds)


SELECT_CHAIN = 16       # up to this many concrete indices: a chain of selects, no map


def scatter(node, key, v):
    """Integer arrays (and masks, as their nonzero indices).  Up to
    ``SELECT_CHAIN`` concrete indices: one select per index, the last
    outermost (so the last write wins).  Otherwise a map ``inv`` from each
    position of the indexed axes to the last value written there (-1: none;
    the product of those axes' lengths in int64), then
    ``where(inv >= 0, v[inv], x)``."""
    items = _expand(node, key)
    items = [("array", np.asarray(v), d) if kind == "int" else (kind, v, d)
             for kind, v, d in items]
    adv = [i for i, (kind, _, _) in enumerate(items) if kind in ("array", "lazy")]
    adv_shape = np.broadcast_shapes(*(np.shape(items[i][1]) if items[i][0] == "array"
                                      else items[i][1].shape for i in adv))
    count = math.prod(adv_shape)
    contiguous = adv == list(range(adv[0], adv[-1] + 1))
    conds, vidx, adv_at = [], [], 0
    for i, (kind, val, d) in enumerate(items):
        if contiguous and i == adv[0]:
            adv_at = len(vidx)
        if kind == "none":
            vidx.append(0)
        elif kind == "slice":
            r = range(*val.indices(node.shape[d]))
            if full_range(r, node.shape[d]):
                vidx.append(index_var(d))
            else:
                c, j = range_test(index_var(d), r)
                conds += c
                vidx.append(j)
    v = reshape(v, v.shape[:adv_at] + (count,) + v.shape[adv_at + len(adv_shape):])
    x, y, z = binding_name(0), binding_name(1), binding_name(2)
    axes = [items[i][2] for i in adv]
    bindings = [(x, node), (y, v)]
    if count <= SELECT_CHAIN and all(items[i][0] == "array" for i in adv):
        expr = read(x, index_vars(node.ndim))
        arrays = [np.broadcast_to(np.asarray(items[i][1], np.int64), adv_shape).ravel()
                  for i in adv]
        for j in range(count):
            at = [p.Comparison(index_var(d), "==", int(a[j]) % node.shape[d])
                  for a, d in zip(arrays, axes)]
            expr = call("where", all_of(at + conds),
                        read(y, vidx[:adv_at] + [j] + vidx[adv_at:]), expr)
    else:
        inv = (_lazy_inverse(node, [items[i] for i in adv], adv_shape)
               if any(items[i][0] == "lazy" for i in adv) else
               index_constant(_inverse(node, [items[i] for i in adv], adv_shape)))
        where_inv = read(z, [index_var(d) for d in axes])
        expr = call("where", all_of([p.Comparison(where_inv, ">=", 0)] + conds),
                    read(y, vidx[:adv_at] + [_clamp(where_inv, count)] + vidx[adv_at:]),
                    read(x, index_vars(node.ndim)))
        bindings.append((z, inv))
    return N.IndexLambda.make(node.shape, node.dtype, expr, tuple(bindings),
                              f"setitem[{_format_key(key)}]")


def _inverse(node, adv, adv_shape):
    """``inv`` of concrete index arrays (checked by getitem), made on the host."""
    sizes = tuple(node.shape[d] for _, _, d in adv)
    arrays = [np.broadcast_to(np.asarray(a, np.int64), adv_shape) for _, a, _ in adv]
    arrays = [np.where(a < 0, a + n, a) for a, n in zip(arrays, sizes)]
    inv = np.full(sizes, -1, np.int64)
    flat = np.ravel_multi_index(tuple(a.ravel() for a in arrays), sizes)
    np.maximum.at(inv.reshape(-1), flat, np.arange(math.prod(adv_shape)))   # last wins
    return inv


def _lazy_inverse(node, adv, adv_shape):
    """``inv`` of index arrays known when the program runs: for each position,
    the largest ``j`` whose indices name it (a max over all ``j``: work of
    positions x indices).  Lazy indices are checked as gathers check them
    (NumPy's IndexError when out of range)."""
    sizes = tuple(node.shape[d] for _, _, d in adv)
    k, j = len(sizes), index_var(len(sizes))
    bindings, conds = [], []
    for m, (kind, a, d) in enumerate(adv):
        if kind != "lazy":          # checked by getitem: made non-negative here
            a = np.asarray(a, np.int64)
            a = index_constant(np.where(a < 0, a + sizes[m], a))
        flat = reshape(broadcast_to(a, adv_shape), (-1,))
        name = binding_name(m)
        bindings.append((name, flat))
        raw = read(name, (j,))
        if a.dtype != INDEX_DTYPE:
            raw = cast(INDEX_DTYPE, raw)
        if kind == "lazy":
            raw = call("checked_index", raw, sizes[m], d)
        conds.append(p.Comparison(raw, "==", index_var(m)))
    hit = call("where", all_of(conds), cast(INDEX_DTYPE, j), INDEX_DTYPE.type(-1))
    pairs = N.IndexLambda.make(sizes + (math.prod(adv_shape),), INDEX_DTYPE, hit,
                               tuple(bindings), "setitem indices")
    return reduce_max(pairs, axis=k)


# -- boolean masks --------------------------------------------------------------
def mask_of(node, key):
    """The boolean mask of ``x[mask]`` / ``x[mask, ...]`` (a node or array), else None."""
    items = key if isinstance(key, tuple) else (key,)
    if not items or not all(k is Ellipsis or (isinstance(k, slice) and k == slice(None))
                            for k in items[1:]):
        return None
    m = items[0]
    if isinstance(m, N.Node):
        return m if m.dtype == np.bool_ else None
    if isinstance(m, (np.ndarray, list)) and np.asarray(m).dtype == np.bool_:
        return np.asarray(m)
    return None


def set_mask(node, key, mask, value):
    """``where(mask, v, x)`` where ``v`` is one value per selected element
    (a scalar, or the trailing axes' shape); None to scatter instead."""
    if mask.ndim == 0 or mask.ndim > node.ndim:
        return None
    for k, n in enumerate(mask.shape):
        if node.shape[k] != n:
            raise IndexError(f"boolean index did not match indexed array along axis {k}; "
                             f"size of axis is {node.shape[k]} but size of corresponding "
                             f"boolean axis is {n}")
    rest = node.shape[mask.ndim:]
    v = value_node(value, node.dtype)
    if not rest and v.ndim > 1:         # NumPy's own check of a full-rank mask
        raise TypeError("NumPy boolean array indexing assignment requires a 0 or "
                        f"1-dimensional input, input has {v.ndim} dimensions")
    while v.ndim > len(rest) and v.shape[0] == 1:
        v = reshape(v, v.shape[1:])
    fits = v.ndim <= len(rest) and all(
        a in (1, b) for a, b in zip(v.shape, rest[len(rest) - v.ndim:]))
    if fits:
        pass
    elif isinstance(mask, N.Node):
        raise NonConcreteBooleanIndexError(
            f"x[mask] = v with a lazily computed mask needs one value for every "
            f"selected element (a scalar, or shape {rest}); v has shape {v.shape}, "
            "whose length depends on how many elements the mask selects")
    elif not rest and v.shape[0] != int(mask.sum()):
        raise ValueError(f"NumPy boolean array indexing assignment cannot assign "
                         f"{v.shape[0]} input values to the {int(mask.sum())} output "
                         "values where the mask is true")
    else:
        return None                     # one value per selected element: scatter
    m = mask if isinstance(mask, N.Node) else array(mask)
    m = reshape(m, m.shape + (1,) * len(rest))
    return where(m, broadcast_to(v, node.shape), node)
