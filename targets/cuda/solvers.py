"""Library calls run by cuSOLVER on the device, through nvmath-python's
bindings (``nvmath.bindings.cusolverDn``: NVIDIA's maintained Python
bindings of cuSOLVER, the library CuPy and JAX call for the same routines).

A step takes the call's buffers (device pointers) and runs between the
kernels on the legacy default stream, as they do.  ``cholesky``
(``potrf``), ``solve`` and ``inv`` (``getrf``/``getrs``), ``det`` and
``slogdet`` (``getrf``, the diagonal summed on the host) and ``eigh``/
``eigvalsh`` (``syevd``) are here; ``qr``, ``svd``, ``lstsq`` run on the
host.  cuSOLVER is column-major: a row-major symmetric matrix
is its own transpose, so the factor of the other triangle is the factor
asked for (the triangle cuSOLVER leaves alone is cleared by the DAG's
``tril``/``triu`` after the call); a row-major matrix is the transpose of
its column-major reading, so ``solve`` factors that and solves with the
transpose.  A singular or not positive-definite matrix raises NumPy's
``LinAlgError`` when the call's ``info`` is read, which waits for the call.

``step_for`` returns None where the bindings are not installed or the
routine is not here; the target then runs NumPy's LAPACK on the host
(``targets/library.HostCall``) and says so in the log.
"""
from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger("polyarray.cuda")
_HANDLE = {}
_MISSING = {}


def _cusolver():
    """``nvmath.bindings.cusolverDn``, or None (the reason logged once)."""
    if "module" not in _HANDLE:
        try:
            from .bindings import binding
            cusolverDn = binding("cusolverDn")
            _HANDLE["module"] = cusolverDn
        except Exception as e:      # noqa: BLE001  (not installed, or no cuSOLVER library)
            _HANDLE["module"] = None
            _MISSING["cusolver"] = f"{type(e).__name__}: {e}"
            log.info("polyarray: cuSOLVER is not usable here (%s); pa.linalg's "
                     "factorizations run on the host (pip install nvmath-python[cu13])", e)
    return _HANDLE["module"]


def _handle(api):
    """One cuSOLVER handle per context (the current one), on stream 0."""
    import pycuda.driver as drv
    ctx = drv.Context.get_current()
    key = ctx.handle if ctx is not None else None
    if key not in _HANDLE:
        h = api.create()
        api.set_stream(h, 0)
        _HANDLE[key] = h
    return _HANDLE[key]


class Cholesky:
    """``cholesky`` of a stack of ``n x n`` float32/float64 matrices:
    ``potrf`` (one matrix) or ``potrfBatched`` (pointers per matrix)."""

    def __init__(self, info, api, drv, alloc):
        f = info.facts
        (shape, dt), = f["input_specs"]
        self.name, self.api, self.drv, self.alloc = info.name, api, drv, alloc
        self.dtype = np.dtype(dt)
        self.n = shape[-1]
        self.batch = int(np.prod(shape[:-2], dtype=np.int64))
        self.src, self.dst = info.args[0], info.args[1]
        self.nbytes = self.batch * self.n * self.n * self.dtype.itemsize
        upper = dict(f["params"]).get("upper", False)
        # row-major lower (upper) = column-major upper (lower)
        self.uplo = 0 if upper else 1
        letter = {np.dtype(np.float32): "s", np.dtype(np.float64): "d"}[self.dtype]
        self.potrf = getattr(api, f"{letter}potrf")
        self.batched = getattr(api, f"{letter}potrf_batched")
        self.buffer_size = getattr(api, f"{letter}potrf_buffer_size")
        self._lwork = None

    def __call__(self, bufs):
        drv, api = self.drv, self.api
        if not self.nbytes:
            return
        src, dst = int(bufs[self.src]), int(bufs[self.dst])
        drv.memcpy_dtod(dst, src, self.nbytes)
        h = _handle(api)
        info = self.alloc(4 * self.batch)
        n, step = self.n, self.n * self.n * self.dtype.itemsize
        if self.batch == 1:
            if self._lwork is None:
                self._lwork = max(self.buffer_size(h, self.uplo, n, dst, n), 1)
            work = self.alloc(self._lwork * self.dtype.itemsize)
            self.potrf(h, self.uplo, n, dst, n, int(work), self._lwork, int(info))
        else:
            ptrs = np.arange(self.batch, dtype=np.uint64) * np.uint64(step) + np.uint64(dst)
            dptrs = self.alloc(ptrs.nbytes)
            drv.memcpy_htod(dptrs, ptrs)
            self.batched(h, self.uplo, n, int(dptrs), n, int(info), self.batch)
        flags = np.empty(self.batch, np.int32)
        drv.memcpy_dtoh(flags, info)            # waits for the call
        if flags.any():
            raise np.linalg.LinAlgError("Matrix is not positive definite")

    def describe(self) -> str:
        return (f"linalg.cholesky runs in cuSOLVER (potrf{'Batched' if self.batch > 1 else ''}, "
                f"{self.batch} matrices of {self.n} x {self.n})")


