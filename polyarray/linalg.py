"""``pa.linalg``: the public ``numpy.linalg`` namespace (its array API
functions: norms, products, diagonals) over lazy arrays.

Only what needs no factorization is here: ``svd``, ``inv``, ``solve``,
``det``, ... are missing, and matrix norms that need singular values
(``ord`` 2, -2, 'nuc') raise NotImplementedError.  The node builders are
:mod:`polyarray.ops.matrices` and :mod:`polyarray.ops.linalg` (an internal
module, not this one)."""
from __future__ import annotations

from .array import Array, node_of
from .api.matrices import matmul as _matmul, tensordot as _tensordot, vecdot as _vecdot
from .api.shapes import matrix_transpose
from .ops import matrices as M

__all__ = ["norm", "vector_norm", "matrix_norm", "vecdot", "matrix_transpose", "diagonal",
           "trace", "outer", "tensordot", "matmul", "cross"]


def __dir__():
    """Its functions alone (the names it imports stay unlisted)."""
    return list(__all__)


def norm(x, ord=None, axis=None, keepdims=False) -> Array:     # noqa: A002
    """Vector or matrix norm of ``x`` (``np.linalg.norm``), lazily.

    Vector norms of any ``ord``; matrix norms 'fro', 1, -1, inf and -inf.
    Matrix ``ord`` 2, -2 and 'nuc' need singular values and raise
    NotImplementedError.  Integers are computed as float64."""
    return Array(M.norm(node_of(x), ord, axis, keepdims))


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2) -> Array:    # noqa: A002
    """Vector norm of ``x`` over ``axis`` (all axes when None; several axes
    are joined into one) (``np.linalg.vector_norm``), lazily."""
    return Array(M.vector_norm(node_of(x), axis, keepdims, ord))


def matrix_norm(x, /, *, keepdims=False, ord="fro") -> Array:    # noqa: A002
    """Matrix norm over the last two axes (``np.linalg.matrix_norm``), lazily:
    'fro', 1, -1, inf, -inf; ``ord`` 2, -2 and 'nuc' raise NotImplementedError."""
    return Array(M.matrix_norm(node_of(x), keepdims, ord))


def vecdot(x1, x2, /, *, axis=-1) -> Array:
    """Dot product of vectors along ``axis`` (``np.linalg.vecdot``), as ``pa.vecdot``."""
    return _vecdot(x1, x2, axis=axis)


def diagonal(x, /, *, offset=0) -> Array:
    """Diagonal ``offset`` of the last two axes (``np.linalg.diagonal``; the
    top-level ``np.diagonal`` takes the first two): a read-only view, as NumPy's."""
    if isinstance(x, Array):
        return x.diagonal(offset, -2, -1)
    return Array(M.diagonal(node_of(x), offset, -2, -1))


def trace(x, /, *, offset=0, dtype=None) -> Array:
    """Sum along diagonal ``offset`` of the last two axes (``np.linalg.trace``;
    the top-level ``np.trace`` takes the first two), lazily."""
    return Array(M.trace(node_of(x), offset, -2, -1, dtype))


def outer(x1, x2, /) -> Array:
    """Outer product of two vectors (``np.linalg.outer``: 1-D only, where the
    top-level ``np.outer`` flattens), lazily."""
    return Array(M.linalg_outer(node_of(x1), node_of(x2)))


def tensordot(x1, x2, /, *, axes=2) -> Array:
    """Sum of products over ``axes`` (``np.linalg.tensordot``), as ``pa.tensordot``."""
    return _tensordot(x1, x2, axes)


def matmul(x1, x2, /) -> Array:
    """Matrix product ``x1 @ x2`` (``np.linalg.matmul``), as ``pa.matmul``."""
    return _matmul(x1, x2)


def cross(x1, x2, /, *, axis=-1) -> Array:
    """Cross product of (arrays of) 3-vectors along ``axis`` (``np.linalg.cross``:
    3-vectors only, as NumPy's), lazily."""
    return Array(M.linalg_cross(node_of(x1), node_of(x2), axis))
