"""Complex parts and tests: ``real``, ``imag``, ``conj``, ``angle``,
``iscomplex``, ``isreal`` (``elementwise`` builds the parts, and gives
NumPy's ComplexWarning where a cast drops an imaginary part).

A complex value's parts are calls of their own in an expression
(``real``/``imag``, NumPy's names, which the NumPy target calls and the
devices lower to the struct's fields); on real input every function answers
as NumPy's does (``real`` is the input, ``imag`` zeros of its dtype,
``conj`` the input in the ufunc's loop dtype).
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import nodes as N
from .creation import array, full, zeros
from .elementwise import (_operand, apply_ufunc, astype, complex_join, complex_part,
                          real_dtype)
from .memo import memoized


def _node(x):
    node = _operand(x)
    return node if isinstance(node, N.Node) else array(node)


@memoized
def real(x) -> N.Node:
    """``np.real``: the real part of a complex array, a real array itself."""
    node = _node(x)
    return complex_part("real", node) if node.dtype.kind == "c" else node


@memoized
def imag(x) -> N.Node:
    """``np.imag``: the imaginary part; zeros of a real array's dtype."""
    node = _node(x)
    if node.dtype.kind == "c":
        return complex_part("imag", node)
    return zeros(node.shape, node.dtype)


def conj(x) -> N.Node:
    """``np.conjugate``: a real array in the ufunc's loop dtype (bool is
    int8, as NumPy's loop), a complex one with its imaginary part negated."""
    node = _node(x)
    if node.dtype.kind == "c":
        return apply_ufunc("conjugate", node)
    return astype(node, np.conjugate.resolve_dtypes((node.dtype, None))[1])


def angle(z, deg=False) -> N.Node:
    """``np.angle``: ``arctan2(imag, real)`` (NumPy's own composition, so a
    real input's dtype follows ``arctan2(0, x)``), in degrees if ``deg``."""
    node = _node(z)
    if node.dtype.kind == "c":
        a = apply_ufunc("arctan2", imag(node), real(node))
    else:
        a = apply_ufunc("arctan2", 0, node)
    return apply_ufunc("multiply", a, 180 / math.pi) if deg else a


def iscomplex(x) -> N.Node:
    """``np.iscomplex``: a nonzero imaginary part (False for real arrays)."""
    node = _node(x)
    if node.dtype.kind == "c":
        return apply_ufunc("not_equal", imag(node), 0)
    return full(node.shape, False, np.bool_)


def isreal(x) -> N.Node:
    """``np.isreal``: a zero imaginary part (True for real arrays)."""
    node = _node(x)
    if node.dtype.kind == "c":
        return apply_ufunc("equal", imag(node), 0)
    return full(node.shape, True, np.bool_)


def with_part(base, name, new) -> N.IndexLambda:
    """``base`` (complex) with its ``name`` part replaced by ``new`` (of
    ``base``'s shape): a write to ``z.real`` or ``z.imag``."""
    new = astype(new, real_dtype(base.dtype))
    re = new if name == "real" else real(base)
    im = new if name == "imag" else imag(base)
    return complex_join(re, im)