def _cublas():
    """The cuBLAS module and the current context's handle (``geam``'s
    transposes around ``solve``): ``blas.cublas``'s."""
    from .blas import cublas
    found = cublas()
    if found is None:
        raise ImportError("cuBLAS is not usable here (nvmath-python's bindings): "
                          "pip install nvmath-python[cu13]")
    return found


class _Factors:
    """What the LU-based steps share: a stack of ``n x n`` matrices, each
    copied into a scratch buffer and factored by ``getrf`` there (the LU of
    its transpose: cuSOLVER reads the row-major matrix column-major)."""

    def __init__(self, info, api, drv, alloc):
        f = info.facts
        (shape, dt), = f["input_specs"][:1]
        self.api, self.drv, self.alloc = api, drv, alloc
        self.dtype = np.dtype(dt)
        self.n = shape[-1]
        self.batch = int(np.prod(shape[:-2], dtype=np.int64))
        self.args = info.args
        self.letter = {np.dtype(np.float32): "s", np.dtype(np.float64): "d"}[self.dtype]
        self.getrf = getattr(api, f"{self.letter}getrf")
        self._lwork = None

    def factor(self, h, src, i, lu, ipiv, info):
        """``getrf`` of matrix ``i`` of ``src`` into ``lu``; its pivots in
        ``ipiv`` and its ``info`` at ``info + 4 i`` (> 0: a zero pivot)."""
        n, size = self.n, self.dtype.itemsize
        if self._lwork is None:
            size_of = getattr(self.api, f"{self.letter}getrf_buffer_size")
            self._lwork = max(size_of(h, n, n, int(lu), n), 1)
            self._work = self.alloc(self._lwork * size)
        self.drv.memcpy_dtod(int(lu), src + i * n * n * size, n * n * size)
        self.getrf(h, n, n, int(lu), n, int(self._work), int(ipiv), int(info) + 4 * i)

    def flags(self, info):
        out = np.empty(self.batch, np.int32)
        self.drv.memcpy_dtoh(out, info)         # waits for the calls
        return out


class Solve(_Factors):
    """``solve`` of a stack of ``n x n`` systems with ``k`` right-hand
    sides: ``getrf`` of each matrix (column-major: the LU of its
    transpose), ``getrs`` with the transpose to solve the matrix itself;
    the right-hand sides go column-major and back through cuBLAS ``geam``
    where ``k > 1`` (one column is the same in both orders)."""

    def __init__(self, info, api, drv, alloc):
        super().__init__(info, api, drv, alloc)
        self.k = info.facts["input_specs"][1][0][-1]
        self.a, self.b, self.x = info.args[0], info.args[1], info.args[2]
        self.getrs = getattr(api, f"{self.letter}getrs")
        self.one, self.zero = np.ones(1, self.dtype), np.zeros(1, self.dtype)

    def __call__(self, bufs):
        drv, api = self.drv, self.api
        n, k, size = self.n, self.k, self.dtype.itemsize
        if not (self.batch and n and k):
            return
        a, b, x = int(bufs[self.a]), int(bufs[self.b]), int(bufs[self.x])
        h = _handle(api)
        lu = self.alloc(n * n * size)
        ipiv = self.alloc(4 * n)
        info = self.alloc(4 * self.batch)       # getrf's: > 0 where a pivot is zero
        said = self.alloc(4)                    # getrs's (its arguments only)
        if k > 1:
            cublas, hb = _cublas()
            geam = getattr(cublas, f"{self.letter}geam")
            cols = self.alloc(n * k * size)
            one, zero = self.one.ctypes.data, self.zero.ctypes.data
        for i in range(self.batch):
            self.factor(h, a, i, lu, ipiv, info)
            bi, xi = b + i * n * k * size, x + i * n * k * size
            if k == 1:
                drv.memcpy_dtod(xi, bi, n * size)
                self.getrs(h, 1, n, 1, int(lu), n, int(ipiv), xi, n, int(said))
            else:       # row-major n x k is column-major k x n: transposed, solved, back
                geam(hb, 1, 0, n, k, one, bi, k, zero, int(cols), n, int(cols), n)
                self.getrs(h, 1, n, k, int(lu), n, int(ipiv), int(cols), n, int(said))
                geam(hb, 1, 0, k, n, one, int(cols), n, zero, xi, k, xi, k)
        if self.flags(info).any():
            raise np.linalg.LinAlgError("Singular matrix")

    def describe(self) -> str:
        return (f"linalg.solve runs in cuSOLVER (getrf and getrs, {self.batch} systems of "
                f"{self.n} x {self.n} with {self.k} right-hand sides)")


