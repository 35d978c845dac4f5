"""Node builders for ``pa.linalg``'s factorizations and solves: each is one
library call (``ir.nodes.LibraryCallOutput``), on inputs brought to the
call's canonical form here, so every target's library sees one layout:

- the dtype NumPy's ``linalg`` computes in (float32 where every input is
  float32 or complex64, else float64; complex where an input is complex;
  float16 refused as NumPy refuses it), the inputs cast to it;
- the stacks of matrices broadcast to one batch shape;
- ``solve``'s and ``lstsq``'s right-hand side always a matrix (a vector is
  a one-column matrix, taken apart again after the call).

Shapes and dtypes are known at once, as for every node; a singular or not
positive-definite matrix is found when the call runs and raises NumPy's
``LinAlgError`` there."""
from __future__ import annotations

import numpy as np

from ..ir import nodes as N
from .creation import as_node
from .elementwise import astype, broadcast_shapes
from .shapes import broadcast_to, expand_dims, squeeze

LinAlgError = np.linalg.LinAlgError


def compute_dtype(*nodes, what) -> np.dtype:
    """The dtype NumPy's ``linalg`` computes ``what`` in (its ``_commonType``)."""
    single, cplx = True, False
    for n in nodes:
        dt = n.dtype
        if dt == np.float16:
            raise TypeError(f"array type float16 is unsupported in linalg ({what}); cast it "
                            "to float32 first")
        if dt.kind == "c":
            cplx = True
        single = single and dt in (np.dtype(np.float32), np.dtype(np.complex64))
    if cplx:
        return np.dtype(np.complex64 if single else np.complex128)
    return np.dtype(np.float32 if single else np.float64)


def real_dtype(dt) -> np.dtype:
    return np.dtype(np.float32 if np.dtype(dt) in (np.float32, np.complex64) else np.float64)


def _matrices(x, what, square=False):
    x = as_node(x)
    if x.ndim < 2:
        raise LinAlgError(f"{what}: {x.ndim}-dimensional array given. Array must be at least "
                          "two-dimensional")
    if square and x.shape[-1] != x.shape[-2]:
        raise LinAlgError(f"{what}: last 2 dimensions of the array must be square, got shape "
                          f"{x.shape}")
    return x


def library_call(op, inputs, outputs, **params) -> list:
    """The outputs (nodes) of one call of ``op``."""
    outs = tuple((tuple(shape), np.dtype(dt).str) for shape, dt in outputs)
    params = tuple(sorted(params.items()))
    return [N.LibraryCallOutput.make(tuple(shape), np.dtype(dt), op, params, tuple(inputs),
                                     outs, i)
            for i, (shape, dt) in enumerate(outputs)]


def cholesky(a, upper=False) -> N.Node:
    a = _matrices(a, "cholesky", square=True)
    t = compute_dtype(a, what="cholesky")
    return library_call("cholesky", [astype(a, t)], [(a.shape, t)], upper=bool(upper))[0]


def inv(a) -> N.Node:
    a = _matrices(a, "inv", square=True)
    t = compute_dtype(a, what="inv")
    return library_call("inv", [astype(a, t)], [(a.shape, t)])[0]


def solve(a, b) -> N.Node:
    """NumPy 2's rule: ``b`` is a vector only where it is 1-D; else a stack of
    matrices ``(..., M, K)``."""
    a, b = _matrices(a, "solve", square=True), as_node(b)
    t = compute_dtype(a, b, what="solve")
    m = a.shape[-1]
    vector = b.ndim == 1
    if vector:
        b = expand_dims(b, -1)
    if b.ndim < 2 or b.shape[-2] != m:
        raise ValueError(f"solve: b of shape {tuple(b.shape) if not vector else (m,)} does not "
                         f"match a of shape {a.shape} (b must be (M,) or (..., M, K) with "
                         f"M = {m})")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2], what="solve's stacks")
    a = broadcast_to(astype(a, t), batch + a.shape[-2:])
    b = broadcast_to(astype(b, t), batch + b.shape[-2:])
    x = library_call("solve", [a, b], [(b.shape, t)])[0]
    return squeeze(x, -1) if vector else x


def det(a) -> N.Node:
    a = _matrices(a, "det", square=True)
    t = compute_dtype(a, what="det")
    return library_call("det", [astype(a, t)], [(a.shape[:-2], t)])[0]


