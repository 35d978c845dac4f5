"""Library calls run by cuSOLVER on the device, through nvmath-python's
bindings (``nvmath.bindings.cusolverDn``: NVIDIA's maintained Python
bindings of cuSOLVER, the library CuPy and JAX call for the same routines).

A step takes the call's buffers (device pointers) and runs between the
kernels on the legacy default stream, as they do.  ``cholesky`` and
``solve`` are here.  cuSOLVER is column-major: a row-major symmetric matrix
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
            from nvmath.bindings import cusolverDn
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
    """A cuBLAS handle for the current context, on stream 0 (``geam``'s
    transposes around ``solve``), and the module."""
    import pycuda.driver as drv
    from nvmath.bindings import cublas
    ctx = drv.Context.get_current()
    key = ("cublas", ctx.handle if ctx is not None else None)
    if key not in _HANDLE:
        h = cublas.create()
        cublas.set_stream(h, 0)
        _HANDLE[key] = h
    return cublas, _HANDLE[key]


class Solve:
    """``solve`` of a stack of ``n x n`` systems with ``k`` right-hand
    sides: ``getrf`` of each matrix (column-major: the LU of its
    transpose), ``getrs`` with the transpose to solve the matrix itself;
    the right-hand sides go column-major and back through cuBLAS ``geam``
    where ``k > 1`` (one column is the same in both orders)."""

    def __init__(self, info, api, drv, alloc):
        f = info.facts
        (ashape, dt), (bshape, _) = f["input_specs"]
        self.api, self.drv, self.alloc = api, drv, alloc
        self.dtype = np.dtype(dt)
        self.n, self.k = ashape[-1], bshape[-1]
        self.batch = int(np.prod(ashape[:-2], dtype=np.int64))
        self.a, self.b, self.x = info.args[0], info.args[1], info.args[2]
        letter = {np.dtype(np.float32): "s", np.dtype(np.float64): "d"}[self.dtype]
        self.getrf = getattr(api, f"{letter}getrf")
        self.getrs = getattr(api, f"{letter}getrs")
        self.buffer_size = getattr(api, f"{letter}getrf_buffer_size")
        self.letter = letter
        self.one, self.zero = np.ones(1, self.dtype), np.zeros(1, self.dtype)
        self._lwork = None

    def __call__(self, bufs):
        drv, api = self.drv, self.api
        n, k, size = self.n, self.k, self.dtype.itemsize
        if not (self.batch and n and k):
            return
        a, b, x = int(bufs[self.a]), int(bufs[self.b]), int(bufs[self.x])
        h = _handle(api)
        lu = self.alloc(n * n * size)
        if self._lwork is None:
            self._lwork = max(self.buffer_size(h, n, n, int(lu), n), 1)
        work = self.alloc(self._lwork * size)
        ipiv = self.alloc(4 * n)
        info = self.alloc(4 * self.batch)       # getrf's: > 0 where a pivot is zero
        said = self.alloc(4)                    # getrs's (its arguments only)
        if k > 1:
            cublas, hb = _cublas()
            geam = getattr(cublas, f"{self.letter}geam")
            cols = self.alloc(n * k * size)
            one, zero = self.one.ctypes.data, self.zero.ctypes.data
        for i in range(self.batch):
            drv.memcpy_dtod(int(lu), a + i * n * n * size, n * n * size)
            self.getrf(h, n, n, int(lu), n, int(work), int(ipiv), int(info) + 4 * i)
            bi, xi = b + i * n * k * size, x + i * n * k * size
            if k == 1:
                drv.memcpy_dtod(xi, bi, n * size)
                self.getrs(h, 1, n, 1, int(lu), n, int(ipiv), xi, n, int(said))
            else:       # row-major n x k is column-major k x n: transposed, solved, back
                geam(hb, 1, 0, n, k, one, bi, k, zero, int(cols), n, int(cols), n)
                self.getrs(h, 1, n, k, int(lu), n, int(ipiv), int(cols), n, int(said))
                geam(hb, 1, 0, k, n, one, int(cols), n, zero, xi, k, xi, k)
        flags = np.empty(self.batch, np.int32)
        drv.memcpy_dtoh(flags, info)            # waits for the calls
        if flags.any():
            raise np.linalg.LinAlgError("Singular matrix")

    def describe(self) -> str:
        return (f"linalg.solve runs in cuSOLVER (getrf and getrs, {self.batch} systems of "
                f"{self.n} x {self.n} with {self.k} right-hand sides)")


STEPS = {"cholesky": Cholesky, "solve": Solve}


def step_for(info, drv, alloc):
    """The cuSOLVER step of library call ``info``, or None (no bindings, or
    a routine or dtype not here)."""
    cls = STEPS.get(info.facts.get("op"))
    if cls is None or np.dtype(info.facts["input_specs"][0][1]) not in (np.float32, np.float64):
        return None
    api = _cusolver()
    return None if api is None else cls(info, api, drv, alloc)
