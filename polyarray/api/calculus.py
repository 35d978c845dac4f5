"""``pa.*`` functions of sampled data (:mod:`polyarray.ops.calculus`):
``gradient``, ``trapezoid``, ``interp``, ``unwrap``."""
from __future__ import annotations

import math

from ..array import Array, node_of, wrap as _wrap
from ..ops import calculus as K


def gradient(f, *varargs, axis=None, edge_order=1):
    """The gradient of ``f`` by second-order central differences inside and
    one-sided ones (``edge_order`` 1 or 2) at the edges (``np.gradient``),
    lazily: one array per axis (a tuple for several).  Spacings are scalars
    or 1-D coordinates; integers are computed as float64."""
    return _wrap(K.gradient(node_of(f), *map(node_of, varargs), axis=axis,
                            edge_order=edge_order))


def trapezoid(y, x=None, dx=1.0, axis=-1) -> Array:
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, with
    samples at ``x`` or spaced ``dx`` (``np.trapezoid``), lazily."""
    return Array(K.trapezoid(node_of(y), node_of(x), node_of(dx), axis))


def interp(x, xp, fp, left=None, right=None, period=None) -> Array:
    """The piecewise-linear interpolant of ``(xp, fp)`` at ``x``
    (``np.interp``; ``xp`` increasing, or periodic with ``period``), float64,
    lazily: a binary search per value on the device."""
    return Array(K.interp(node_of(x), node_of(xp), node_of(fp), node_of(left),
                          node_of(right), period))


def unwrap(p, discont=None, axis=-1, *, period=2 * math.pi) -> Array:
    """``p`` with jumps larger than ``discont`` along ``axis`` replaced by
    their complement modulo ``period`` (``np.unwrap``), lazily."""
    return Array(K.unwrap(node_of(p), discont, axis, period))