# 1.0's most significant 32-bit word (float64: the high word; the low one is 0)
_ONE_WORD = {np.dtype(np.float32): 0x3F800000, np.dtype(np.float64): 0x3FF00000}


def _identity(drv, ptr, n, dtype):
    """The ``n x n`` identity written on the device at ``ptr``: zeros, then
    the diagonal's words of 1.0 by a 2-D memset whose rows are ``n + 1``
    elements apart (no host copy: uploading it cost a 2048^2 float64
    ``inv`` as much as the factorization)."""
    size = dtype.itemsize
    drv.memset_d8(ptr, 0, n * n * size)
    drv.memset_d2d32(ptr + size - 4, (n + 1) * size, _ONE_WORD[dtype], 1, n)


class Inverse(_Factors):
    """``inv``: ``getrf`` of each matrix (the LU of its transpose ``A^T``),
    then ``getrs`` of the identity without transposing: ``X = inv(A^T)``
    column-major, which read row-major is ``inv(A)``."""

    def __call__(self, bufs):
        n, size = self.n, self.dtype.itemsize
        if not (self.batch and n):
            return
        api, drv = self.api, self.drv
        a, x = int(bufs[self.args[0]]), int(bufs[self.args[1]])
        h = _handle(api)
        lu, ipiv = self.alloc(n * n * size), self.alloc(4 * n)
        info, said = self.alloc(4 * self.batch), self.alloc(4)
        getrs = getattr(api, f"{self.letter}getrs")
        for i in range(self.batch):
            self.factor(h, a, i, lu, ipiv, info)
            xi = x + i * n * n * size
            _identity(drv, xi, n, self.dtype)
            getrs(h, 0, n, n, int(lu), n, int(ipiv), xi, n, int(said))
        if self.flags(info).any():
            raise np.linalg.LinAlgError("Singular matrix")

    def describe(self) -> str:
        return (f"linalg.inv runs in cuSOLVER (getrf and getrs of the identity, {self.batch} "
                f"matrices of {self.n} x {self.n})")


class Determinant(_Factors):
    """``det`` and ``slogdet``: ``getrf`` of each matrix on the device (the
    transpose has the same determinant), then its ``n`` diagonal values and
    pivots copied to the host, where the sign and ``log|det|`` are summed as
    NumPy's ``umath_linalg`` sums them (``det = sign * exp(logdet)``)."""

    def __call__(self, bufs):
        n, size = self.n, self.dtype.itemsize
        if not self.batch:
            return
        api, drv = self.api, self.drv
        a = int(bufs[self.args[0]])
        h = _handle(api)
        lu, ipiv = self.alloc(max(n * n, 1) * size), self.alloc(4 * max(n, 1))
        info = self.alloc(4 * self.batch)
        signs = np.ones(self.batch, self.dtype)
        logs = np.zeros(self.batch, self.dtype)
        diag, piv = np.empty(n, self.dtype), np.empty(n, np.int32)
        on_device = self.alloc(max(n, 1) * size)
        cublas, hb = _cublas()
        copy = getattr(cublas, f"{self.letter}copy")
        for i in range(self.batch if n else 0):
            self.factor(h, a, i, lu, ipiv, info)
            copy(hb, n, int(lu), n + 1, int(on_device), 1)     # the diagonal, gathered
            drv.memcpy_dtoh(piv, ipiv)
            drv.memcpy_dtoh(diag, on_device)
            swaps = int(np.count_nonzero(piv != np.arange(1, n + 1)))
            with np.errstate(divide="ignore"):
                signs[i] = (-1.0) ** swaps * np.prod(np.sign(diag))
                logs[i] = np.sum(np.log(np.abs(diag)))
        logs[signs == 0] = -np.inf
        if len(self.args) == 2:                             # det
            with np.errstate(over="ignore"):
                drv.memcpy_htod(int(bufs[self.args[1]]), signs * np.exp(logs))
        else:                                               # slogdet
            drv.memcpy_htod(int(bufs[self.args[1]]), signs)
            drv.memcpy_htod(int(bufs[self.args[2]]), logs)

    def describe(self) -> str:
        what = "det" if len(self.args) == 2 else "slogdet"
        return (f"linalg.{what} runs in cuSOLVER (getrf, {self.batch} matrices of {self.n} x "
                f"{self.n}; the diagonal's sum of logs on the host)")


