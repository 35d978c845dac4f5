"""``pa.linalg``: the public ``numpy.linalg`` namespace over lazy arrays:
products, norms and diagonals (kernels of their own), and the
factorizations and solves (``cholesky``, ``solve``, ``inv``, ``det``,
``slogdet``, ``eigh``, ``eigvalsh``, ``qr``, ``svd``, ``svdvals``,
``lstsq``), each one library call in the DAG (``polyarray.ops.solvers``:
LAPACK through NumPy on the numpy target; which library runs it on a device
is the policy's choice, ``docs/design/linalg.md``), with ``pinv``,
``matrix_rank``, ``matrix_power``, ``multi_dot`` and the matrix norms built
on them as NumPy builds them.  Stacks of matrices follow NumPy's batching;
a singular or not positive-definite matrix raises NumPy's ``LinAlgError``
when the call runs.  The node builders are :mod:`polyarray.ops.matrices`,
:mod:`polyarray.ops.linalg` and :mod:`polyarray.ops.solvers` (internal
modules, not this one)."""
from __future__ import annotations

import math
import operator
from typing import NamedTuple

import numpy as _np

from .array import Array, node_of
from .api.creation import eye as _eye
from .api.matrices import tril as _tril, triu as _triu
from .api.elementwise import where as _where
from .api.creation import asarray as _asarray, empty as _empty
from .api.matrices import matmul as _matmul, tensordot as _tensordot, vecdot as _vecdot
from .api.shapes import broadcast_to as _broadcast_to, matrix_transpose
from .api.indexing import _values
from .ops import matrices as M, solvers as S

__all__ = ["norm", "vector_norm", "matrix_norm", "vecdot", "matrix_transpose", "diagonal",
           "trace", "outer", "tensordot", "matmul", "cross", "cholesky", "solve", "inv",
           "det", "slogdet", "eig", "eigvals", "eigh", "eigvalsh", "qr", "svd", "svdvals",
           "lstsq", "pinv", "matrix_rank", "matrix_power", "multi_dot", "LinAlgError",
           "EigResult", "EighResult", "QRResult", "SlogdetResult", "SVDResult"]

LinAlgError = _np.linalg.LinAlgError


class EighResult(NamedTuple):
    """``eigh``'s result: eigenvalues (ascending) and eigenvectors (columns)."""
    eigenvalues: Array
    eigenvectors: Array


class EigResult(NamedTuple):
    """``eig``'s result: eigenvalues and eigenvectors (columns)."""
    eigenvalues: Array
    eigenvectors: Array


class QRResult(NamedTuple):
    """``qr``'s result: ``Q`` (orthonormal columns) and ``R`` (upper triangular)."""
    Q: Array
    R: Array


class SlogdetResult(NamedTuple):
    """``slogdet``'s result: the determinant is ``sign * exp(logabsdet)``."""
    sign: Array
    logabsdet: Array


class SVDResult(NamedTuple):
    """``svd``'s result: ``a == (U * S[..., None, :]) @ Vh``."""
    U: Array
    S: Array
    Vh: Array


def __dir__():
    """Its functions alone (the names it imports stay unlisted)."""
    return list(__all__)


def norm(x, ord=None, axis=None, keepdims=False) -> Array:     # noqa: A002
    """Vector or matrix norm of ``x`` (``np.linalg.norm``), lazily.

    Vector norms of any ``ord``; matrix norms 'fro', 'nuc', 1, -1, 2, -2,
    inf and -inf (2, -2 and 'nuc' from the singular values).  Integers are
    computed as float64."""
    return Array(M.norm(node_of(x), ord, axis, keepdims))


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2) -> Array:    # noqa: A002
    """Vector norm of ``x`` over ``axis`` (all axes when None; several axes
    are joined into one) (``np.linalg.vector_norm``), lazily."""
    return Array(M.vector_norm(node_of(x), axis, keepdims, ord))


def matrix_norm(x, /, *, keepdims=False, ord="fro") -> Array:    # noqa: A002
    """Matrix norm over the last two axes (``np.linalg.matrix_norm``), lazily:
    'fro', 'nuc', 1, -1, 2, -2, inf, -inf."""
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


def cholesky(a, /, *, upper=False) -> Array:
    """The Cholesky factor of (a stack of) Hermitian positive-definite
    matrices (``np.linalg.cholesky``): lower, or upper with ``upper=True``.
    Only the lower triangle is read (the upper with ``upper=True``)."""
    # a device library leaves the other triangle as it was: cleared here (a
    # no-op on NumPy's factor), fused into the kernel after the call
    f = Array(S.cholesky(node_of(a), upper))
    return _triu(f) if upper else _tril(f)


