"""The OpenCL target: codegen's kernels built and launched through PyOpenCL.

Device choice: ``device=`` or ``$POLYARRAY_OPENCL_DEVICE`` (a substring of
the platform or device name), else the first device -- GPUs first -- that
actually builds a kernel (pip's bundled PoCL fails on some CPUs, so a device
is only chosen after a test build succeeds).

Launching bypasses loopy's executor (about 120 us a call): each kernel is
fetched once, its argument list is prepared at compile time, and a call only
binds buffers and enqueues.
"""
from __future__ import annotations

import logging
import os

import numpy as np

from ..base import Target
from ..cache import DiskCache, code_version, key_digest
from ..deferred_checks import DeferredChecks, checked_array_type
from ..library import HostCall, is_library_call
from ..device_common import (CompiledProgram, DeviceExecutable, host_array, lower_or_load,
                            on_host, valid_lowered_entry)

log = logging.getLogger("polyarray.opencl")

_PROBE_SRC = "__kernel void probe(__global float *a) { a[get_global_id(0)] *= 2.0f; }"
_DEVICE = {}
_CACHE = DiskCache("opencl", valid=valid_lowered_entry)


def _describe(platform, device):
    return f"{platform.name} {platform.version} / {device.name}"


_CONTEXTS = {}


def _probe(device):
    """One context per device for the whole process; raises if it cannot build."""
    import pyopencl as cl
    key = device.int_ptr
    if key not in _CONTEXTS:
        ctx = cl.Context([device])
        OpenCLTarget._build(ctx, _PROBE_SRC)
        _CONTEXTS[key] = ctx
    return _CONTEXTS[key]


def select_device(spec=None):
    """``(context, device, description)`` of the device to use."""
    spec = spec if spec is not None else os.environ.get("POLYARRAY_OPENCL_DEVICE") or None
    if spec in _DEVICE:
        return _DEVICE[spec]
    import pyopencl as cl
    candidates = []
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:
        raise RuntimeError(f"no OpenCL platform found ({e})") from None
    for plat in platforms:
        try:
            devs = plat.get_devices()
        except cl.Error:
            continue
        for dev in devs:
            candidates.append((plat, dev))
    if spec:
        candidates = [(p, d) for p, d in candidates
                      if spec.lower() in _describe(p, d).lower()]
        if not candidates:
            raise RuntimeError(f"no OpenCL device matches {spec!r}")
    candidates.sort(key=lambda pd: 0 if pd[1].type & cl.device_type.GPU else 1)
    failures = []
    for plat, dev in candidates:
        try:
            ctx = _probe(dev)
        except Exception as e:      # noqa: BLE001  (a broken driver is just skipped)
            failures.append(f"{_describe(plat, dev)}: {str(e).splitlines()[0][:120]}")
            continue
        _DEVICE[spec] = (ctx, dev, _describe(plat, dev))
        return _DEVICE[spec]
    raise RuntimeError("no OpenCL device builds kernels"
                       + ("".join("\n  " + f for f in failures) if failures else
                          " (no devices found)"))


