"""``pa.linalg``: the public ``numpy.linalg`` namespace (its array API
functions: norms, products, diagonals) over lazy arrays.

Only what needs no factorization is here: ``svd``, ``inv``, ``solve``,
``det``, ... are missing, and matrix norms that need singular values
(``ord`` 2, -2, 'nuc') raise NotImplementedError.  The node builders are
:mod:`polyarray.ops.matrices` and :mod:`polyarray.ops.linalg` (an internal
module, not this one)."""
from __future__ import annotations

from .array import Array, node_of
from .api import matmul as _matmul, matrix_transpose, tensordot as _tensordot
from .api_more import vecdot as _vecdot
from .ops import matrices as M

__all__ = ["norm", "vector_norm", "matrix_norm", "vecdot", "matrix_transpose", "diagonal",
           "trace", "outer", "tensordot", "matmul", "cross"]


def norm(x, ord=None, axis=None, keepdims=False) -> Array:     # noqa: A002
    """``numpy.linalg.norm``: vector norms (any ``ord``), matrix norms
    'fro', 1, -1, inf, -inf; integers are computed as float64."""
    return Array(M.norm(node_of(x), ord, axis, keepdims))


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2) -> Array:    # noqa: A002
    return Array(M.vector_norm(node_of(x), axis, keepdims, ord))


def matrix_norm(x, /, *, keepdims=False, ord="fro") -> Array:    # noqa: A002
    return Array(M.matrix_norm(node_of(x), keepdims, ord))


def vecdot(x1, x2, /, *, axis=-1) -> Array:
    return _vecdot(x1, x2, axis=axis)


def diagonal(x, /, *, offset=0) -> Array:
    """The diagonal of the last two axes (``np.diagonal`` takes the first two)."""
    return Array(M.diagonal(node_of(x), offset, -2, -1))


def trace(x, /, *, offset=0, dtype=None) -> Array:
    """The trace over the last two axes (``np.trace`` takes the first two)."""
    return Array(M.trace(node_of(x), offset, -2, -1, dtype))


def outer(x1, x2, /) -> Array:
    """Vectors only (``np.outer`` flattens)."""
    return Array(M.linalg_outer(node_of(x1), node_of(x2)))


def tensordot(x1, x2, /, *, axes=2) -> Array:
    return _tensordot(x1, x2, axes)


def matmul(x1, x2, /) -> Array:
    return _matmul(x1, x2)


def cross(x1, x2, /, *, axis=-1) -> Array:
    """3-vectors only (``np.cross`` also takes 2-vectors)."""
    return Array(M.linalg_cross(node_of(x1), node_of(x2), axis))
