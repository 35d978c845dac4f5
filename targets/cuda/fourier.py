"""Transforms (``pa.fft``'s library calls) run by cuFFT on the device,
through nvmath-python's bindings (``nvmath.bindings.cufft``: NVIDIA's
maintained Python bindings of cuFFT, the library CuPy and JAX call too).

The calls come in ``polyarray.ops.fourier``'s canonical form: contiguous
arrays, the transform over the trailing axes, unnormalized, so a plan is
cuFFT's basic layout (``cufftMakePlanMany64`` with no embedding) for the
transform's sizes and the batch.  Plans are made once per context, sizes,
type and batch, and kept, as built kernels are.  A step runs between the
kernels on the legacy default stream, as they do.  cuFFT's complex-to-real
transform overwrites its input, so it reads a copy (the input may be a
buffer the program reads again, or the caller's).

``step_for`` returns None where the bindings are not installed or a call
has more than three axes (cuFFT's limit); the target then runs NumPy's
pocketfft on the host (``targets/library.HostCall``) and says so in the log.
"""
from __future__ import annotations

import logging
import math

import numpy as np

from polyarray.ir.nodes import FFT_OPS

log = logging.getLogger("polyarray.cuda")
_STATE = {}
_PLANS = {}
_FORWARD, _INVERSE = -1, 1          # CUFFT_FORWARD, CUFFT_INVERSE


def _cufft():
    """``nvmath.bindings.cufft``, or None (the reason logged once)."""
    if "module" not in _STATE:
        try:
            from .bindings import binding
            cufft = binding("cufft")
            cufft.get_version()                 # loads the library: fails here if absent
            _STATE["module"] = cufft
        except Exception as e:      # noqa: BLE001  (not installed, or no cuFFT library)
            _STATE["module"] = None
            log.info("polyarray: cuFFT is not usable here (%s); pa.fft's transforms run on "
                     "the host (pip install nvmath-python[cu13])", e)
    return _STATE["module"]


def _plan(api, kind, dims, batch):
    """A cuFFT plan of ``kind`` over ``dims`` for ``batch`` arrays, made once
    per context, on stream 0."""
    import pycuda.driver as drv
    ctx = drv.Context.get_current()
    key = (ctx.handle if ctx is not None else None, int(kind), dims, batch)
    if key not in _PLANS:
        h = api.create()
        try:
            api.set_stream(h, 0)
            api.make_plan_many64(h, len(dims), list(dims), 0, 1, 0, 0, 1, 0, int(kind), batch)
        except Exception:
            api.destroy(h)
            raise
        _PLANS[key] = h
    return _PLANS[key]


class Transform:
    """One call: ``fft`` (complex to complex over the trailing ``rank``
    axes, forward or inverse), ``rfft`` (real to complex over the last
    axis) or ``irfft`` (complex to real, to ``n`` values)."""

    def __init__(self, info, api, drv, alloc):
        f = info.facts
        (shape, dt), = f["input_specs"]
        params = dict(f["params"])
        self.api, self.drv, self.alloc = api, drv, alloc
        self.op, self.src, self.dst = f["op"], info.args[0], info.args[1]
        double = np.dtype(dt) in (np.float64, np.complex128)
        T = api.Type
        if self.op == "fft":
            rank = params["rank"]
            self.dims = tuple(shape[-rank:])
            self.kind = T.Z2Z if double else T.C2C
            self.exec = api.exec_z2z if double else api.exec_c2c
            self.direction = _INVERSE if params["inverse"] else _FORWARD
        elif self.op == "rfft":
            rank, self.dims = 1, (shape[-1],)
            self.kind, self.exec = (T.D2Z, api.exec_d2z) if double else (T.R2C, api.exec_r2c)
        else:
            rank, self.dims = 1, (params["n"],)
            self.kind, self.exec = (T.Z2D, api.exec_z2d) if double else (T.C2R, api.exec_c2r)
        self.batch = math.prod(shape[:len(shape) - rank])
        self.copied = math.prod(shape) * np.dtype(dt).itemsize if self.op == "irfft" else 0
        self.empty = self.batch == 0 or 0 in self.dims

    def __call__(self, bufs):
        if self.empty:
            return
        plan = _plan(self.api, self.kind, self.dims, self.batch)
        src, dst = int(bufs[self.src]), int(bufs[self.dst])
        if self.copied:                 # complex to real overwrites its input
            scratch = self.alloc(self.copied)
            self.drv.memcpy_dtod(int(scratch), src, self.copied)
            src = int(scratch)
        if self.op == "fft":
            self.exec(plan, src, dst, self.direction)
        else:
            self.exec(plan, src, dst)

    def describe(self) -> str:
        return (f"fft.{self.op} runs in cuFFT ({self.kind.name}, {self.batch} transforms of "
                f"{' x '.join(map(str, self.dims))})")


def step_for(info, drv, alloc):
    """The cuFFT step of transform ``info``, or None (no bindings, or more
    axes than cuFFT's three)."""
    f = info.facts
    if f.get("op") not in FFT_OPS or dict(f["params"]).get("rank", 1) > 3:
        return None
    api = _cufft()
    return None if api is None else Transform(info, api, drv, alloc)