def slogdet(a) -> list:
    """``[sign, logabsdet]``."""
    a = _matrices(a, "slogdet", square=True)
    t = compute_dtype(a, what="slogdet")
    return library_call("slogdet", [astype(a, t)],
                        [(a.shape[:-2], t), (a.shape[:-2], real_dtype(t))])


def _uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise ValueError(f"UPLO argument must be 'L' or 'U', got {UPLO!r}")
    return UPLO


def eigh(a, UPLO="L") -> list:
    """``[eigenvalues, eigenvectors]``, eigenvalues ascending."""
    a = _matrices(a, "eigh", square=True)
    t = compute_dtype(a, what="eigh")
    return library_call("eigh", [astype(a, t)], [(a.shape[:-1], real_dtype(t)), (a.shape, t)],
                 UPLO=_uplo(UPLO))


def eigvalsh(a, UPLO="L") -> N.Node:
    a = _matrices(a, "eigvalsh", square=True)
    t = compute_dtype(a, what="eigvalsh")
    return library_call("eigvalsh", [astype(a, t)], [(a.shape[:-1], real_dtype(t))],
                 UPLO=_uplo(UPLO))[0]


def qr(a, mode="reduced") -> list:
    """``[Q, R]`` (``mode`` "reduced" or "complete"), or ``[R]`` ("r")."""
    a = _matrices(a, "qr")
    if mode not in ("reduced", "complete", "r"):
        if mode == "raw":
            raise NotImplementedError("qr: mode='raw' (LAPACK's Householder reflectors) is "
                                      "not supported; use 'reduced', 'complete' or 'r'")
        raise ValueError(f"qr: unrecognized mode {mode!r}")
    t = compute_dtype(a, what="qr")
    *batch, m, n = a.shape
    k = min(m, n)
    batch = tuple(batch)
    if mode == "r":
        shapes = [(batch + (k, n), t)]
    elif mode == "complete":
        shapes = [(batch + (m, m), t), (batch + (m, n), t)]
    else:
        shapes = [(batch + (m, k), t), (batch + (k, n), t)]
    return library_call("qr", [astype(a, t)], shapes, mode=mode)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False) -> list:
    """``[U, S, Vh]``, or ``[S]`` without ``compute_uv``."""
    a = _matrices(a, "svd", square=bool(hermitian))
    t = compute_dtype(a, what="svd")
    *batch, m, n = a.shape
    k, batch = min(m, n), tuple(batch)
    s = (batch + (k,), real_dtype(t))
    if not compute_uv:
        return library_call("svdvals", [astype(a, t)], [s], hermitian=bool(hermitian))
    u = (batch + ((m, m) if full_matrices else (m, k)), t)
    vh = (batch + ((n, n) if full_matrices else (k, n)), t)
    return library_call("svd", [astype(a, t)], [u, s, vh], full_matrices=bool(full_matrices),
                 hermitian=bool(hermitian))


def lstsq(a, b, rcond=None) -> list:
    """``[x, rank, s]`` (the residuals' shape depends on ``rank``: the face
    builds them).  ``rcond`` None: NumPy's default, machine precision times
    ``max(M, N)``."""
    a, b = as_node(a), as_node(b)
    if a.ndim != 2:
        raise LinAlgError(f"lstsq: {a.ndim}-dimensional array given. Array must be two-"
                          "dimensional")
    if b.ndim not in (1, 2):
        raise LinAlgError(f"lstsq: {b.ndim}-dimensional array given. Array must be one or "
                          "two-dimensional")
    m, n = a.shape
    if b.shape[0] != m:
        raise LinAlgError(f"lstsq: incompatible dimensions: a is {a.shape}, b is {b.shape}")
    t = compute_dtype(a, b, what="lstsq")
    vector = b.ndim == 1
    if vector:
        b = expand_dims(b, -1)
    if rcond is None:
        rcond = float(np.finfo(real_dtype(t)).eps * max(m, n))
    x, rank, s = library_call("lstsq", [astype(a, t), astype(b, t)],
                       [((n, b.shape[1]), t), ((), np.int32), ((min(m, n),), real_dtype(t))],
                       rcond=float(rcond))
    return [squeeze(x, -1) if vector else x, rank, s]
