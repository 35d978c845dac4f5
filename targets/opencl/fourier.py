"""Transforms (``pa.fft``'s library calls) run by VkFFT on an OpenCL GPU,
through pyvkfft (VkFFT's maintained Python bindings, with backends for
PyOpenCL and PyCUDA; the CUDA target calls cuFFT instead).

The calls come in ``polyarray.ops.fourier``'s canonical form: contiguous
arrays, the transform over the trailing axes, unnormalized (pyvkfft's
``norm=0``), so an app is VkFFT's out-of-place transform of a C-ordered
``(batch,) + dims`` array: complex to complex (forward or inverse), real to
complex (``r2c``, the last axis) and back.  Apps are made on the first call
per queue, shape, dtype and kind, and kept, as built kernels are (making
one compiles VkFFT's kernels); a transform runs on the program's queue
(the profiling queue has apps of its own), between its kernels.

``step_for`` returns None where pyvkfft is not installed (``pip install
polyarray[vkfft]``; it builds against the OpenCL headers), a call has more
than three axes, or a length needs VkFFT's single-pass Bluestein algorithm
(above ``BLUESTEIN_GUARD`` with a prime factor above 13: such lengths
crashed PoCL's process); the target then runs NumPy's pocketfft on the host
(``targets/library.HostCall``) and says so in the log.  So does a call
VkFFT refuses (a size or precision the device cannot take), when its app
is first made.
"""
from __future__ import annotations

import logging
import math

import numpy as np

from polyarray.ir.nodes import FFT_OPS

log = logging.getLogger("polyarray.opencl")
_STATE = {}
_APPS = {}


def _pyvkfft():
    """``pyvkfft.opencl``, or None (the reason logged once)."""
    if "module" not in _STATE:
        try:
            import pyvkfft.opencl as vk
            _STATE["module"] = vk
        except Exception as e:      # noqa: BLE001  (not installed, or not built for OpenCL)
            _STATE["module"] = None
            log.info("polyarray: VkFFT is not usable here (%s); pa.fft's transforms run on "
                     "the host (pip install polyarray[vkfft])", e)
    return _STATE["module"]


class Transform:
    """One call: ``fft`` (complex to complex over the trailing ``rank``
    axes, forward or inverse), ``rfft`` (real to complex over the last
    axis) or ``irfft`` (complex to real, to ``n`` values).  ``queue()``:
    the program's queue now (a profile swaps it); ``host``: the same call
    through NumPy, where VkFFT refuses it."""

    def __init__(self, info, vk, queue, host):
        f = info.facts
        (shape, dt), = f["input_specs"]
        params = dict(f["params"])
        self.vk, self.queue, self.host = vk, queue, host
        self.op, self.src, self.dst = f["op"], info.args[0], info.args[1]
        (out_shape, out_dt), = f["outputs"]
        self.in_spec = (tuple(shape), np.dtype(dt))
        self.out_spec = (tuple(out_shape), np.dtype(out_dt))
        if self.op == "fft":
            rank = params["rank"]
            self.dims = tuple(shape[-rank:])
            self.inverse = bool(params["inverse"])
            self.app_dtype, self.r2c = np.dtype(dt), False
        else:
            rank, self.inverse, self.r2c = 1, self.op == "irfft", True
            self.dims = (params["n"],) if self.op == "irfft" else (shape[-1],)
            self.app_dtype = np.dtype(out_dt if self.op == "irfft" else dt)
        self.batch = math.prod(shape[:len(shape) - rank])
        self.empty = self.batch == 0 or 0 in self.dims
        self.refused = None

    def _app(self, queue):
        key = (queue.int_ptr, self.op, self.dims, self.batch, self.app_dtype.str)
        if key not in _APPS:
            if not _APPS:           # freed before the interpreter tears pyvkfft down
                import atexit
                atexit.register(_APPS.clear)
            _APPS[key] = self.vk.VkFFTApp((self.batch,) + self.dims, self.app_dtype, queue,
                                          ndim=len(self.dims), inplace=False, norm=0,
                                          r2c=self.r2c)
        return _APPS[key]

    def __call__(self, bufs):
        if self.empty:
            return
        if self.refused is None:
            try:
                self._app(self.queue())
                self.refused = False
            except Exception as e:      # noqa: BLE001  (VkFFT's refusal: RuntimeError)
                self.refused = True
                log.info("polyarray: VkFFT refused fft.%s of %s (%s); it runs on the host: %s",
                         self.op, self.in_spec[0], e, self.host.describe())
        if self.refused:
            return self.host(bufs)
        import pyopencl.array as cla
        q = self.queue()
        app = self._app(q)
        (ishape, idt), (oshape, odt) = self.in_spec, self.out_spec
        lead = (self.batch,)
        src = cla.Array(q, lead + ishape[len(ishape) - len(self.dims):], idt,
                        data=bufs[self.src])
        dst = cla.Array(q, lead + oshape[len(oshape) - len(self.dims):], odt,
                        data=bufs[self.dst])
        if self.inverse:
            app.ifft(src, dst, queue=q)
        else:
            app.fft(src, dst, queue=q)

    def describe(self) -> str:
        kind = "r2c" if self.op == "rfft" else "c2r" if self.op == "irfft" else \
            ("inverse" if self.inverse else "forward")
        return (f"fft.{self.op} runs in VkFFT ({kind}, {self.batch} transforms of "
                f"{' x '.join(map(str, self.dims))}, {self.app_dtype})")


# VkFFT's single-pass Bluestein lengths killed PoCL's process (SIGSEGV: primes
# 24001-50021 in complex64, 16411-30011 in complex128); lengths above this with
# a prime factor above VkFFT's radices (13) run on the host
BLUESTEIN_GUARD = 8192


def _largest_prime_factor(n):
    best, p = 1, 2
    while p * p <= n:
        while n % p == 0:
            best, n = p, n // p
        p += 1
    return max(best, n)


def step_for(info, queue, host):
    """The VkFFT step of transform ``info``, or None (no pyvkfft, more axes
    than VkFFT's three, or a length of the guarded Bluestein kind)."""
    f = info.facts
    if f.get("op") not in FFT_OPS or dict(f["params"]).get("rank", 1) > 3:
        return None
    vk = _pyvkfft()
    if vk is None:
        return None
    step = Transform(info, vk, queue, host)
    if any(n > BLUESTEIN_GUARD and _largest_prime_factor(n) > 13 for n in step.dims):
        log.info("polyarray: fft.%s of length %s runs on the host (VkFFT's Bluestein "
                 "lengths are guarded)", step.op, step.dims)
        return None
    return step
