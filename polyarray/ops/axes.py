"""Axis arguments: integers only, with NumPy's errors.

NumPy's own ``normalize_axis_tuple`` tries ``operator.index`` and, when that
fails, iterates the argument, so ``axis=1.0`` gives "'float' object is not
iterable".  These wrappers convert every axis with ``operator.index`` first,
so a float axis gives NumPy's C-level wording ("'float' object cannot be
interpreted as an integer") in every function that takes ``axis``/``axes``.
Booleans are refused as NumPy refuses them ("an integer is required").

``out=`` is checked here too: NumPy's functions take it, and polyarray's
accept it when it is None (``no_out``).
"""
from __future__ import annotations

import operator

import numpy as np
from numpy.lib import array_utils as _au


def axis_index(axis) -> int:
    """One axis as a Python int (``operator.index``), bools refused."""
    if isinstance(axis, (bool, np.bool_)):
        raise TypeError(f"an integer is required for the axis, got {axis!r}")
    return operator.index(axis)


def axis_list(axis) -> list:
    """An int or a sequence of ints as a list of Python ints."""
    if isinstance(axis, (tuple, list)):
        return [axis_index(a) for a in axis]
    if isinstance(axis, np.ndarray) and axis.ndim == 1:
        return [axis_index(a) for a in axis.tolist()]
    return [axis_index(axis)]


def normalize_axis_index(axis, ndim, msg_prefix=None) -> int:
    return _au.normalize_axis_index(axis_index(axis), ndim, msg_prefix)


def normalize_axis_tuple(axis, ndim, argname=None, allow_duplicate=False) -> tuple:
    return _au.normalize_axis_tuple(axis_list(axis), ndim, argname, allow_duplicate)


def no_out(out, name):
    """NumPy's ``out=`` where polyarray does not take it (ufuncs and NumPy's
    dispatch do): accepted when None."""
    if out is not None:
        raise NotImplementedError(
            f"{name}: out= is not supported here; assign the returned array instead "
            "(out[...] = result), or call it through NumPy (np.<function>(..., out=out))")
