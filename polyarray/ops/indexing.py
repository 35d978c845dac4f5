"""``x[key]`` nodes: basic indexing, integer-array gathers and concrete boolean
masks, with NumPy's placement rules for advanced-index dimensions.  Lazy
index arrays in ``key`` are nodes here (the Array layer unwraps them)."""
from __future__ import annotations

import numbers

import numpy as np

from ..ir import nodes as N
from ..ir.expr import binding_name, broadcast_indices, call, cast, index_var, read
from .axes import normalize_axis_index
from .creation import array, index_constant
from .dtypes import INDEX_DTYPE
from .elementwise import apply_ufunc, astype, clip
from .shapes import reshape
from .memo import memoized


class NonConcreteBooleanIndexError(IndexError):
    """A boolean mask whose values are only known at evaluation."""


_BAD_INDEX = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
              "(`None`) and integer or boolean arrays are valid indices")


def _format_item(item):
    if type(item) is int:               # the common cases first: an ABC check is slow
        return str(item)
    if type(item) is slice and all(type(v) is int or v is None
                                   for v in (item.start, item.stop, item.step)):
        parts = ["" if v is None else str(v) for v in (item.start, item.stop, item.step)]
        return ":".join(parts[:2] if item.step is None else parts)
    if item is None:
        return "None"
    if item is Ellipsis:
        return "..."
    if isinstance(item, slice):
        parts = ["" if v is None else str(v) for v in (item.start, item.stop, item.step)]
        return ":".join(parts[:2] if item.step is None else parts)
    if isinstance(item, (numbers.Integral, np.integer)):
        return str(int(item))
    if isinstance(item, N.Node):
        return f"<{item.dtype.name}{list(item.shape)}>"
    arr = np.asarray(item)
    return f"<{arr.dtype.name}{list(arr.shape)}>"


def _format_key(key):
    key = key if isinstance(key, tuple) else (key,)
    return ", ".join(_format_item(k) for k in key)


def _classify(item):
    """Return ('int'|'slice'|'none'|'ellipsis'|'array'|'bool', value)."""
    if type(item) is int:
        return "int", item
    if item is None:
        return "none", None
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, slice):
        return "slice", item
    if isinstance(item, (bool, np.bool_)):      # (getitem rewrites these first)
        raise IndexError("a scalar boolean index is not supported here; use "
                         "pa.where or expand_dims instead")
    if isinstance(item, (numbers.Integral, np.integer)):
        return "int", int(item)
    if isinstance(item, N.Node):
        node = item
        if node.dtype == np.bool_:
            if isinstance(node, N.DataWrapper):
                return "bool", node.data
            raise NonConcreteBooleanIndexError(
                "boolean mask indexing with a lazily computed mask would give "
                "an array whose shape depends on data; use "
                "pa.where(mask, x, fill) instead, or pass the mask as a NumPy "
                "array or pa.array(...) data")
        if node.dtype.kind not in "iu":
            raise IndexError(_BAD_INDEX + f" (got an array of dtype {node.dtype})")
        if isinstance(node, N.DataWrapper):
            return "array", node.data
        return "lazy", node
    if isinstance(item, (list, tuple, np.ndarray)):
        arr = np.asarray(item)
        if arr.dtype == np.bool_:
            return "bool", arr
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.int64)
        if arr.dtype.kind not in "iu":
            raise IndexError(_BAD_INDEX + f" (got an array of dtype {arr.dtype})")
        return "array", arr
    raise IndexError(_BAD_INDEX + f" (got {type(item).__name__})")


def scalar_bool(item):
    """The value of a concrete 0-d boolean index (``True``, ``np.False_``, a
    0-d boolean array or data node), or None."""
    if isinstance(item, (bool, np.bool_)):
        return bool(item)
    if isinstance(item, np.ndarray) and item.dtype == np.bool_ and item.ndim == 0:
        return bool(item)
    if isinstance(item, N.DataWrapper) and item.dtype == np.bool_ and item.ndim == 0:
        return bool(item.data)
    return None


def scalar_bools_as_axes(node, key):
    """NumPy's 0-d boolean index: a new axis there, of length 1 (True) or 0
    (False): ``(node with a unit axis inserted, key with [0] or [] there)``."""
    items = list(key) if isinstance(key, tuple) else [key]
    if all(scalar_bool(k) is None for k in items):
        return node, key
    from .shapes import expand_dims

    def dims(k):
        if k is None or k is Ellipsis or scalar_bool(k) is not None:
            return 0
        kind, v = _classify(k)
        return np.ndim(v) if kind == "bool" else 1
    for i, k in enumerate(items):
        flag = scalar_bool(k)
        if flag is None:
            continue
        before = items[:i]
        at = sum(dims(b) for b in before)
        if any(b is Ellipsis for b in before):
            at += node.ndim - sum(dims(b) for b in items)
        node = expand_dims(node, at)
        items[i] = np.zeros(int(flag), np.intp)
    return node, tuple(items)


