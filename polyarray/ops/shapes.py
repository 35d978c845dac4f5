"""Shape nodes.  Index remappings (transpose, broadcast, flip, ...) are
IndexLambdas that read their input at affine indices; ``reshape`` and
``concatenate`` have nodes of their own (see :mod:`polyarray.ir.nodes`)."""
from __future__ import annotations

import math

import numpy as np

from ..ir import nodes as N
from ..ir.expr import binding_name, broadcast_indices, index_var, read
from .axes import axis_index, axis_list, normalize_axis_index, normalize_axis_tuple
from .creation import as_node, _normalize_shape
from .dtypes import check_dtype
from .elementwise import astype, broadcast_shapes
from .memo import memoized


def remap(node: N.Node, shape, indices, op: str) -> N.IndexLambda:
    """``out[_0..] = node[indices]`` as an IndexLambda."""
    name = binding_name(0)
    return N.IndexLambda.make(tuple(shape), node.dtype, read(name, indices),
                              ((name, node),), op)


def _arr(x) -> N.Node:
    return as_node(x)


def permutation(kind: str, ndim: int, *args) -> tuple:
    """The axis order that ``transpose(axes)``, ``matrix_transpose()``,
    ``moveaxis(source, destination)`` or ``swapaxes(axis1, axis2)`` makes
    of an array of ``ndim`` axes, with NumPy's errors (views need the
    permutation itself, to write back through it)."""
    axes = list(range(ndim))
    if kind == "transpose":
        (given,) = args or (None,)
        if given is None:
            return tuple(reversed(axes))
        given = tuple(axis_list(given))
        if len(given) != ndim:
            raise ValueError(f"transpose: axes {given} don't match array of "
                             f"{ndim} dimensions")
        return normalize_axis_tuple(given, ndim)       # rejects repeats too
    if kind == "matrix_transpose":
        if ndim < 2:
            raise ValueError(f"matrix_transpose needs at least 2 dimensions, got {ndim}")
        axes[-2], axes[-1] = axes[-1], axes[-2]
        return tuple(axes)
    if kind == "moveaxis":
        src = normalize_axis_tuple(args[0], ndim, "source")
        dst = normalize_axis_tuple(args[1], ndim, "destination")
        if len(src) != len(dst):
            raise ValueError("moveaxis: `source` and `destination` arguments must "
                             "have the same number of elements")
        order = [a for a in axes if a not in src]
        for d, s in sorted(zip(dst, src)):
            order.insert(d, s)
        return tuple(order)
    a1, a2 = (normalize_axis_index(a, ndim) for a in args)      # swapaxes
    axes[a1], axes[a2] = axes[a2], axes[a1]
    return tuple(axes)


@memoized
def transpose(x, axes=None) -> N.Node:
    node = _arr(x)
    try:
        axes = permutation("transpose", node.ndim, axes)
    except ValueError as e:
        if "don't match" in str(e):
            raise ValueError(f"transpose: axes {tuple(axis_list(axes))} don't match array "
                             f"of shape {node.shape}") from None
        raise
    if axes == tuple(range(node.ndim)):
        return node
    shape = tuple(node.shape[a] for a in axes)
    idx = [None] * node.ndim
    for out_d, in_d in enumerate(axes):
        idx[in_d] = index_var(out_d)
    return remap(node, shape, idx, f"transpose[axes={axes}]")


def permute_dims(x, axes) -> N.Node:
    return transpose(x, axes)


def matrix_transpose(x) -> N.Node:
    node = _arr(x)
    if node.ndim < 2:
        raise ValueError("matrix_transpose needs at least 2 dimensions, "
                         f"got shape {node.shape}")
    return transpose(x, permutation("matrix_transpose", node.ndim))


def moveaxis(x, source, destination) -> N.Node:
    node = _arr(x)
    return transpose(x, permutation("moveaxis", node.ndim, source, destination))


def swapaxes(x, axis1, axis2) -> N.Node:
    node = _arr(x)
    return transpose(x, permutation("swapaxes", node.ndim, axis1, axis2))


@memoized
def broadcast_to(x, shape) -> N.Node:
    node = _arr(x)
    shape = _normalize_shape(shape)
    ok = len(shape) >= node.ndim and all(
        n in (1, m) for n, m in zip(node.shape, shape[len(shape) - node.ndim:]))
    if not ok:
        raise ValueError(f"broadcast_to: cannot broadcast array of shape "
                         f"{node.shape} to shape {shape}")
    if shape == node.shape:
        return node
    return remap(node, shape, broadcast_indices(node.shape, shape),
                 f"broadcast_to[{shape}]")


def broadcast_arrays(*arrays) -> list:
    nodes = [_arr(a) for a in arrays]
    shape = broadcast_shapes(*(n.shape for n in nodes))
    return [broadcast_to(n, shape) for n in nodes]


@memoized
def expand_dims(x, axis) -> N.Node:
    node = _arr(x)
    axis = axis_list(axis)
    out_ndim = node.ndim + len(axis)
    axes = set(normalize_axis_tuple(axis, out_ndim))
    shape, idx, k = [], [], 0
    for d in range(out_ndim):
        if d in axes:
            shape.append(1)
        else:
            shape.append(node.shape[k])
            idx.append(index_var(d))
            k += 1
    return remap(node, shape, idx, f"expand_dims[axis={tuple(sorted(axes))}]")


