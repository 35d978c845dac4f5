"""Arrays of other GPU libraries, in and out, without copies.

In: anything with ``__cuda_array_interface__`` (CuPy, PyTorch, Numba,
pycuda) or ``__dlpack__`` on a CUDA device (JAX, PyTorch, CuPy, ...)
becomes a ``CudaView``: a pointer, shape, dtype and strides, holding what
keeps the memory alive.  Nothing is copied and pycuda is not needed to read
one.  The producer's stream is ordered before ours (the legacy default
stream, on which every polyarray launch runs): DLPack producers are asked
for ``stream=1``; a ``__cuda_array_interface__`` that names another stream
gets an event our stream waits on.

The interface is a Python dict, read here.  A DLPack capsule is read by
NVIDIA's cuda-core (``cuda.core.utils.StridedMemoryView``, which calls the
producer's deleter when the view is gone), and events are made through
``cuda.bindings.driver``: both are imported when first needed, and their
absence is an ImportError naming the pip package.

Out: ``targets.cuda.interop`` exports a device result as a DLPack capsule
(cuda-core's), read by ``torch.from_dlpack``, ``cupy.from_dlpack`` and
``jax.dlpack.from_dlpack``; ``order_before`` makes the consumer's stream
wait for our work.

OpenCL has no DLPack consumers or producers among the peers (DLPack's
``kDLOpenCL`` exists, but no library hands out or accepts such tensors):
pyopencl arrays are the OpenCL target's device arrays, in and out.
"""
from __future__ import annotations

import numpy as np

CPU, CUDA, CUDA_HOST, OPENCL, CUDA_MANAGED = 1, 2, 3, 4, 13
LEGACY_STREAM, PER_THREAD_STREAM = 1, 2
_KINDS = "iufbc"            # the dtype kinds polyarray reads (NumPy's complex layout; no bfloat16)


class CudaView:
    """A foreign CUDA array as polyarray reads it: ``ptr``, ``shape``,
    ``dtype``, ``strides`` (bytes) and ``owner`` (kept alive with the view).
    ``int(view)`` is the pointer, so a launcher packs it as a buffer."""

    __slots__ = ("ptr", "shape", "dtype", "strides", "owner", "device_id", "library")

    def __init__(self, ptr, shape, dtype, strides, owner, device_id=0, library="?"):
        self.ptr, self.shape, self.dtype = int(ptr), tuple(shape), np.dtype(dtype)
        self.strides = tuple(strides) if strides is not None else _c_strides(shape, self.dtype)
        self.owner, self.device_id, self.library = owner, device_id, library

    def __int__(self):
        return self.ptr

    __index__ = __int__

    def __reduce__(self):
        raise TypeError(
            f"cannot pickle another library's {self.library} device array of shape "
            f"{self.shape} read in place (pa.asarray): its memory stays in this "
            "process; pickle host data instead (pa.array(np.asarray(x))), or bind "
            "the array to a placeholder where the program runs")

    @property
    def nbytes(self):
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def c_contiguous(self):
        return self.strides == _c_strides(self.shape, self.dtype) or 0 in self.shape

    def __array__(self, dtype=None, copy=None):
        """A host copy (the NumPy target, and ``np.asarray``)."""
        host = to_host(self)
        return host if dtype is None else host.astype(dtype)

    def __repr__(self):
        return (f"<CudaView of a {self.library} array: shape {self.shape}, "
                f"{self.dtype.name}, strides {self.strides}, at {self.ptr:#x}>")

    def span(self):
        """(lowest byte offset, bytes) the view's elements cover."""
        if 0 in self.shape:
            return 0, 0
        lo = sum(s * (n - 1) for s, n in zip(self.strides, self.shape) if s < 0)
        hi = sum(s * (n - 1) for s, n in zip(self.strides, self.shape) if s > 0)
        return lo, hi - lo + self.dtype.itemsize


def _c_strides(shape, dtype):
    strides, step = [], np.dtype(dtype).itemsize
    for n in reversed(tuple(shape)):
        strides.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(strides))


def host_array_of(value):
    """Another library's host array (torch CPU tensors, array-API arrays)
    as a NumPy array without a copy, or None if ``value`` is none."""
    dev = getattr(value, "__dlpack_device__", None)
    if dev is not None:
        try:
            if dev()[0] == CPU:
                return np.from_dlpack(value)
        except Exception:       # noqa: BLE001  (producers that cannot)
            pass
    if hasattr(type(value), "__array__") and not isinstance(value, CudaView):
        return np.asarray(value)
    return None


def driver_library(value):
    """'pycuda' for a pycuda GPUArray, 'opencl' for a pyopencl Array (device
    results of our own programs are subclasses of these), else None; neither
    driver is imported to ask."""
    import sys
    ga = sys.modules.get("pycuda.gpuarray")
    if ga is not None and isinstance(value, ga.GPUArray):
        return "pycuda"
    cla = sys.modules.get("pyopencl.array")
    if cla is not None and isinstance(value, cla.Array):
        return "opencl"
    return None


def is_foreign_cuda(value) -> bool:
    """Does ``value`` look like another library's CUDA array?  (Cheap: no
    capsule is made.)"""
    if isinstance(value, (np.ndarray, np.generic)):
        return False
    if hasattr(type(value), "__cuda_array_interface__"):
        return True
    dev = getattr(value, "__dlpack_device__", None)
    if dev is None:
        return False
    try:
        return dev()[0] in (CUDA, CUDA_MANAGED)
    except Exception:       # noqa: BLE001  (a producer that cannot say)
        return False


