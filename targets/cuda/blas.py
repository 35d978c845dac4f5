"""Matrix products run by cuBLAS on the device, through nvmath-python's
bindings (``nvmath.bindings.cublas``: NVIDIA's maintained Python bindings,
the library CuPy, JAX and torch call for the same products).

The policy gives cuBLAS a float32/float64 product that nothing is fused
into (``codegen/forms/library.build_product``: the operands' buffers as
stored, A as ``[.., i, k]`` or ``[.., k, i]``, B as ``[.., k, j]`` or
``[.., j, k]``, an operand without batch axes broadcast, the output C
order).  cuBLAS is column-major: a row-major ``M x N`` result is the
column-major ``N x M`` one of ``B^T A^T``, so B is cuBLAS's first operand,
each transposed where it is stored in the other order.  A batch is one
strided-batched call (stride 0 for a broadcast operand).  The handle's math
mode is cuBLAS's default: no TF32 for float32 (NumPy's precision; the
``NVIDIA_TF32_OVERRIDE`` environment variable is the user's to set); a
float32 product whose ``precision`` is "tf32" or "bf16" is ``gemm_ex``
with the fast compute type, and a float16 product (the call
``matmul_half`` that ``codegen/plan/half.py`` makes, on the operands'
bits) ``gemm_ex`` with half inputs and output and float32 sums.  A
step runs between the kernels on the legacy default stream, as they do.

``step_for`` returns None where the bindings are not installed; the target
then runs NumPy's matmul on the host (``targets/library.HostCall``) and
says so in the log.  The policy asks for cuBLAS only where nvmath-python
is installed (``CudaDialect.vendor_blas``).
"""
from __future__ import annotations

import logging
import threading

import numpy as np

log = logging.getLogger("polyarray.cuda")
_STATE = {}
_N, _T = 0, 1               # CUBLAS_OP_N, CUBLAS_OP_T
_R_32F, _R_16F = 0, 2      # cudaDataType CUDA_R_32F, CUDA_R_16F
_DEFAULT_ALGO = -1          # CUBLAS_GEMM_DEFAULT
# a float32 product's precision -> cuBLAS's compute type for it (tensor cores)
_FAST = {"tf32": "COMPUTE_32F_FAST_TF32", "bf16": "COMPUTE_32F_FAST_16BF"}


def cublas():
    """``(nvmath.bindings.cublas, a handle for the current context and
    thread, on stream 0)``, or None (the reason logged once).  A handle per
    thread: a step inside a graph's capture points its handle at the
    capture's stream for the call, which must not redirect another thread's
    call (a Dask worker's) made meanwhile."""
    if "module" not in _STATE:
        try:
            from .bindings import binding
            api = binding("cublas")
            api.get_property(0)                 # loads the library: fails here if absent
            _STATE["module"] = api
        except Exception as e:      # noqa: BLE001  (not installed, or no cuBLAS library)
            _STATE["module"] = None
            log.info("polyarray: cuBLAS is not usable here (%s); products the policy gave it "
                     "run on the host (pip install nvmath-python[cu13])", e)
    api = _STATE["module"]
    if api is None:
        return None
    import pycuda.driver as drv
    ctx = drv.Context.get_current()
    key = ("handle", ctx.handle if ctx is not None else None, threading.get_ident())
    if key not in _STATE:
        h = api.create()
        api.set_stream(h, 0)
        api.set_math_mode(h, int(api.Math.DEFAULT_MATH))
        _STATE[key] = h
    return api, _STATE[key]


def gemm_arguments(facts) -> tuple:
    """The column-major call of a product's facts: ``(op_first,
    op_second, m, n, k, ld_first, ld_second, ldc, stride_first,
    stride_second, stride_c, batch)``, where cuBLAS's first operand is B and
    its second A (``C^T = B^T A^T``)."""
    p = dict(facts["params"])
    M, N, K, batch = facts["M"], facts["N"], facts["K"], facts["batch"]
    # B row-major [k, j] is column-major N x K (ld N): op N; [j, k] is K x N (ld K): op T
    op_b, ld_b = (_T, K) if p["transpose_b"] else (_N, N)
    # A row-major [i, k] is column-major K x M (ld K): op N; [k, i] is M x K (ld M): op T
    op_a, ld_a = (_T, M) if p["transpose_a"] else (_N, K)
    return (op_b, op_a, N, M, K, ld_b, ld_a, N,
            K * N if p["batch_b"] else 0, M * K if p["batch_a"] else 0, M * N, batch)