class OpenCLExecutable(DeviceExecutable):
    """Runs a compiled program.  Everything that does not depend on the
    bindings (kernel objects, launch sizes, where each argument comes from)
    is prepared here, so a call only allocates from a pool, sets arguments
    and enqueues.  With ``out="device"`` a call does not wait for the device.
    """

    def __init__(self, compiled: CompiledProgram, outputs, ctx, queue, out, cpu=False,
                 schedules=None):
        import loopy as lp
        import pyopencl as cl
        import pyopencl.array as cla
        super().__init__(compiled, outputs, lp.OpenCLTarget(), cpu, schedules)
        L = self.lowered
        self.out_mode = out
        self.ctx, self.queue = ctx, queue
        self.pool = _pool_for(queue)
        self._cl, self._cla = cl, cla
        # sub-buffers must start at a multiple of this (bits in OpenCL's query)
        self._align = max(queue.device.mem_base_addr_align // 8, 1)
        self._max_alloc = queue.device.max_mem_alloc_size
        kernels = _kernel_objects(compiled)
        # data leaves live on the device for the executable's lifetime
        self._fixed = {name: self._upload(arr, [])
                       for name, arr in self._data_arrays.items()}
        self._fixed.update(self._scalars)       # raw kernels' scalars, by value
        if self._checks:
            from polyarray.codegen.emit.runtime_checks import ERROR_BUFFER
            self._flags = np.zeros(self._n_flags, np.int64)
            self._fixed[ERROR_BUFFER] = self._flags_buf = self._upload(self._flags, [])
        self._inputs = list(L.inputs.items())
        from . import host as opencl_host
        self._host = opencl_host if opencl_host.enabled(queue.device) else None
        self._launches = []
        for k in L.kernels:
            if is_library_call(k):         # a library call, between kernels: VkFFT, or NumPy
                # on the host, on the queue of the call (a profile swaps it): the
                # blocking copies wait for the kernels before them
                call = HostCall(k, lambda buf, a: self._cl.enqueue_copy(self.queue, a, buf),
                                lambda buf, a: self._cl.enqueue_copy(self.queue, buf, a))
                if k.form == "vkfft":
                    from . import fourier
                    call = fourier.step_for(k, lambda: self.queue, call) or call
                log.info("polyarray: %s", call.describe())
                self._launches.append((call, k.args, None, None))
                continue
            gs, ls = launch_sizes(k.gsize, k.lsize)
            self._launches.append((kernels[k.name], k.args, gs, ls))
        self._result_type = checked_array_type(cla.Array, _DEFERRED)
        self._outs = []
        template = cla.empty(queue, (1,), np.float32)
        for name, b, copy, nbytes in self.output_plan():
            dtype = np.dtype(b.dtype)
            # pyopencl's Array.__init__ costs ~40 us a call: prepare its attributes once
            attrs = dict(template.__dict__, offset=0, shape=tuple(b.shape), dtype=dtype,
                         size=b.size, nbytes=b.size * dtype.itemsize, allocator=self.pool,
                         strides=_c_strides(b.shape, dtype.itemsize))
            self._outs.append((name, b.shape, dtype, b.storage, copy, nbytes, attrs))

    def synchronize(self):
        self.queue.finish()
        _DEFERRED.resolve()

    def kernel_times(self, bindings) -> list:
        from .timing import kernel_times
        return kernel_times(self, bindings)

    def profile_queue(self):
        return self.queue

    def can_read(self, value):
        return isinstance(value, self._cla.Array) and value.context == self.ctx

    def to_device(self, value):
        """A host binding (not empty) as a device array of this program's, for
        calls that reuse it (``repeat``, profiles); anything else unchanged."""
        return self._cla.to_device(self.queue, np.ascontiguousarray(value)) \
            if on_host(value) else value

    def _upload(self, arr, owned):
        arr = host_array(arr)
        buf = self._alloc(max(arr.nbytes, 1), owned)
        if arr.nbytes:
            self._cl.enqueue_copy(self.queue, buf, arr)       # blocking, as to_device
        return buf

    def _alloc(self, nbytes, owned):
        try:
            buf = self.pool.allocate(nbytes)
        except Exception as e:      # noqa: BLE001  (sorted out in _out_of_memory)
            self._out_of_memory(e, nbytes, owned)
        owned.append(buf)
        return buf

    def _out_of_memory(self, e, nbytes, owned):
        """Free this call's buffers and raise a MemoryError naming the size
        (as the CUDA target does), instead of pyopencl's INVALID_BUFFER_SIZE
        or MEM_OBJECT_ALLOCATION_FAILURE."""
        if not isinstance(e, MemoryError) and getattr(e, "code", None) not in _oom_codes():
            raise e
        for b in owned:
            b.release()
        owned.clear()
        self.pool.free_held()
        limit = (f"; this device allocates at most {self._max_alloc} bytes at once"
                 if nbytes > self._max_alloc else "")
        raise MemoryError(f"OpenCL out of memory: could not allocate {nbytes} bytes "
                          f"({nbytes / 2**30:.2f} GiB) on the device{limit}") from None

    def _offset_binding(self, v, owned):
        """The buffer of a device array that starts ``v.offset`` bytes into its
        allocation: a sub-buffer where the offset is aligned as OpenCL
        requires, else an aligned copy (a sub-buffer there is refused)."""
        if not v.nbytes:
            return None         # nothing is read (as an empty array's base_data)
        if v.offset % self._align == 0:
            return v.base_data.get_sub_region(v.offset, v.nbytes)
        buf = self._alloc(v.nbytes, owned)
        self._cl.enqueue_copy(self.queue, buf, v.base_data, byte_count=v.nbytes,
                              src_offset=v.offset)
        return buf

    def _wrap(self, buf, attrs):
        """A device result over ``buf`` from prepared attributes: a pyopencl
        Array whose ``get()`` reads deferred checks (``deferred_checks``)."""
        a = self._result_type.__new__(self._result_type)
        a.__dict__.update(attrs)
        a.base_data = buf
        a.events = []
        return a

    def run(self, bindings):
        cl, q, cla_array = self._cl, self.queue, self._cla.Array
        bufs = dict(self._fixed) if self._fixed else {}
        owned = []          # this call's allocations, freed on MemoryError
        device = self.out_mode == "device"
        zero = None if device else self._host    # CPU devices: zero-copy (opencl.host)
        direct = {}         # results the kernels write in place: name -> (array, buffer)
        for pname, bname in self._inputs:
            v = bindings[pname]
            if type(v) is cla_array or isinstance(v, cla_array):
                if v.queue is not q:
                    if v.context != self.ctx:
                        raise TypeError(
                            f"binding for placeholder {pname!r} lives on another OpenCL "
                            "context than this program's device: compile the program after "
                            "pa.set_opencl_queue(a queue of that context), or pass a NumPy "
                            "copy (x.get())")
                    # what the caller's queue has still to do to it comes first
                    cl.enqueue_barrier(q, wait_for=[cl.enqueue_marker(v.queue)])
                bufs[bname] = v.base_data if not v.offset else self._offset_binding(v, owned)
            else:
                if zero:
                    v = host_array(v)
                buf = zero and zero.input_buffer(self.ctx, v)
                bufs[bname] = buf or self._upload(v, owned)
        if zero:
            direct = zero.result_buffers(self.ctx, self._outs, self._max_alloc)
            bufs.update((name, buf) for name, (_, buf) in direct.items())
        alloc = self._alloc
        for name, nbytes in self._allocs:
            if name not in direct:
                bufs[name] = alloc(nbytes, owned)
        enqueue = cl.enqueue_nd_range_kernel
        for knl, args, gs, ls in self._launches:
            if gs is None:
                knl(bufs)               # a library call on the host
                continue
            knl.set_args(*[bufs[a] for a in args])
            enqueue(q, knl, gs, ls)
        results = []
        for name, shape, dtype, sdt, copy, size, attrs in self._outs:
            buf = bufs[name]
            if copy:            # an input returned as is, or an output repeated
                new = alloc(max(size, 1), owned)
                if size:
                    cl.enqueue_copy(q, new, buf, byte_count=size)
                buf = new
            if device:
                results.append(self._wrap(buf, attrs))
            elif not copy and name in direct:
                results.append(direct[name][0])
            else:
                host = np.empty(shape, dtype)
                if size:
                    cl.enqueue_copy(q, host.view(sdt) if sdt != dtype else host, buf,
                                    is_blocking=False)
                results.append(host)
        if device:
            if self._checks:        # read when a result is read (deferred_checks)
                _DEFERRED.defer(self)
        else:
            if self._checks:
                self.read_flags()   # blocking: waits for the call
            else:
                q.finish()
            if direct:
                zero.sync_results(q, [b for _, b in direct.values()])
            if _DEFERRED:           # earlier device-result calls: their flags now
                _DEFERRED.resolve()
        return results

    def read_flags(self):
        """Raise a failed check of this program's calls so far (waits for them)."""
        _DEFERRED.discard(self)
        buf, flags = self._flags_buf, self._flags
        self._cl.enqueue_copy(self.queue, flags, buf)      # blocking: waits for the call
        self._raise_failed_checks(flags, lambda: self._upload_into(buf, flags))

    def _upload_into(self, buf, flags):
        flags[:] = 0
        self._cl.enqueue_copy(self.queue, buf, flags)


def _c_strides(shape, itemsize):
    strides, s = [], itemsize
    for n in reversed(shape):
        strides.append(s)
        s *= max(n, 1)
    return tuple(reversed(strides))


_POOLS = {}
_DEFERRED = DeferredChecks()


def _pool_for(queue):
    import pyopencl as cl
    import pyopencl.tools as cltools
    from ..poison import poisoned
    if queue not in _POOLS:
        _POOLS[queue] = poisoned(cltools.MemoryPool(cltools.ImmediateAllocator(queue)),
                                 lambda buf, n: cl.enqueue_fill_buffer(
                                     queue, buf, np.uint8(0xFF), 0, n).wait())
    return _POOLS[queue]


def _kernel_objects(compiled):
    """Fetch each cl.Kernel once per compiled program (re-fetching is slow);
    launches of one function (``KernelInfo.entry``) share it: a launch sets
    all its arguments."""
    import pyopencl as cl
    if getattr(compiled, "_kernels", None) is None:
        kernels, functions = {}, {}
        for k in compiled.lowered.kernels:
            if is_library_call(k):
                continue
            entry = k.entry or k.name
            try:
                if entry not in functions:
                    functions[entry] = cl.Kernel(compiled.handle, entry)
                kernels[k.name] = functions[entry]
            except cl.LogicError as e:
                if k.form != "raw":         # ours: not a user's name
                    raise
                raise ValueError(     # a raw kernel whose name the compiler took
                    f"raw kernel {k.entry!r}: the OpenCL program has no kernel of that "
                    f"name ({e}); OpenCL C built-in functions (mix, clamp, dot, ...) "
                    "cannot be kernel names: rename it") from None
        object.__setattr__(compiled, "_kernels", kernels)
    return compiled._kernels


def launch_sizes(gsize, lsize):
    """OpenCL global and local sizes from loopy's group counts and sizes."""
    n = max(len(gsize), len(lsize), 1)
    g = tuple(gsize) + (1,) * (n - len(gsize))
    loc = tuple(lsize) + (1,) * (n - len(lsize))
    return tuple(a * b for a, b in zip(g, loc)), loc


def _oom_codes():
    """pyopencl error codes that mean "no memory for this buffer"."""
    import pyopencl as cl
    c = cl.status_code
    return (c.MEM_OBJECT_ALLOCATION_FAILURE, c.OUT_OF_RESOURCES, c.OUT_OF_HOST_MEMORY,
            c.INVALID_BUFFER_SIZE)


class OpenCLTarget(Target):
    name = "opencl"

    def __init__(self):
        import pyopencl.array as cla
        self._cla = cla
        self._queues = {}
        self._user = None       # (context, device, description, queue) given by the user

    def use_queue(self, queue):
        """Programs compiled from now on without ``device=`` run on ``queue``
        (the user's own PyOpenCL context and device), so that arrays of that
        context bind in place; ``None``: polyarray's own queue again.  A
        context whose device cannot build kernels is refused here."""
        import pyopencl as cl
        if queue is None:
            self._user = None
            return
        if not isinstance(queue, cl.CommandQueue):
            raise TypeError("pa.set_opencl_queue takes a pyopencl.CommandQueue (or None), "
                            f"got {type(queue).__name__}")
        dev = queue.device
        self._build(queue.context, _PROBE_SRC)
        self._user = (queue.context, dev, _describe(dev.platform, dev), queue)

    def warm_up(self):
        self._device(None)

    def memory_stats(self):
        from ..base import pool_stats
        return pool_stats(_pool_for(self._device(None)[3]))

    def _device(self, spec):
        """(context, device, description, queue) for a device spec."""
        import pyopencl as cl
        if spec is None and self._user is not None:
            return self._user
        ctx, dev, desc = select_device(spec)
        if desc not in self._queues:
            self._queues[desc] = cl.CommandQueue(ctx)
        return ctx, dev, desc, self._queues[desc]

    @classmethod
    def availability(cls):
        try:
            import pyopencl  # noqa: F401
            import loopy  # noqa: F401
        except ImportError as e:
            return False, f"{e.name} is not installed (the opencl extra: bash .ci/setup)"
        try:
            select_device()
        except RuntimeError as e:
            return False, f"no usable OpenCL device: {e}"
        return True, "ok"

    def binding_info(self, value):
        if isinstance(value, (np.ndarray, np.generic)):
            return value.shape, value.dtype
        if isinstance(value, self._cla.Array):
            return value.shape, value.dtype
        return None

    def prepare_binding(self, value):
        if isinstance(value, self._cla.Array):
            if not value.flags.c_contiguous:
                raise ValueError("device array bindings must be C-contiguous")
            return value
        return value if value.flags.c_contiguous else np.ascontiguousarray(value)

    def compile(self, outputs, out="numpy", device=None, device_kind=None, schedule=None,
                **options):
        """``out``: "numpy" or "device"; ``device``: a platform/device substring;
        ``device_kind``: "cpu" or "gpu" reduction layouts (default: the device's)."""
        if out not in ("numpy", "device"):
            raise ValueError(f"out must be 'numpy' or 'device', got {out!r}")
        if device_kind not in (None, "cpu", "gpu"):
            raise ValueError(f"device_kind must be 'cpu' or 'gpu', got {device_kind!r}")
        if options:
            raise TypeError(f"opencl target: unknown options {sorted(options)}")
        import loopy as lp
        from polyarray.codegen import program_key, refuse_beyond_budget
        import pyopencl as cl
        ctx, dev, desc, queue = self._device(device)
        cpu = (device_kind == "cpu") if device_kind else not (dev.type & cl.device_type.GPU)
        from polyarray.codegen.schedule import schedule_key
        skey = schedule_key(schedule)
        refuse_beyond_budget(outputs)       # before the key digests every node
        key = None if skey is None else key_digest(
            "opencl", program_key(outputs), desc, dev.driver_version, lp.VERSION,
            code_version(), cpu, skey)
        compiled = lower_or_load(_CACHE, key, outputs, lp.OpenCLTarget(),
                                 lambda src: self._build(ctx, src), cpu=cpu, schedules=schedule,
                                 scope=ctx,
                                 max_work_group=(dev.max_work_group_size,
                                                 tuple(dev.max_work_item_sizes)))
        exe = OpenCLExecutable(compiled, outputs, ctx, queue, out, cpu, schedule)
        exe.device_desc = f"{desc} ({'cpu' if cpu else 'gpu'} layouts)"
        return exe

    @staticmethod
    def _build(ctx, source):
        """Build ``source`` (pyopencl caches the binary on disk).  What the
        compiler says goes to the log, not to the user: pyopencl's
        CompilerWarning and the build log (a failed build raises with it)."""
        import pyopencl as cl
        from polyarray.codegen.logs import routed_warnings
        # pyopencl keeps built binaries in its own disk cache, keyed by source
        # and device, so a second process rebuilds nothing
        try:
            with routed_warnings(log, "the OpenCL build", everything=True):
                prg = cl.Program(ctx, source).build()
        except cl.RuntimeError as e:        # the user's C (custom or raw kernels): say whose
            from polyarray.codegen.user_functions import build_error_note
            note = build_error_note(source, str(e))
            if not note:
                raise
            from ..base import BuildError
            raise BuildError(f"{note}\nthe OpenCL compiler said: {e}") from e
        for dev in ctx.devices:
            try:
                said = prg.get_build_info(dev, cl.program_build_info.LOG) or ""
            except cl.Error:        # a driver without build logs
                continue
            if said.strip():
                log.debug("the OpenCL compiler on %s said:\n%s", dev.name, said.strip())
        return prg