def cuda_view(value, library=None) -> CudaView:
    """``value`` (a foreign CUDA array) as a ``CudaView``, with no copy."""
    library = library or type(value).__module__.split(".")[0]
    if hasattr(type(value), "__cuda_array_interface__"):
        cai = value.__cuda_array_interface__
        # before version 3 it names no stream; DLPack's producer then orders
        # its stream before ours (torch, JAX)
        if cai.get("version", 0) >= 3 or not hasattr(value, "__dlpack__"):
            return _from_cai(value, cai, library)
    return _from_dlpack(value, library)


def _from_cai(value, cai, library):
    dtype = np.dtype(cai["typestr"])
    ptr, _readonly = cai["data"]
    if cai.get("mask") is not None:
        raise TypeError(f"a masked {library} array (__cuda_array_interface__ 'mask') "
                        "cannot be bound: polyarray has no masked arrays")
    stream = cai.get("stream")
    if stream not in (None, LEGACY_STREAM, 0):
        wait_for_stream(stream)
    return CudaView(ptr or 0, cai["shape"], dtype, cai.get("strides"), value, 0, library)


def _from_dlpack(value, library):
    device = value.__dlpack_device__()
    if device[0] not in (CUDA, CUDA_MANAGED):
        raise TypeError(f"a {library} array on DLPack device type {device[0]} "
                        "is not a CUDA array")
    return dlpack_view(value, library, LEGACY_STREAM)


def dlpack_view(value, library, stream=-1):
    """``value`` (a DLPack producer) as a ``CudaView``, read by cuda-core's
    ``StridedMemoryView``: the producer is asked for ``stream`` (``1``: the
    legacy default stream, ours; ``-1``: none, a host producer), and its
    deleter runs when the view (the ``CudaView``'s owner) is gone."""
    StridedMemoryView = strided_memory_view()
    smv = StridedMemoryView.from_dlpack(value, stream_ptr=stream)
    try:
        dtype = np.dtype(smv.dtype)
    except (TypeError, NotImplementedError) as e:     # vector lanes, bfloat16, ...
        raise TypeError(f"unsupported DLPack dtype from a {library} array: {e}") from None
    if dtype.kind not in _KINDS:
        raise TypeError(f"unsupported DLPack dtype {dtype.name} from a {library} array")
    strides = None if smv.strides is None else tuple(s * dtype.itemsize for s in smv.strides)
    return CudaView(smv.ptr, smv.shape, dtype, strides, smv, max(smv.device_id, 0), library)


def strided_memory_view():
    """cuda-core's ``StridedMemoryView``, or an ImportError naming the package."""
    try:
        from cuda.core.utils import StridedMemoryView
    except ImportError as e:
        raise ImportError(f"reading or making a DLPack capsule of a CUDA array needs "
                          f"NVIDIA's cuda-core ({e}): pip install cuda-core, or "
                          f"pip install 'polyarray[cuda]'") from None
    return StridedMemoryView


# -- streams -------------------------------------------------------------------

def driver_api():
    """``cuda.bindings.driver`` (NVIDIA's bindings of the CUDA driver API: the
    context is pycuda's, which is current), or an ImportError naming the
    package."""
    try:
        import cuda.bindings.driver as driver
    except ImportError as e:
        raise ImportError(f"CUDA events and graphs need NVIDIA's cuda-bindings ({e}): "
                          "pip install cuda-bindings, or pip install 'polyarray[cuda]'") \
            from None
    return driver


def checked(result, what):
    """The values a ``cuda.bindings.driver`` call returned beside its
    status (one value, a tuple of several, or None), or RuntimeError
    naming the call and the error."""
    status, *values = result
    if status != 0:
        name = driver_api().cuGetErrorName(status)[1]
        raise RuntimeError(f"CUDA driver call {what} failed with error {int(status)} "
                           f"({name.decode() if name else status!r})")
    return values[0] if len(values) == 1 else tuple(values) if values else None


def _order(first, then):
    """Make stream ``then`` wait for the work queued so far on ``first``,
    without blocking the host.  Streams are the driver's handles, which the
    protocols' numbers are too: 1 is ``CU_STREAM_LEGACY``, the legacy
    default stream on which pycuda launches ours (its handle 0; 1 names it
    whatever the bindings' default-stream mode), 2 ``CU_STREAM_PER_THREAD``."""
    cu = driver_api()
    ev = checked(cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
    try:
        checked(cu.cuEventRecord(ev, cu.CUstream(first)), "cuEventRecord")
        checked(cu.cuStreamWaitEvent(cu.CUstream(then), ev, 0), "cuStreamWaitEvent")
    finally:
        cu.cuEventDestroy(ev)


def wait_for_stream(stream):
    """Our (legacy default) stream waits for a producer's ``stream``."""
    _order(stream, LEGACY_STREAM)


def order_before(stream):
    """A consumer's ``stream`` waits for our work (DLPack's ``stream``
    argument; None or 1 is the legacy default stream, ours)."""
    if stream not in (None, LEGACY_STREAM, 0, -1):
        _order(LEGACY_STREAM, stream)


def to_host(view: CudaView) -> np.ndarray:
    """A C-contiguous host copy of ``view``'s elements (strides honoured)."""
    import pycuda.autoprimaryctx  # noqa: F401  (the context CuPy/torch/JAX share)
    import pycuda.driver as drv
    lo, nbytes = view.span()
    raw = np.empty(max(nbytes, 1), np.uint8)
    if nbytes:
        drv.memcpy_dtoh(raw[:nbytes], view.ptr + lo)
    return np.ascontiguousarray(np.ndarray(view.shape, view.dtype, buffer=raw, offset=-lo,
                                           strides=view.strides))