def product_facts(facts) -> dict:
    """A product call's facts with its sizes: a float16 product's call
    (``matmul_half``, made by ``codegen/plan/half.py``) carries its layout
    and operand shapes only."""
    if "M" in facts:
        return facts
    p = dict(facts["params"])
    (sa, _), (sb, _) = facts["input_specs"]
    M, K = (sa[-1], sa[-2]) if p["transpose_a"] else (sa[-2], sa[-1])
    N = sb[-2] if p["transpose_b"] else sb[-1]
    out = facts["outputs"][0][0]
    return dict(facts, M=M, N=N, K=K, batch=int(np.prod(out[:-2], dtype=np.int64)))


class Gemm:
    """One product: ``{s,d}gemm``, or ``{s,d}gemm_strided_batched`` for a
    batch.  It only enqueues work (``on_stream``): on stream 0 between the
    kernels, or on the stream it is given (a CUDA graph's capture)."""
    on_stream = True

    def __init__(self, info, api):
        f = product_facts(info.facts)
        self.api = api
        half = f["op"] == "matmul_half"
        self.dtype = np.dtype(np.float16) if half else np.dtype(f["outputs"][0][1])
        self.a, self.b, self.c = info.args
        self.args = gemm_arguments(f)
        letter = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
                  np.dtype(np.float16): "h"}[self.dtype]
        fast = _FAST.get(f.get("precision", "highest")) if letter == "s" else \
            "COMPUTE_32F" if half else None
        if fast is None:
            self.gemm = getattr(api, f"{letter}gemm")
            self.batched = getattr(api, f"{letter}gemm_strided_batched")
        else:   # gemm_ex: float32 with its inputs rounded on the tensor cores, or
            #     float16 in and out summed in float32 (HGEMM on the tensor cores)
            compute = int(getattr(api.ComputeType, fast))
            ty = _R_16F if half else _R_32F
            ex, batched_ex = api.gemm_ex, api.gemm_strided_batched_ex
            self.gemm = lambda h, oa, ob, m, n, k, al, a, lda, b, ldb, be, c, ldc: ex(
                h, oa, ob, m, n, k, al, a, ty, lda, b, ty, ldb, be, c, ty, ldc,
                compute, _DEFAULT_ALGO)
            self.batched = lambda h, oa, ob, m, n, k, al, a, lda, sa, b, ldb, sb, be, c, ldc, \
                sc, count: batched_ex(h, oa, ob, m, n, k, al, a, ty, lda, sa, b, ty, ldb,
                                      sb, be, c, ty, ldc, sc, count, compute, _DEFAULT_ALGO)
        # alpha and beta by host pointer (cuBLAS's default pointer mode), of the
        # compute type (float32 for a half product): kept alive here
        scalar = np.float32 if half else self.dtype
        self.one, self.zero = np.ones(1, scalar), np.zeros(1, scalar)
        self.facts = f

    def __call__(self, bufs, stream=None):
        opb, opa, m, n, k, ldb, lda, ldc, sb, sa, sc, batch = self.args
        if not (m and n and batch):
            return
        _, h = cublas()                 # this thread's handle
        a, b, c = int(bufs[self.a]), int(bufs[self.b]), int(bufs[self.c])
        one, zero = self.one.ctypes.data, self.zero.ctypes.data
        if stream is not None:
            self.api.set_stream(h, stream.handle)
        try:
            if batch == 1:
                self.gemm(h, opb, opa, m, n, k, one, b, ldb, a, lda, zero, c, ldc)
            else:
                self.batched(h, opb, opa, m, n, k, one, b, ldb, sb, a, lda, sa, zero, c, ldc,
                             sc, batch)
        finally:
            if stream is not None:
                self.api.set_stream(h, 0)

    def describe(self) -> str:
        f = self.facts
        what = f"{f['batch']} products" if f["batch"] > 1 else "a product"
        precision = f.get("precision", "highest")
        how = f", {precision} tensor cores" if precision != "highest" and \
            self.dtype == np.float32 else ""
        return (f"matmul runs in cuBLAS ({self.dtype.name}{how}, {what} of {f['M']} x {f['K']} "
                f"by {f['K']} x {f['N']})")


def step_for(info, drv, alloc):
    """The cuBLAS step of product ``info``, or None (no bindings)."""
    if info.facts.get("op") not in ("matmul", "matmul_half"):
        return None
    found = cublas()
    return None if found is None else Gemm(info, found[0])
