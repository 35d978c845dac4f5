"""Arrays of other GPU libraries, in and out, without copies.

In: anything with ``__cuda_array_interface__`` (CuPy, PyTorch, Numba,
pycuda) or ``__dlpack__`` on a CUDA device (JAX, PyTorch, CuPy, ...)
becomes a ``CudaView``: a pointer, shape, dtype and strides, holding what
keeps the memory alive.  Nothing is copied and pycuda is not needed to read
one.  The producer's stream is ordered before ours (the legacy default
stream, on which every polyarray launch runs): DLPack producers are asked
for ``stream=1``; a ``__cuda_array_interface__`` that names another stream
gets an event our stream waits on.

Out: ``dlpack_capsule`` exports a device result as a DLPack capsule (the
consumer's stream waits for our work), read by ``torch.from_dlpack``,
``cupy.from_dlpack`` and ``jax.dlpack.from_dlpack``.

OpenCL has no DLPack consumers or producers among the peers (DLPack's
``kDLOpenCL`` exists, but no library hands out or accepts such tensors):
pyopencl arrays are the OpenCL target's device arrays, in and out.
"""
from __future__ import annotations

import ctypes
import itertools

import numpy as np

CPU, CUDA, CUDA_HOST, OPENCL, CUDA_MANAGED = 1, 2, 3, 4, 13
LEGACY_STREAM, PER_THREAD_STREAM = 1, 2


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p),
                     ("deleter", _DELETER)]

# our own handle on the interpreter's C API, so that setting argtypes here
# cannot change ctypes.pythonapi for other libraries
_api = ctypes.PyDLL(ctypes.pythonapi._name)
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.c_void_p]
_raw_get_pointer = _api.PyCapsule_GetPointer
# the capsule destructor gets a bare PyObject*: a prototype that takes one
_get_pointer_of_address = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
_KINDS = {v: k for k, v in _CODES.items()}


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
    try:
        capsule = value.__dlpack__(stream=LEGACY_STREAM)
    except TypeError:       # producers without the stream keyword
        capsule = value.__dlpack__()
    device, view = consume_capsule(capsule, value, library)
    if device[0] not in (CUDA, CUDA_MANAGED):
        raise TypeError(f"a {library} array on DLPack device type {device[0]} "
                        "is not a CUDA array")
    return view


def consume_capsule(capsule, source, library):
    """((device type, id), CudaView) of a DLPack capsule, which is marked
    used; the producer's deleter runs when the view is gone."""
    addr = _raw_get_pointer(ctypes.py_object(capsule), b"dltensor")
    managed = ctypes.cast(addr, ctypes.POINTER(_Managed))
    t = managed.contents.dl_tensor
    if t.dtype.lanes != 1 or t.dtype.code not in _KINDS:
        raise TypeError(f"unsupported DLPack dtype (code {t.dtype.code}, {t.dtype.bits} "
                        f"bits, {t.dtype.lanes} lanes) from a {library} array")
    kind = _KINDS[t.dtype.code]
    dtype = np.dtype(np.bool_) if kind == "b" else np.dtype(f"{kind}{t.dtype.bits // 8}")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = None if not t.strides else tuple(t.strides[i] * dtype.itemsize
                                                for i in range(t.ndim))
    _api.PyCapsule_SetName(capsule, b"used_dltensor")
    owner = _Consumed(managed, source)
    device = (t.device.device_type, t.device.device_id)
    return device, CudaView((t.data or 0) + t.byte_offset, shape, dtype, strides, owner,
                            t.device.device_id, library)


class _Consumed:
    """Calls the producer's deleter when the last view of it is gone."""

    def __init__(self, managed, source):
        self.managed, self.source = managed, source

    def __del__(self):
        deleter = self.managed.contents.deleter
        if deleter:
            deleter(self.managed)


# -- out: a DLPack capsule of one of our device buffers --------------------

_LIVE = {}                  # address of a DLManagedTensor -> what it keeps alive
_ids = itertools.count()


@_DELETER
def _delete(managed):
    _LIVE.pop(ctypes.addressof(managed.contents), None)


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule):
    # not consumed (still named "dltensor"): the capsule owns the tensor
    if _api.PyCapsule_GetName(capsule) == b"dltensor":
        addr = _get_pointer_of_address(capsule, b"dltensor")
        if addr:
            _LIVE.pop(addr, None)


def dlpack_capsule(ptr, shape, dtype, device_id, owner, strides=None, device_type=CUDA):
    """A DLPack capsule of ``shape``/``dtype`` at ``ptr`` on device
    ``device_id`` (of ``device_type``: CUDA unless a test says CPU);
    ``owner`` lives until the consumer's deleter runs."""
    dtype = np.dtype(dtype)
    if dtype.kind not in _CODES:
        raise TypeError(f"DLPack has no dtype for {dtype.name}")
    ndim = len(shape)
    shape_arr = (ctypes.c_int64 * max(ndim, 1))(*shape)
    strides_arr = None
    if strides is not None:
        strides_arr = (ctypes.c_int64 * max(ndim, 1))(*(s // dtype.itemsize for s in strides))
    m = _Managed()
    m.dl_tensor.data = ptr
    m.dl_tensor.device = _Device(device_type, device_id)
    m.dl_tensor.ndim = ndim
    m.dl_tensor.dtype = _DType(_CODES[dtype.kind], dtype.itemsize * 8, 1)
    m.dl_tensor.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    if strides_arr is not None:
        m.dl_tensor.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
    m.dl_tensor.byte_offset = 0
    m.deleter = _delete
    addr = ctypes.addressof(m)
    _LIVE[addr] = (m, shape_arr, strides_arr, owner)
    return _api.PyCapsule_New(addr, b"dltensor", _capsule_destructor)


def live_exports() -> int:
    """DLPack exports whose consumers have not released them (tests)."""
    return len(_LIVE)


# -- streams -------------------------------------------------------------------

def _libcuda():
    lib = _STATE.get("libcuda")
    if lib is None:
        lib = _STATE["libcuda"] = ctypes.CDLL("libcuda.so.1")
    return lib


_STATE = {}


def _check(rc, what):
    if rc != 0:
        raise RuntimeError(f"CUDA driver call {what} failed with error {rc}")


def _order(first, then):
    """Make stream ``then`` wait for the work queued so far on ``first``
    (0: the legacy default stream), without blocking the host."""
    lib = _libcuda()
    ev = ctypes.c_void_p()
    _check(lib.cuEventCreate(ctypes.byref(ev), 2), "cuEventCreate")  # DISABLE_TIMING
    try:
        _check(lib.cuEventRecord(ev, ctypes.c_void_p(first)), "cuEventRecord")
        _check(lib.cuStreamWaitEvent(ctypes.c_void_p(then), ev, 0), "cuStreamWaitEvent")
    finally:
        lib.cuEventDestroy_v2(ev)


def _handle(stream):
    return {LEGACY_STREAM: 0, PER_THREAD_STREAM: 2}.get(stream, stream)


def wait_for_stream(stream):
    """Our (legacy default) stream waits for a producer's ``stream``."""
    _order(_handle(stream), 0)


def order_before(stream):
    """A consumer's ``stream`` waits for our work (DLPack's ``stream``
    argument; None or 1 is the legacy default stream, ours)."""
    if stream not in (None, LEGACY_STREAM, 0, -1):
        _order(0, _handle(stream))


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