def _expand(node, key):
    """Classify key items, expand the Ellipsis and boolean masks."""
    if not isinstance(key, tuple):
        key = (key,)
    items = [_classify(k) for k in key]
    if sum(kind == "ellipsis" for kind, _ in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(np.ndim(v) if kind == "bool" else
                   (1 if kind in ("int", "slice", "array", "lazy") else 0)
                   for kind, v in items)
    if consumed > node.ndim:
        raise IndexError(f"too many indices for array: array is "
                         f"{node.ndim}-dimensional, but {consumed} were indexed")
    out, dim = [], 0
    for kind, v in items:
        if kind == "ellipsis":
            for _ in range(node.ndim - consumed):
                out.append(("slice", slice(None), dim))
                dim += 1
        elif kind == "bool":
            if v.ndim == 0:
                raise IndexError("a 0-d boolean index is not supported")
            for k, n in enumerate(v.shape):
                if node.shape[dim + k] != n:
                    raise IndexError(
                        f"boolean index did not match indexed array along axis "
                        f"{dim + k}; size of axis is {node.shape[dim + k]} but "
                        f"size of corresponding boolean axis is {n}")
            for k, nz in enumerate(np.nonzero(v)):
                out.append(("array", nz, dim + k))
            dim += v.ndim
        elif kind == "none":
            out.append(("none", None, None))
        else:
            out.append((kind, v, dim))
            dim += 1
    while dim < node.ndim:
        out.append(("slice", slice(None), dim))
        dim += 1
    return out


@memoized
def getitem(node: N.Node, key, checked=True) -> N.IndexLambda:
    """``node[key]``.  Lazy index arrays are checked when the program runs
    (``checked``); ``take(mode="clip"|"wrap")`` passes indices already in
    range and no check."""
    node, key = scalar_bools_as_axes(node, key)
    items = _expand(node, key)
    has_adv = any(kind in ("array", "lazy") for kind, _, _ in items)
    if has_adv:   # NumPy: integers count as advanced indices next to arrays
        items = [("array", np.asarray(v), d) if kind == "int" else (kind, v, d)
                 for kind, v, d in items]
    adv_pos = [i for i, (kind, _, _) in enumerate(items) if kind in ("array", "lazy")]
    adv_shape = ()
    if adv_pos:
        try:
            adv_shape = np.broadcast_shapes(*(np.shape(items[i][1]) if items[i][0] == "array"
                                              else items[i][1].shape for i in adv_pos))
        except ValueError:
            shapes = " ".join(str(np.shape(items[i][1]) if items[i][0] == "array"
                                  else items[i][1].shape) for i in adv_pos)
            raise IndexError("shape mismatch: indexing arrays could not be "
                             f"broadcast together with shapes {shapes}") from None
    contiguous = not adv_pos or adv_pos == list(range(adv_pos[0], adv_pos[-1] + 1))
    adv_at = adv_pos[0] if (adv_pos and contiguous) else 0

    # lay out output dims
    out_shape, plan = [], []        # plan: per item -> output dim index or None
    nadv = len(adv_shape)

    def place_adv():
        start = len(out_shape)
        out_shape.extend(adv_shape)
        return start

    adv_start = None
    if adv_pos and not contiguous:
        adv_start = place_adv()
    for i, (kind, v, d) in enumerate(items):
        if adv_pos and contiguous and i == adv_at:
            adv_start = place_adv()
        if kind == "slice":
            start, stop, step = v.indices(node.shape[d])
            plan.append(len(out_shape))
            out_shape.append(len(range(start, stop, step)))
        elif kind == "none":
            plan.append(None)
            out_shape.append(1)
        else:
            plan.append(None)

    bindings = [(binding_name(0), node)]
    indices = [None] * node.ndim
    adv_vars = [index_var(adv_start + k) for k in range(nadv)] if adv_pos else []
    for i, (kind, v, d) in enumerate(items):
        if kind == "slice":
            start, stop, step = v.indices(node.shape[d])
            var = index_var(plan[i])
            indices[d] = start + step * var if step != 1 else (start + var if start else var)
        elif kind == "int":
            n = node.shape[d]
            if not -n <= v < n:
                raise IndexError(f"index {v} is out of bounds for axis {d} with size {n}")
            indices[d] = v % n
        elif kind in ("array", "lazy"):
            n = node.shape[d]
            ishape = np.shape(v) if kind == "array" else v.shape
            ivars = [adv_vars[nadv - len(ishape) + k] if s != 1 else 0
                     for k, s in enumerate(ishape)]
            if kind == "array":
                arr = np.asarray(v).astype(np.int64)
                if arr.size and (arr.max() >= n or arr.min() < -n):
                    bad = arr.max() if arr.max() >= n else arr.min()
                    raise IndexError(f"index {bad} is out of bounds for axis {d} "
                                     f"with size {n}")
                arr = np.where(arr < 0, arr + n, arr)
                if arr.ndim == 0:
                    indices[d] = int(arr)
                    continue
                idx_node = index_constant(arr)
                name = binding_name(len(bindings))
                bindings.append((name, idx_node))
                indices[d] = read(name, ivars)
            else:
                name = binding_name(len(bindings))
                bindings.append((name, v))
                # NumPy converts any integer index array to intp first (uint64
                # wraps), so every target sees int64 and ``+ n`` cannot overflow;
                # checked when it runs: NumPy's IndexError, never a read
                # outside the buffer (targets/numpy/exprs, codegen/runtime_checks)
                if n == 0 and v.size:
                    raise IndexError(f"index arrays of {v.size} elements gather from axis "
                                     f"{d} with size 0: every index is out of bounds")
                raw = read(name, ivars)
                if v.dtype != INDEX_DTYPE:
                    raw = cast(INDEX_DTYPE, raw)
                indices[d] = call("checked_index", raw, n, d) if checked else raw
    label = "getitem[" + _format_key(key) + "]"
    return N.IndexLambda.make(tuple(out_shape), node.dtype, read(binding_name(0), indices),
                              tuple(bindings), label)


_TAKE_MODES = ("raise", "wrap", "clip")


def take(a, indices, axis=None, mode="raise") -> N.IndexLambda:
    """``np.take``: elements of ``a`` (flattened when ``axis`` is None) at
    ``indices`` along ``axis``.  ``mode="raise"`` (NumPy's default) raises
    IndexError for an index out of range, when the program runs if the
    indices are lazy; ``"wrap"`` wraps them around and ``"clip"`` clips them
    (negative ones to 0, as NumPy does), with no run-time check."""
    if mode not in _TAKE_MODES:
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    a = a if isinstance(a, N.Node) else array(a)
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    axis = normalize_axis_index(axis, a.ndim)
    if not isinstance(indices, N.Node):
        indices = np.asarray(indices)
        if indices.size == 0 and indices.dtype.kind == "f":     # NumPy: take(x, [])
            indices = indices.astype(np.intp)
    idx = indices if isinstance(indices, N.Node) else array(indices)
    if idx.dtype.kind not in "iu":
        raise IndexError(_BAD_INDEX + f" (got an array of dtype {idx.dtype})")
    n = a.shape[axis]
    if mode != "raise":
        if n == 0:
            raise IndexError("cannot do a non-empty take from an empty axes.")
        idx = astype(idx, np.int64)
        idx = clip(idx, 0, n - 1) if mode == "clip" else apply_ufunc("remainder", idx, n)
    key = (slice(None),) * axis + (idx,)
    return getitem(a, key, checked=mode == "raise")


def take_along_axis(arr, indices, axis=-1) -> N.IndexLambda:
    """``np.take_along_axis``: ``out[..., i, ...] = arr[..., indices[..., i,
    ...], ...]`` along ``axis``, the other axes broadcast.  Data indices are
    checked now; lazy ones when the program runs (NumPy's IndexError)."""
    a = arr if isinstance(arr, N.Node) else array(arr)
    idx = indices if isinstance(indices, N.Node) else array(indices)
    if idx.dtype.kind not in "iu":
        raise IndexError(f"`indices` must be an integer array (got dtype {idx.dtype})")
    if axis is None:
        if idx.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        a, axis = reshape(a, (-1,)), 0
    elif a.ndim != idx.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions "
                         f"(got shapes {idx.shape} and {a.shape})")
    axis = normalize_axis_index(axis, a.ndim)
    others = a.shape[:axis] + (1,) + a.shape[axis + 1:]
    try:
        shape = np.broadcast_shapes(others, idx.shape)
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together "
                         f"with shapes {idx.shape} (indices) and {a.shape} (arr, "
                         f"axis {axis})") from None
    n = a.shape[axis]
    checked = True
    if isinstance(idx, N.DataWrapper):
        data = idx.data.astype(np.int64)
        if data.size and (data.max() >= n or data.min() < -n):
            bad = data.max() if data.max() >= n else data.min()
            raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
        idx, checked = index_constant(np.where(data < 0, data + n, data)), False
    elif n == 0 and idx.size:
        raise IndexError(f"index arrays of {idx.size} elements gather from axis {axis} "
                         "with size 0: every index is out of bounds")
    names = (binding_name(0), binding_name(1))
    raw = read(names[1], broadcast_indices(idx.shape, shape))
    if idx.dtype != INDEX_DTYPE:
        raw = cast(INDEX_DTYPE, raw)
    pos = [index_var(d) if m != 1 or shape[d] == 1 else 0 for d, m in enumerate(a.shape)]
    pos[axis] = call("checked_index", raw, n, axis) if checked else raw
    return N.IndexLambda.make(tuple(shape), a.dtype, read(names[0], pos),
                              ((names[0], a), (names[1], idx)), f"take_along_axis[{axis}]")