def solve(a, b, /) -> Array:
    """``x`` with ``a @ x == b`` (``np.linalg.solve``): ``b`` is a vector
    only where it is 1-D, else a stack of matrices (NumPy 2's rule)."""
    return Array(S.solve(node_of(a), node_of(b)))


def inv(a, /) -> Array:
    """The inverse of (a stack of) square matrices (``np.linalg.inv``)."""
    return Array(S.inv(node_of(a)))


def det(a, /) -> Array:
    """The determinant of (a stack of) square matrices (``np.linalg.det``)."""
    return Array(S.det(node_of(a)))


def slogdet(a, /) -> SlogdetResult:
    """``(sign, logabsdet)`` of the determinant (``np.linalg.slogdet``)."""
    return SlogdetResult(*map(Array, S.slogdet(node_of(a))))


def eigh(a, /, UPLO="L") -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of (a stack of) symmetric or
    Hermitian matrices (``np.linalg.eigh``), from the ``UPLO`` triangle."""
    return EighResult(*map(Array, S.eigh(node_of(a), UPLO)))


def eig(a, /) -> EigResult:
    """Eigenvalues and right eigenvectors of (a stack of) square matrices
    (``np.linalg.eig``).

    Eager: NumPy's result is real where every eigenvalue is real and complex
    otherwise, a dtype that depends on the values, so ``a`` is evaluated now
    (on the default target), LAPACK's ``geev`` runs on the host, and the
    results are data arrays; ``pa.LazyValueError`` if ``a`` depends on
    placeholders (inside ``pa.jit``: a graph break)."""
    w, v = _np.linalg.eig(_square_values(a, "linalg.eig"))
    return EigResult(_asarray(w), _asarray(v))


def eigvals(a, /) -> Array:
    """The eigenvalues of ``eig`` alone (``np.linalg.eigvals``); eager, as ``eig``."""
    return _asarray(_np.linalg.eigvals(_square_values(a, "linalg.eigvals")))


def _square_values(a, what):
    """``a``'s NumPy value now, checked as NumPy's ``linalg`` checks it."""
    x = node_of(a)
    S.compute_dtype(x, what=what)                   # float16 refused, as NumPy
    return _values(a, what, depends="dtype")


def eigvalsh(a, /, UPLO="L") -> Array:
    """The eigenvalues of ``eigh`` alone (``np.linalg.eigvalsh``)."""
    return Array(S.eigvalsh(node_of(a), UPLO))


def qr(a, /, mode="reduced"):
    """``QRResult(Q, R)`` of (a stack of) matrices (``np.linalg.qr``);
    ``mode`` "reduced", "complete", or "r" (``R`` alone)."""
    out = [Array(n) for n in S.qr(node_of(a), mode)]
    return out[0] if mode == "r" else QRResult(*out)


def svd(a, /, full_matrices=True, compute_uv=True, hermitian=False):
    """``SVDResult(U, S, Vh)`` (``np.linalg.svd``), or the singular values
    alone without ``compute_uv``."""
    out = [Array(n) for n in S.svd(node_of(a), full_matrices, compute_uv, hermitian)]
    return SVDResult(*out) if compute_uv else out[0]


def svdvals(x, /) -> Array:
    """The singular values, descending (``np.linalg.svdvals``)."""
    return Array(S.svd(node_of(x), compute_uv=False)[0])


def lstsq(a, b, rcond=None):
    """``(x, residuals, rank, s)``: the least-squares solution of ``a @ x =
    b`` (``np.linalg.lstsq``; ``rcond`` None: machine precision times
    ``max(M, N)``).  ``residuals`` has a shape that depends on ``rank``
    (empty unless ``rank == N < M``), so it is computed when ``lstsq`` is
    called where ``M > N`` (a graph break inside ``pa.jit``)."""
    A, B = _asarray(a), _asarray(b)
    an, bn = node_of(A), node_of(B)
    x, rank, s = S.lstsq(an, bn, rcond)
    x, rank, s = Array(x), Array(rank), Array(s)
    m, n = an.shape
    t = x.dtype
    if m > n and int(rank) == n:
        r = B - _matmul(A, x)
        r = (abs(r) ** 2).sum(axis=0)
        residuals = r.astype(S.real_dtype(t)).reshape(-1 if bn.ndim == 2 else 1)
    else:
        residuals = _empty((0,), dtype=S.real_dtype(t))
    return x, residuals, rank, s


def pinv(a, /, rcond=None, hermitian=False, *, rtol=_np._NoValue):
    """The Moore-Penrose pseudo-inverse (``np.linalg.pinv``): from the SVD,
    singular values at most ``rcond`` (or ``rtol``) times the largest taken
    as zero, as NumPy does."""
    x = _asarray(a)
    if rcond is None:
        if rtol is _np._NoValue:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(x.shape[-2:]) * _np.finfo(S.real_dtype(S.compute_dtype(
                node_of(x), what="pinv"))).eps
        else:
            rcond = rtol
    elif rtol is not _np._NoValue:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    if x.ndim >= 2 and 0 in x.shape[-2:]:
        t = S.compute_dtype(node_of(x), what="pinv")
        return _empty(x.shape[:-2] + (x.shape[-1], x.shape[-2]), dtype=t)
    u, s, vt = svd(x.conj() if x.dtype.kind == "c" else x, full_matrices=False,
                   hermitian=hermitian)
    rc = rcond if _np.isscalar(rcond) else _asarray(rcond)[..., None]
    cutoff = rc * s.max(axis=-1, keepdims=True)
    large = s > cutoff
    s_inv = _where(large, 1 / _where(large, s, 1), 0).astype(s.dtype)
    return _matmul(matrix_transpose(vt), s_inv[..., None] * matrix_transpose(u))


def matrix_rank(A, /, tol=None, hermitian=False, *, rtol=None) -> Array:
    """The number of singular values above ``tol`` (``np.linalg.matrix_rank``;
    default: the largest times machine precision times ``max(M, N)``, or
    times ``rtol``)."""
    x = _asarray(A)
    if x.ndim < 2:
        return (x != 0).any().astype(_np.int64)
    s = svdvals(x) if not hermitian else abs(eigvalsh(x))
    if tol is None:
        if rtol is None:
            rtol = max(x.shape[-2:]) * _np.finfo(s.dtype).eps
        r = rtol if _np.isscalar(rtol) else _asarray(rtol)[..., None]
        tol = s.max(axis=-1, keepdims=True) * r
    else:
        if rtol is not None:
            raise ValueError("`tol` and `rtol` can't be both set.")
        tol = tol if _np.isscalar(tol) else _asarray(tol)[..., None]
    return (s > tol).sum(axis=-1).astype(_np.int64)


def matrix_power(a, n, /) -> Array:
    """``a`` to the integer power ``n`` (``np.linalg.matrix_power``): binary
    decomposition into products, as NumPy; ``n < 0`` inverts first."""
    x = _asarray(a)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise LinAlgError(f"matrix_power: last 2 dimensions of the array must be square, got "
                          f"shape {x.shape}")
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n == 0:
        eye = _eye(x.shape[-1], dtype=x.dtype)
        return _broadcast_to(eye, x.shape) if x.ndim > 2 else eye
    if n < 0:
        x, n = inv(x), -n
    if n == 1:
        return x
    result, z = None, None
    while n > 0:
        z = x if z is None else _matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else _matmul(result, z)
    return result


def multi_dot(arrays, *, out=None) -> Array:
    """The product of two or more arrays in the cheapest order
    (``np.linalg.multi_dot``, NumPy's matrix-chain order): the first may be
    a 1-D row vector and the last a 1-D column vector."""
    if out is not None:
        raise NotImplementedError("multi_dot: out= is not supported (polyarray arrays are "
                                  "immutable results)")
    arrays = [_asarray(a) for a in arrays]
    n = len(arrays)
    if n < 2:
        raise ValueError("Expecting at least two arrays.")
    if n == 2:
        return _matmul(arrays[0], arrays[1])
    first, last = arrays[0].ndim == 1, arrays[-1].ndim == 1
    if first:
        arrays[0] = arrays[0][None, :]
    if last:
        arrays[-1] = arrays[-1][:, None]
    for a in arrays:
        if a.ndim != 2:
            raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be two-"
                              "dimensional")
    dims = [a.shape[0] for a in arrays] + [arrays[-1].shape[1]]
    order = _chain_order(dims)
    result = _chain(arrays, order, 0, n - 1)
    if first and last:
        return result[0, 0]
    if first:
        return result[0, :]
    if last:
        return result[:, 0]
    return result


def _chain_order(p):
    """NumPy's ``_multi_dot_matrix_chain_order``: the split of each chain."""
    n = len(p) - 1
    m = [[0] * n for _ in range(n)]
    s = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            m[i][j] = math.inf
            for k in range(i, j):
                q = m[i][k] + m[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if q < m[i][j]:
                    m[i][j], s[i][j] = q, k
    return s


def _chain(arrays, s, i, j):
    """The product of ``arrays[i..j]`` in order ``s``, without recursion."""
    stack, done = [(i, j, False)], {}
    while stack:
        i, j, expanded = stack.pop()
        if i == j:
            done[i, j] = arrays[i]
        elif expanded:
            k = s[i][j]
            done[i, j] = _matmul(done.pop((i, k)), done.pop((k + 1, j)))
        else:
            k = s[i][j]
            stack += [(i, j, True), (k + 1, j, False), (i, k, False)]
    return done[i, j]