class Eigh:
    """``eigh`` and ``eigvalsh``: ``syevd`` of each matrix.  cuSOLVER reads
    the row-major matrix column-major, its transpose: the ``UPLO`` triangle
    of the one is the other triangle of the other.  The eigenvalues come
    ascending, as NumPy's; the eigenvectors come as the columns of a
    column-major matrix, transposed into the row-major result by cuBLAS
    ``geam`` (their signs are the library's, as LAPACK's are LAPACK's)."""

    def __init__(self, info, api, drv, alloc):
        f = info.facts
        (shape, dt), = f["input_specs"]
        self.api, self.drv, self.alloc = api, drv, alloc
        self.dtype = np.dtype(dt)
        self.n = shape[-1]
        self.batch = int(np.prod(shape[:-2], dtype=np.int64))
        self.args = info.args
        self.vectors = f["op"] == "eigh"
        self.uplo = 1 if dict(f["params"]).get("UPLO", "L") == "L" else 0
        self.letter = {np.dtype(np.float32): "s", np.dtype(np.float64): "d"}[self.dtype]
        self.one, self.zero = np.ones(1, self.dtype), np.zeros(1, self.dtype)

    def __call__(self, bufs):
        n, size, api, drv = self.n, self.dtype.itemsize, self.api, self.drv
        if not (self.batch and n):
            return
        a, w = int(bufs[self.args[0]]), int(bufs[self.args[1]])
        h = _handle(api)
        jobz = int(self.vectors)
        work_on = self.alloc(n * n * size)
        size_of = getattr(api, f"{self.letter}syevd_buffer_size")
        lwork = max(size_of(h, jobz, self.uplo, n, int(work_on), n, w), 1)
        work, info = self.alloc(lwork * size), self.alloc(4 * self.batch)
        syevd = getattr(api, f"{self.letter}syevd")
        if self.vectors:
            cublas, hb = _cublas()
            geam = getattr(cublas, f"{self.letter}geam")
            v = int(bufs[self.args[2]])
            one, zero = self.one.ctypes.data, self.zero.ctypes.data
        for i in range(self.batch):
            drv.memcpy_dtod(int(work_on), a + i * n * n * size, n * n * size)
            syevd(h, jobz, self.uplo, n, int(work_on), n, w + i * n * size, int(work), lwork,
                  int(info) + 4 * i)
            if self.vectors:
                vi = v + i * n * n * size
                geam(hb, 1, 0, n, n, one, int(work_on), n, zero, vi, n, vi, n)
        flags = np.empty(self.batch, np.int32)
        drv.memcpy_dtoh(flags, info)            # waits for the calls
        if flags.any():
            raise np.linalg.LinAlgError("Eigenvalues did not converge")

    def describe(self) -> str:
        return (f"linalg.{'eigh' if self.vectors else 'eigvalsh'} runs in cuSOLVER (syevd, "
                f"{self.batch} matrices of {self.n} x {self.n})")


STEPS = {"cholesky": Cholesky, "solve": Solve, "inv": Inverse, "det": Determinant,
         "slogdet": Determinant, "eigh": Eigh, "eigvalsh": Eigh}


def step_for(info, drv, alloc):
    """The cuSOLVER step of library call ``info``, or None (no bindings, or
    a routine or dtype not here)."""
    cls = STEPS.get(info.facts.get("op"))
    if cls is None or np.dtype(info.facts["input_specs"][0][1]) not in (np.float32, np.float64):
        return None
    api = _cusolver()
    return None if api is None else cls(info, api, drv, alloc)
