"""Other libraries' CUDA arrays in, and DLPack out, for the CUDA target
(the library-neutral parts are ``targets.foreign``).  The DLPack capsule of
a device result is cuda-core's (``StridedMemoryView.__dlpack__``, over a
``Buffer`` that keeps the result alive until the consumer lets it go); the
stream order and the run-time checks before it are ours."""
from __future__ import annotations

import sys

from .. import foreign
from .driver import DEFERRED, device_ordinal, driver, pool


def import_binding(value):
    """A foreign CUDA array (``__cuda_array_interface__`` or ``__dlpack__``)
    as a ``foreign.CudaView`` read in place; a strided pycuda ``GPUArray``
    too; anything else unchanged."""
    ga = sys.modules.get("pycuda.gpuarray")
    if ga is not None and isinstance(value, ga.GPUArray):
        if value.flags.c_contiguous:
            return value
        return foreign.CudaView(value.gpudata, value.shape, value.dtype, value.strides,
                                value, library="pycuda")
    return foreign.cuda_view(value) if foreign.is_foreign_cuda(value) else value


_MAX_DIMS = 8
_COPY_SOURCE = "\n".join(
    f"""extern "C" __global__ void strided_copy_{bits}(
    {ctype} *dst, const char *src, long long total, int ndim,
    {", ".join(f"long long n{d}" for d in range(_MAX_DIMS))},
    {", ".join(f"long long s{d}" for d in range(_MAX_DIMS))}) {{
  const long long n[{_MAX_DIMS}] = {{{", ".join(f"n{d}" for d in range(_MAX_DIMS))}}};
  const long long s[{_MAX_DIMS}] = {{{", ".join(f"s{d}" for d in range(_MAX_DIMS))}}};
  for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < total;
       i += (long long) gridDim.x * blockDim.x) {{
    long long rest = i, offset = 0;
    for (int d = ndim - 1; d >= 0; --d) {{
      offset += (rest % n[d]) * s[d];
      rest /= n[d];
    }}
    dst[i] = *(const {ctype} *) (src + offset);
  }}
}}""" for bits, ctype in ((8, "unsigned char"), (16, "unsigned short"), (32, "unsigned int"),
                          (64, "unsigned long long")))


def _strided_copy_kernel(itemsize):
    from .driver import STATE
    if "strided_copy" not in STATE:
        from .build import build_module
        from .driver import driver
        major, minor = driver()[1].compute_capability()
        STATE["strided_copy"] = build_module(_COPY_SOURCE, f"sm_{major}{minor}")
    return STATE["strided_copy"].get_function(f"strided_copy_{itemsize * 8}")


def contiguous_copy(view, live=None):
    """A C-contiguous device copy of a strided foreign array: one gather
    kernel on the device (any strides, negative ones too, up to 8 axes;
    more go through the host), logged: a strided input is never read as
    if it were contiguous."""
    import logging

    import numpy as np
    logging.getLogger("polyarray.bindings").info(
        "polyarray: a non-contiguous %s array (shape %s, strides %s) is copied once "
        "to a contiguous buffer before the kernels read it", view.library, view.shape,
        view.strides)
    buf = pool().allocate(max(view.nbytes, 1))
    if live is not None:
        live.append(buf)
    total = view.nbytes // view.dtype.itemsize
    if total and len(view.shape) <= _MAX_DIMS and view.dtype.itemsize in (1, 2, 4, 8):
        pad = _MAX_DIMS - len(view.shape)
        shape = [np.int64(n) for n in view.shape] + [np.int64(1)] * pad
        strides = [np.int64(st) for st in view.strides] + [np.int64(0)] * pad
        block = 256
        grid = min((total + block - 1) // block, 65535)
        _strided_copy_kernel(view.dtype.itemsize)(
            buf, np.uintp(view.ptr), np.int64(total), np.int32(len(view.shape)),
            *shape, *strides, block=(block, 1, 1), grid=(grid, 1))
    elif total:
        driver()[0].memcpy_htod(buf, foreign.to_host(view))
    return foreign.CudaView(buf, view.shape, view.dtype, None, buf, library=view.library)


def dlpack_device(self):
    return (foreign.CUDA, device_ordinal())


def dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """DLPack export of a device result, zero-copy (``copy=True``: a copy):
    the consumer's ``stream`` waits for the kernels that write it, and a
    failed run-time check of that call raises first (``deferred_checks``).
    The capsule is versioned (DLPack 1.x) where the consumer's
    ``max_version`` allows it."""
    if DEFERRED:
        DEFERRED.resolve()
    if dl_device is not None and tuple(dl_device) != dlpack_device(self):
        raise BufferError(f"a polyarray CUDA result lives on {dlpack_device(self)}; "
                          f"DLPack export to device {tuple(dl_device)} is not supported")
    StridedMemoryView = foreign.strided_memory_view()
    from cuda.core import Buffer
    arr = self
    if copy:
        arr = self.copy()
    foreign.order_before(stream)
    itemsize = arr.dtype.itemsize
    strides = None if arr.flags.c_contiguous else tuple(s // itemsize for s in arr.strides)
    buffer = Buffer.from_handle(int(arr.gpudata), arr.nbytes, owner=arr)
    view = StridedMemoryView.from_buffer(buffer, arr.shape, strides, dtype=arr.dtype)
    return view.__dlpack__(max_version=max_version)
