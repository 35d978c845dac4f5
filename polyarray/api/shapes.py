"""``pa.*`` shapes (:mod:`polyarray.ops.shapes`): ``reshape``, ``ravel``,
``transpose``, ``permute_dims``, ``matrix_transpose``, ``moveaxis``,
``swapaxes``, ``broadcast_to``, ``broadcast_arrays``, ``expand_dims``,
``squeeze``, ``flip``, ``concatenate``, ``concat``, ``stack``."""
from __future__ import annotations

import numpy as np

from ..array import Array, mark_read_only, node_of, permuted, read_only_view, reshaped
from ..ops import shapes as S
from ..ops.axes import no_out


# -- shapes ------------------------------------------------------------------

def transpose(a, axes=None) -> Array:
    """``a`` with its axes permuted, reversed by default (``np.transpose``);
    lazy: no data moves until a kernel reads it."""
    if isinstance(a, Array):
        return permuted(a, S.permutation("transpose", a.ndim, axes))
    return Array(S.transpose(node_of(a), axes))


def permute_dims(a, axes) -> Array:
    """``a`` with its axes permuted by ``axes`` (``np.permute_dims``, the array
    API's ``transpose``), lazily."""
    if isinstance(a, Array):
        return permuted(a, S.permutation("transpose", a.ndim, axes))
    return Array(S.permute_dims(node_of(a), axes))


def matrix_transpose(x) -> Array:
    """``x`` with its last two axes swapped (``np.matrix_transpose``, ``x.mT``),
    lazily; ``x`` must be at least 2-D."""
    if isinstance(x, Array):
        S.matrix_transpose(x.node)                   # NumPy's error for 1-D
        return permuted(x, S.permutation("matrix_transpose", x.ndim))
    return Array(S.matrix_transpose(node_of(x)))


def moveaxis(a, source, destination) -> Array:
    """``a`` with axes ``source`` moved to ``destination`` (``np.moveaxis``), lazily."""
    if isinstance(a, Array):
        return permuted(a, S.permutation("moveaxis", a.ndim, source, destination))
    return Array(S.moveaxis(node_of(a), source, destination))


def swapaxes(a, axis1, axis2) -> Array:
    """``a`` with ``axis1`` and ``axis2`` interchanged (``np.swapaxes``), lazily."""
    if isinstance(a, Array):
        return permuted(a, S.permutation("swapaxes", a.ndim, axis1, axis2))
    return Array(S.swapaxes(node_of(a), axis1, axis2))


def broadcast_to(array, shape) -> Array:
    """``array`` broadcast to ``shape`` (``np.broadcast_to``): a read-only
    view, as NumPy's (writing to it raises ValueError)."""
    node = S.broadcast_to(node_of(array), shape)      # NumPy's errors now
    if not isinstance(array, Array):
        return mark_read_only(Array(node))
    return read_only_view(array, lambda n: S.broadcast_to(n, node.shape),
                                lambda a: np.broadcast_to(a, node.shape))


def broadcast_arrays(*arrays) -> list:
    """The ``arrays`` broadcast against each other (``np.broadcast_arrays``),
    as a list of lazy arrays."""
    return [Array(n) for n in S.broadcast_arrays(*map(node_of, arrays))]


def expand_dims(a, axis) -> Array:
    """``a`` with axes of length one inserted at ``axis`` (``np.expand_dims``), lazily."""
    if isinstance(a, Array):
        return reshaped(a, S.expand_dims(a.node, axis).shape, always_view=True)
    return Array(S.expand_dims(node_of(a), axis))


def squeeze(a, axis=None) -> Array:
    """``a`` without its axes of length one (or just ``axis``) (``np.squeeze``), lazily."""
    if isinstance(a, Array):
        return reshaped(a, S.squeeze(a.node, axis).shape, always_view=True)
    return Array(S.squeeze(node_of(a), axis))


def flip(m, axis=None) -> Array:
    """``m`` with the order of elements reversed along ``axis`` (all axes when
    None) (``np.flip``), lazily."""
    return Array(S.flip(node_of(m), axis))


def reshape(a, /, shape=None, order="C", *, newshape=None, copy=None) -> Array:
    """``a`` with a new ``shape`` and the same data (``np.reshape``), lazily.

    NumPy 2.1's signature (``newshape`` is the old spelling); ``order`` "C"
    or "F" ("A" means "C": a lazy array has no memory layout); ``copy`` is
    accepted: a lazy reshape never shares memory that could be written."""
    if newshape is not None:
        if shape is not None:
            raise TypeError("You cannot specify 'newshape' and 'shape' arguments at the "
                            "same time.")
        shape = newshape
    if shape is None:
        raise TypeError("reshape() missing 1 required positional argument: 'shape'")
    if isinstance(a, Array):
        return a.reshape(shape, order=order, copy=copy)
    return Array(S.reshape(node_of(a), shape, "C" if order == "A" else order))


def ravel(a, order="C") -> Array:
    """``a`` flattened to 1-D (``np.ravel``), lazily.

    ``order`` "C" or "F"; "A" and "K" mean "C", since a lazy array has no
    memory layout (NumPy's "K" follows the memory order of a view)."""
    if isinstance(a, Array):
        return a.ravel(order)
    return Array(S.ravel(node_of(a), order))


def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind") -> Array:
    """``arrays`` joined along an existing ``axis`` (``np.concatenate``), lazily.

    The result dtype is NumPy's promotion of theirs (or ``dtype``, checked
    with ``casting``); ``out=`` must be None."""
    no_out(out, "concatenate")
    return Array(S.concatenate([node_of(a) for a in arrays], axis, dtype, casting))


def concat(arrays, /, *, axis=0) -> Array:
    """``arrays`` joined along ``axis`` (``np.concat``, the array API's
    ``concatenate``), lazily."""
    return concatenate(arrays, axis)


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind") -> Array:
    """``arrays`` (all of one shape) joined along a new ``axis`` (``np.stack``),
    lazily; ``out=`` must be None."""
    no_out(out, "stack")
    return Array(S.stack([node_of(a) for a in arrays], axis, dtype, casting))
