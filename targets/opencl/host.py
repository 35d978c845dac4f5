"""Zero-copy host bindings and results on OpenCL CPU devices (PoCL).

On a CPU device the "device" memory is host memory, so copying a host
binding into a pool buffer and the result back out is two passes over the
data that the kernel does not need: an elementwise chain over 16 MiB costs
0.65 ms in its kernel and 1.2 ms more in those copies (PoCL, one core).
Host calls (``out="numpy"``) on a CPU device therefore wrap large host
inputs and fresh result arrays as ``CL_MEM_USE_HOST_PTR`` buffers: PoCL's
kernels read and write the arrays themselves.  The call waits for the device
before it returns (host calls always did), so the arrays outlive the
buffers' use; each result is mapped once after that, which is what OpenCL
asks before the host reads a ``USE_HOST_PTR`` buffer (on PoCL, no copy).

Small arrays are still copied (below ``MIN_BYTES`` a buffer object costs
more than the copy), device calls (``out="device"``) are unchanged (their
buffers outlive the call), and ``$POLYARRAY_OPENCL_ZERO_COPY=0`` turns it
off (to measure the copies).
"""
from __future__ import annotations

import os

import numpy as np

from .. import poison

MIN_BYTES = 1 << 16


def enabled(device) -> bool:
    """Whether host calls on ``device`` go zero-copy: a CPU device, unless
    ``$POLYARRAY_OPENCL_ZERO_COPY`` is 0."""
    import pyopencl as cl
    if os.environ.get("POLYARRAY_OPENCL_ZERO_COPY", "1").strip() in ("0", "false", "no"):
        return False
    return bool(device.type & cl.device_type.CPU)


def input_buffer(ctx, arr):
    """A buffer over the host array ``arr`` (C-contiguous, bool seen as
    uint8), or None where it is too small or PyOpenCL refuses it (a
    read-only array): the caller copies it then."""
    if arr.nbytes < MIN_BYTES:
        return None
    import pyopencl as cl
    mf = cl.mem_flags
    try:
        return cl.Buffer(ctx, mf.READ_ONLY | mf.USE_HOST_PTR, hostbuf=arr)
    except (cl.Error, TypeError, ValueError, BufferError):
        return None


def result_buffer(ctx, shape, dtype, storage, nbytes, limit):
    """(the result array, a buffer over it) for a program output, or None
    where it is too small or too large (the pool's path then says so).  ``storage``: the kernel's element type (bool is
    stored as uint8); ``limit``: the device's largest allocation."""
    if not MIN_BYTES <= nbytes <= limit:
        return None
    import pyopencl as cl
    mf = cl.mem_flags
    try:
        host = np.empty(shape, dtype)
    except MemoryError:     # the pool's allocation says it as device targets do
        return None
    view = host.view(storage) if host.dtype == np.bool_ else host
    if poison.enabled():        # as the pool's buffers (targets/poison.py)
        view.view(np.uint8).fill(0xFF)
    try:        # read and written: another kernel of the program may read an output
        return host, cl.Buffer(ctx, mf.READ_WRITE | mf.USE_HOST_PTR, hostbuf=view)
    except cl.Error:        # past the device's largest allocation: the pool's error
        return None


def result_buffers(ctx, outs, limit) -> dict:
    """name -> (result array, buffer) for the outputs of an executable's
    plan (``OpenCLExecutable._outs``) that the kernels write in place: not
    copies (an input returned, an output repeated), not too small or large."""
    direct = {}
    for name, shape, dtype, storage, copy, nbytes, _ in outs:
        made = None if copy else result_buffer(ctx, shape, dtype, storage, nbytes, limit)
        if made:
            direct[name] = made
    return direct


def sync_results(queue, buffers):
    """Map and unmap each result buffer (after the call has finished): the
    host may read a ``USE_HOST_PTR`` buffer only after a map."""
    import pyopencl as cl
    for buf in buffers:
        mapped, _ = cl.enqueue_map_buffer(queue, buf, cl.map_flags.READ, 0, (buf.size,),
                                          np.uint8, is_blocking=True)
        mapped.base.release(queue)