@memoized
def squeeze(x, axis=None) -> N.Node:
    node = _arr(x)
    if axis is None:
        axes = tuple(d for d, n in enumerate(node.shape) if n == 1)
    else:
        axes = normalize_axis_tuple(axis, node.ndim)
        for a in axes:
            if node.shape[a] != 1:
                raise ValueError("cannot select an axis to squeeze out which "
                                 f"has size not equal to one (axis {a} of "
                                 f"shape {node.shape})")
    if not axes:
        return node
    shape, idx, k = [], [], 0
    for d, n in enumerate(node.shape):
        if d in axes:
            idx.append(0)
        else:
            shape.append(n)
            idx.append(index_var(k))
            k += 1
    return remap(node, shape, idx, f"squeeze[axis={tuple(axes)}]")


def flip(x, axis=None) -> N.Node:
    node = _arr(x)
    axes = range(node.ndim) if axis is None else normalize_axis_tuple(axis, node.ndim)
    axes = set(axes)
    if not axes:
        return node
    idx = [(n - 1) - index_var(d) if d in axes else index_var(d)
           for d, n in enumerate(node.shape)]
    return remap(node, node.shape, idx, f"flip[axis={tuple(sorted(axes))}]")


@memoized
def reshape(x, shape, order="C") -> N.Node:
    node = _arr(x)
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = list(shape)
    for n in shape:
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise TypeError(f"reshape: shape must contain ints, got {tuple(shape)}")
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if any(n < -1 for n in shape):
        raise ValueError(f"reshape: negative dimensions not allowed: {tuple(shape)}")
    if -1 in shape:
        known = math.prod(n for n in shape if n != -1)
        if known == 0 or node.size % known:
            raise ValueError(f"cannot reshape array of size {node.size} into "
                             f"shape {tuple(shape)}")
        shape[shape.index(-1)] = node.size // known
    shape = tuple(int(n) for n in shape)
    if math.prod(shape) != node.size:
        raise ValueError(f"cannot reshape array of size {node.size} into shape {shape}")
    if order == "F":
        t = transpose(node)
        return transpose(reshape(t, tuple(reversed(shape))))
    if order != "C":
        raise ValueError(f"reshape: order must be 'C' or 'F', got {order!r}")
    if shape == node.shape:
        return node
    return N.Reshape.make(shape, node.dtype, node)


def ravel(x, order="C") -> N.Node:
    """Lazy arrays are C-contiguous, so 'A' and 'K' read as 'C'."""
    if order not in ("C", "F", "A", "K"):
        raise ValueError(f"ravel: order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    return reshape(x, (-1,), "F" if order == "F" else "C")


def _cast_all(nodes, dtype, casting, what):
    """NumPy's ``dtype=``/``casting=`` of concatenate and stack."""
    if casting not in ("no", "equiv", "safe", "same_kind", "unsafe"):
        raise ValueError(f"{what}: casting must be one of 'no', 'equiv', 'safe', "
                         f"'same_kind', or 'unsafe' (got {casting!r})")
    to = check_dtype(dtype if dtype is not None else
                     np.result_type(*(n.dtype for n in nodes)), what)
    for n in nodes:
        if not np.can_cast(n.dtype, to, casting):
            raise TypeError(f"Cannot cast array data from {n.dtype!r} to {to!r} according "
                            f"to the rule {casting!r}")
    return [astype(n, to) for n in nodes], to


def concatenate(arrays, axis=0, dtype=None, casting="same_kind") -> N.Node:
    nodes = [_arr(a) for a in arrays]
    if not nodes:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        nodes = [reshape(n, (-1,)) for n in nodes]
        axis = 0
    axis = axis_index(axis)
    ndim = nodes[0].ndim
    if ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis = normalize_axis_index(axis, ndim)
    for n in nodes[1:]:
        if n.ndim != ndim:
            raise ValueError(
                "all the input array dimensions except for the concatenation "
                f"axis must match exactly: shapes {nodes[0].shape} and {n.shape}")
        for d in range(ndim):
            if d != axis and n.shape[d] != nodes[0].shape[d]:
                raise ValueError(
                    "all the input array dimensions except for the concatenation "
                    f"axis must match exactly, but along dimension {d} the "
                    f"shapes are {nodes[0].shape} and {n.shape}")
    nodes, dtype = _cast_all(nodes, dtype, casting, "concatenate")
    if len(nodes) == 1:
        return nodes[0]
    shape = list(nodes[0].shape)
    shape[axis] = sum(n.shape[axis] for n in nodes)
    return N.Concatenate.make(tuple(shape), dtype, tuple(nodes), axis)


def stack(arrays, axis=0, dtype=None, casting="same_kind") -> N.Node:
    nodes = [_arr(a) for a in arrays]
    if not nodes:
        raise ValueError("need at least one array to stack")
    for n in nodes[1:]:
        if n.shape != nodes[0].shape:
            raise ValueError("all input arrays must have the same shape, got "
                             f"{nodes[0].shape} and {n.shape}")
    axis = normalize_axis_index(axis, nodes[0].ndim + 1)
    return concatenate([expand_dims(n, axis) for n in nodes], axis, dtype, casting)

