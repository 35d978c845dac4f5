"""Views as steps on nodes: how a NumPy view is made from its base's value
and how a write to it is carried back (``polyarray.array``'s ``View`` keeps
the steps; this module knows nothing of Arrays).

A step is a tuple:

* ``("index", key)``: basic indexing (ints, slices, None, Ellipsis);
* ``("axes", permutation)``: transpose and its spellings;
* ``("reshape", shape, order)``: reshape, ravel, squeeze, expand_dims;
* ``("read-only", make, fake)``: a view NumPy makes read-only (diagonal,
  broadcast_to): ``make(node)`` computes it, ``fake(ndarray)`` its layout;
* ``("part", "real" | "imag", fake)``: a complex array's part (``.real``,
  ``.imag``), whose writes make the complex values again.

Whether a reshape is a view is NumPy's decision, asked of an ndarray of the
same shape and strides that owns no memory (``np.reshape(..., copy=False)``
on it raises where NumPy would copy): never read, only its layout used.
"""
from __future__ import annotations

import numpy as np

from . import assign, complex, shapes


def forward(step, node):
    """The view's value from its base's ``node``."""
    kind = step[0]
    if kind == "index":
        return assign.getitem(node, step[1])
    if kind == "axes":
        return shapes.transpose(node, step[1])
    if kind == "reshape":
        return shapes.reshape(node, step[1], step[2])
    if kind == "part":
        return complex.real(node) if step[1] == "real" else complex.imag(node)
    return step[1](node)


def backward(step, base, new):
    """``base`` with the part that ``step`` reads replaced by ``new``."""
    kind = step[0]
    if kind == "index":
        return assign.setitem(base, step[1], new)
    if kind == "axes":
        return shapes.transpose(new, tuple(int(a) for a in np.argsort(step[1])))
    if kind == "reshape":
        return shapes.reshape(new, base.shape, step[2])
    if kind == "part":
        return complex.with_part(base, step[1], new)
    raise ValueError("assignment destination is read-only")


def is_advanced(key) -> bool:
    """Whether ``key`` holds arrays, lists or booleans (NumPy copies)."""
    items = key if isinstance(key, tuple) else (key,)
    return not all(k is None or k is Ellipsis or isinstance(k, slice)
                   or (isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)))
                   for k in items)


def is_scalar_key(key, ndim) -> bool:
    """Whether basic ``key`` indexes every axis with an integer (NumPy gives
    a scalar, not a 0-d view)."""
    items = key if isinstance(key, tuple) else (key,)
    ints = sum(1 for k in items if k is not None and k is not Ellipsis
               and not isinstance(k, slice))
    return ints == ndim and Ellipsis not in items and None not in items


def check_out(shape, dtype, result, ufunc: str, casting="same_kind") -> None:
    """NumPy's errors for writing ``result`` into an array of ``shape`` and
    ``dtype`` as a ufunc's ``out`` (a reduction's casts with "unsafe"), in
    NumPy's order: the cast, then the shape."""
    if casting != "unsafe" and not np.can_cast(result.dtype, dtype, casting):
        raise TypeError(f"Cannot cast ufunc {ufunc!r} output from {result.dtype!r} to "
                        f"{dtype!r} with casting rule {casting!r}")
    if result.shape != shape:
        try:
            ok = np.broadcast_shapes(result.shape, shape) == shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"non-broadcastable output operand with shape {shape} "
                             f"doesn't match the broadcast shape {result.shape}")


def c_strides(shape, itemsize) -> tuple:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def layout(shape, dtype, strides, steps) -> np.ndarray:
    """An ndarray of the view's shape and NumPy strides that owns no memory
    (a base of ``shape``, ``dtype`` and ``strides``, or C-contiguous for None,
    then ``steps``)."""
    dtype = np.dtype(dtype)
    strides = strides or c_strides(shape, dtype.itemsize or 1)
    fake = np.lib.stride_tricks.as_strided(np.zeros(1, dtype), shape=shape,
                                           strides=strides, writeable=False)
    for step in steps:
        if step[0] == "index":
            fake = fake[step[1]]
        elif step[0] == "axes":
            fake = fake.transpose(step[1])
        elif step[0] == "reshape":
            fake = np.reshape(fake, step[1], order=step[2], copy=False)
        else:
            fake = step[2](fake)
    return fake


def reshapes_in_place(fake: np.ndarray, shape, order) -> bool:
    """Whether NumPy reshapes an array laid out as ``fake`` without a copy."""
    try:
        np.reshape(fake, shape, order=order, copy=False)
    except ValueError:
        return False
    return True
