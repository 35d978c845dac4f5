"""Library calls (``LibraryCallOutput`` nodes) as NumPy computes them: the
numpy target runs these, and a device target runs them on the host (its
inputs copied out, the results copied back, both logged) where it has no
library of its own for the routine.  NumPy's ``linalg`` is LAPACK and its
``fft`` pocketfft, so these are the reference for every target's result.

Inputs come in the canonical form of ``polyarray.ops.solvers`` (dtype,
batch shape, matrices) or ``polyarray.ops.fourier`` (transforms over the
trailing axes, unnormalized); each function returns the declared outputs."""
from __future__ import annotations

import numpy as np

from polyarray.ir.nodes import FFT_OPS, library_name


def _cholesky(a, upper):
    return (np.linalg.cholesky(a, upper=upper),)


def _eigh(a, UPLO):
    w, v = np.linalg.eigh(a, UPLO=UPLO)
    return w, v


def _qr(a, mode):
    out = np.linalg.qr(a, mode=mode)
    return (out,) if mode == "r" else tuple(out)


def _svd(a, full_matrices, hermitian):
    return tuple(np.linalg.svd(a, full_matrices=full_matrices, compute_uv=True,
                               hermitian=hermitian))


def _svdvals(a, hermitian):
    return (np.linalg.svd(a, compute_uv=False, hermitian=hermitian),)


def _lstsq(a, b, rcond):
    x, _, rank, s = np.linalg.lstsq(a, b, rcond=rcond)
    return x, np.int32(rank), s


def _fft(x, rank, inverse):
    axes = tuple(range(-rank, 0))
    # norm="forward" leaves the inverse unscaled: the DAG scales it (ops.fourier)
    return ((np.fft.ifftn(x, axes=axes, norm="forward") if inverse
             else np.fft.fftn(x, axes=axes)),)


def _matmul(a, b, transpose_a, transpose_b, batch_a, batch_b):
    """A product as ``forms/library.build_product`` stores it: A as
    ``[..., k, i]`` where ``transpose_a``, B as ``[..., j, k]`` where
    ``transpose_b``; an operand without batch axes broadcast over them."""
    a = np.swapaxes(a, -1, -2) if transpose_a else a
    b = np.swapaxes(b, -1, -2) if transpose_b else b
    return (np.matmul(a, b),)


def _matmul_half(a, b, **layout):
    """``_matmul`` of float16 values given as their bits (uint16): NumPy's
    float16 product, as bits."""
    out, = _matmul(a.view(np.float16), b.view(np.float16), **layout)
    return (out.view(np.uint16),)


def _argsort(x, descending):
    """NumPy's stable argsort along the last axis; ``descending``: the
    reverse order with equal values still in index order."""
    if not descending:
        return np.argsort(x, axis=-1, kind="stable")
    flipped = np.flip(np.argsort(np.flip(x, -1), axis=-1, kind="stable"), -1)
    return x.shape[-1] - 1 - flipped


ROUTINES = {
    "matmul": _matmul,
    "matmul_half": _matmul_half,
    "cholesky": _cholesky,
    "inv": lambda a: (np.linalg.inv(a),),
    "solve": lambda a, b: (np.linalg.solve(a, b),),
    "det": lambda a: (np.linalg.det(a),),
    "slogdet": lambda a: tuple(np.linalg.slogdet(a)),
    "eigh": _eigh,
    "eigvalsh": lambda a, UPLO: (np.linalg.eigvalsh(a, UPLO=UPLO),),
    "qr": _qr,
    "svd": _svd,
    "svdvals": _svdvals,
    "lstsq": _lstsq,
    "fft": _fft,
    "rfft": lambda x: (np.fft.rfft(x, axis=-1),),
    "irfft": lambda x, n: (np.fft.irfft(x, n=n, axis=-1, norm="forward"),),
    # scans, in the input's dtype (NumPy's own loop)
    "cumsum": lambda x, axis: (np.cumsum(x, axis=axis, dtype=x.dtype),),
    "cumprod": lambda x, axis: (np.cumprod(x, axis=axis, dtype=x.dtype),),
    # sorts of one row (stable; descending: the array API's, NaN first, ties in order)
    "sort": lambda x, descending: (np.flip(np.sort(x, axis=-1), -1) if descending
                                   else np.sort(x, axis=-1, kind="stable"),),
    "argsort": lambda x, descending: (_argsort(x, descending),),
}
def qualified(op) -> str:
    """``fft.rfft`` or ``linalg.solve``: the routine as the user called its
    family (a product: ``matmul``)."""
    return "matmul" if op in ("matmul", "matmul_half") else library_name(op)


def run_on_host(node, arrays) -> list:
    """The outputs of ``node``'s call on the NumPy arrays ``arrays``."""
    return run_routine(node.op, node.params, node.outputs, arrays)


def run_routine(op, params, outputs, arrays) -> list:
    """The outputs of routine ``op`` on the NumPy arrays ``arrays``, as
    declared in ``outputs`` (shape checked, dtype cast within its kind)."""
    outs = ROUTINES[op](*arrays, **dict(params))
    result = []
    for value, (shape, dt) in zip(outs, outputs):
        value = np.asarray(value)
        if value.shape != tuple(shape):
            raise AssertionError(f"{qualified(op)}: NumPy gave shape {value.shape}, declared "
                                 f"{tuple(shape)}")
        value = value.astype(np.dtype(dt), copy=False)
        result.append(value if value.flags.c_contiguous else value.copy(order="C"))
    return result


HOST_FORMS = ("host lapack", "host fft")    # codegen.policy.Form.HOST_LAPACK's, HOST_FFT's
DEVICE_FORMS = ("cusolver", "cufft", "vkfft", "cublas")   # Form.CUSOLVER's...: the target's step


def is_host_call(info) -> bool:
    """Whether a lowered kernel is a library call run on the host."""
    return info.form in HOST_FORMS


def is_library_call(info) -> bool:
    """Whether a lowered kernel is a library call (no device code of ours)."""
    return info.form in HOST_FORMS or info.form in DEVICE_FORMS


class HostCall:
    """A device program's library call run by NumPy on the host: its inputs
    copied out of their device buffers, its results copied back
    (``read(buffer, array)`` and ``write(buffer, array)``, blocking: the
    target's copies).  It waits for the kernels before it, as a blocking
    copy does."""

    def __init__(self, info, read, write):
        f = info.facts
        self.op, self.params, self.outputs = f["op"], f["params"], f["outputs"]
        n = f["inputs"]
        self.inputs = tuple(zip(info.args[:n], f["input_specs"]))
        self.results = info.args[n:]
        self.read, self.write = read, write
        self.bytes_out = sum(int(np.prod(s)) * np.dtype(d).itemsize for s, d in f["input_specs"])
        self.bytes_back = sum(int(np.prod(s)) * np.dtype(d).itemsize for s, d in self.outputs)

    def __call__(self, bufs):
        arrays = []
        for name, (shape, dt) in self.inputs:
            host = np.empty(shape, np.dtype(dt))
            if host.size:
                self.read(bufs[name], host)
            arrays.append(host)
        for name, value in zip(self.results, run_routine(self.op, self.params, self.outputs,
                                                         arrays)):
            if value.size:
                self.write(bufs[name], value)

    def describe(self) -> str:
        library = "pocketfft" if self.op in FFT_OPS else "LAPACK" if self.op not in (
            "matmul", "matmul_half") else "its matmul"
        return (f"{qualified(self.op)} runs on the host through NumPy ({library}): each call "
                f"copies {self.bytes_out} bytes out of the device and {self.bytes_back} back")
