"""The CUDA target: the same codegen kernels, emitted with loopy's CUDA target,
compiled to cubins by NVRTC or nvcc (``cuda.compiler``), loaded and launched
through PyCUDA by our own launcher.

Code generation needs no GPU and no pycuda: ``pa.compile(x, target="cuda")``
works anywhere, and ``prog.source`` is the CUDA C.  The module is built and
launched on the first call; without CUDA that call raises a clear error.
pycuda is imported lazily, and through ``pycuda.autoprimaryctx`` so that
CuPy, PyTorch and JAX share the primary context.  PyCUDA owns memory,
streams and launches; NVIDIA's bindings (cuda-bindings, cuda-core) do what
pycuda lacks: NVRTC and nvJitLink, CUDA graphs and events, DLPack capsules.
"""
from __future__ import annotations

import logging
import sys
import time

import numpy as np

from ..base import Target
from ..cache import DiskCache, code_version, key_digest
from .. import foreign
from . import driver as cuda_driver
from . import interop as cuda_interop
from .build import NVCC_OPTIONS, build_module   # noqa: F401  (tests import them here)
from ..deferred_checks import checked_array_type
from ..library import HostCall, is_host_call, is_library_call
from ..device_common import (DeviceExecutable, allocation_bytes, arg_format, host_array,
                            lower_or_load, on_host, valid_lowered_entry)

_CACHE = DiskCache("cuda", valid=valid_lowered_entry)
_driver, _pool = cuda_driver.driver, cuda_driver.pool
_STATE = cuda_driver.STATE
log = logging.getLogger("polyarray.cuda")


class CudaExecutable(DeviceExecutable):
    def __init__(self, compiled, outputs, out, fast_math, schedules=None):
        import loopy as lp
        super().__init__(compiled, outputs, lp.CudaTarget(), schedules=schedules)
        self.out_mode = out
        self.fast_math = fast_math
        self._ready = False

    def ready(self):
        """The module built and the launch plan made (the first call's work),
        in the program's own result mode (so its fast launcher is its own)."""
        if not self._ready:
            self._prepare()

    def profile_bindings(self, bindings) -> dict:
        self.ready()
        return super().profile_bindings(bindings)

    def wall_time(self, bindings) -> float:
        self.ready()
        return super().wall_time(bindings)

    def kernel_times(self, bindings) -> list:
        from .timing import kernel_times
        return kernel_times(self, bindings)

    def _prepare(self):
        """First call: build the module (cached per source) and the launch plan."""
        t0 = time.perf_counter()
        drv, dev = _driver()
        self._drv = drv
        major, minor = dev.compute_capability()
        key = (self.lowered.source, major, minor, self.fast_math)
        modules = _STATE.setdefault("modules", {})
        if key not in modules and self.lowered.source:
            modules[key] = build_module(self.lowered.source, f"sm_{major}{minor}",
                                        self.fast_math)
        mod = modules.get(key)
        self.pool = _pool()
        self._fixed = {name: self._upload(arr) for name, arr in self._data_arrays.items()}
        self._fixed.update(self._scalars)       # raw kernels' scalars, by value
        if self._checks:        # run-time checks' flags (codegen.emit.runtime_checks), zeroed
            from polyarray.codegen.emit.runtime_checks import ERROR_BUFFER
            # mapped page-locked host memory: the kernels write it directly,
            # so reading it costs only the wait for the call (no copy)
            try:
                self._flags = drv.pagelocked_zeros(self._n_flags, np.int64,
                                                   mem_flags=drv.host_alloc_flags.DEVICEMAP)
                self._fixed[ERROR_BUFFER] = self._flags_buf = \
                    np.intp(self._flags.base.get_device_pointer())
                self._mapped = True
            except drv.Error:       # no mapped memory: a device buffer, copied back
                self._flags = np.zeros(self._n_flags, np.int64)
                self._fixed[ERROR_BUFFER] = self._flags_buf = self._upload(self._flags)
                self._mapped = False
        self._launches = []
        for k in self.lowered.kernels:
            if is_library_call(k):      # cuSOLVER, cuFFT, cuBLAS, or NumPy on the host
                from . import blas, fourier, solvers
                step_for = {"cufft": fourier.step_for, "cublas": blas.step_for}.get(
                    k.form, solvers.step_for)
                call = None if is_host_call(k) else step_for(k, drv, self.pool.allocate)
                if call is None:
                    call = HostCall(k, lambda buf, a: drv.memcpy_dtoh(a, int(buf)),
                                    lambda buf, a: drv.memcpy_htod(int(buf), a))
                log.info("polyarray: %s", call.describe())
                # (call, None, ...): a step between launches; "stream" where it only
                # enqueues work on a stream it is given (a graph can capture it)
                self._launches.append((call, "stream" if getattr(call, "on_stream", False)
                                       else None, k.args, None, None))
                continue
            fn = mod.get_function(k.entry or k.name)
            grid = tuple(k.gsize) + (1,) * (3 - len(k.gsize))
            block = tuple(k.lsize) + (1,) * (3 - len(k.lsize))
            # pycuda's prepared_async_call re-checks its arguments on every
            # call (2 us); launch with the packed pointer buffer directly
            self._launches.append((fn._launch_kernel, arg_format(k.args, self._scalars), k.args,
                                   grid[:2] if grid[2] == 1 else grid, block))
        import pycuda.gpuarray as ga
        from pycuda._pvt_struct import pack
        self._pack_args = pack
        self._outs = []
        for name, b, copy, nbytes in self.output_plan():
            # GPUArray.__init__ costs microseconds a call: prepare its attributes once
            attrs = dict(ga.GPUArray(tuple(b.shape), np.dtype(b.dtype), gpudata=0).__dict__)
            self._outs.append((name, tuple(b.shape), np.dtype(b.dtype), b.storage, copy,
                               nbytes, attrs))
        self._gpuarray = ga.GPUArray
        # device results: GPUArrays whose get() and export read deferred checks
        self._result_type = _result_type()
        self._inputs = list(self.lowered.inputs.items())
        self._replay = None
        host_calls = any(fmt is None for _, fmt, _, _, _ in self._launches)
        self.host_calls = host_calls        # steps that wait for the device: no graphs
        self._replayable = not host_calls and self._can_replay()
        self._ready = True
        self.first_call_build = time.perf_counter() - t0
        if self.out_mode == "device" and not any(o[4] for o in self._outs) \
                and not self._replayable and not host_calls:
            self.fast_call = self._make_fast_call()

    def _can_replay(self):
        """Whether calls replay a CUDA graph of the launches
        (``cuda.graphs.Replay``): many launches, buffers small enough to hold."""
        from .graphs import REPLAY_MAX_BYTES, REPLAY_MIN_LAUNCHES
        if len(self._launches) < REPLAY_MIN_LAUNCHES:
            return False
        buffers = self.lowered.buffers
        held = sum(nbytes for _, nbytes in self._allocs) + sum(
            allocation_bytes(buffers[b]) for _, b in self._inputs)
        return held <= REPLAY_MAX_BYTES

    def _replayed(self, bindings):
        """This call through the program's graph: its buffers, or None where
        it cannot be (another thread, a strided input).  The graph is made
        at the first call: its instantiation costs milliseconds, where the
        first call's compile costs seconds."""
        if self._replay is None:
            from .graphs import Replay
            try:
                self._replay = Replay(self)
            except ImportError as e:    # no cuda-bindings: launched one by one
                log.warning("polyarray: %s; the program's %d launches run one by one",
                            e, len(self._launches))
                self._replayable = False
                return None
            except Exception as e:      # noqa: BLE001  a launch the capture refuses
                log.debug("polyarray: no CUDA graph for this program (%s)", e)
                self._replayable = False
                return None
            log.info("polyarray: %d launches captured as one CUDA graph, replayed at each call",
                     len(self._launches))
        return self._replay.run(self, bindings)

    def _make_fast_call(self):
        """A launcher generated for this program (as pyopencl generates its
        kernel invokers): for the common call -- every binding a contiguous
        GPUArray of the right shape and dtype -- it checks and launches in
        straight-line code, half the host time of the general path.  It
        returns None when any binding differs, and the caller then takes the
        general path, which gives the usual errors."""
        env = {"GA": self._gpuarray, "RT": self._result_type, "pack": self._pack_args,
               "fixed": self._fixed, "in_this_thread": cuda_driver.in_this_thread,
               "pool": self.pool, "oom": self._out_of_memory}
        lines = ["def fast_call(bindings):",
                 "    in_this_thread()",
                 f"    if len(bindings) != {len(self.placeholders)}:",
                 "        return None"]
        buf_of = {b: f"fixed[{b!r}]" for b in self._fixed}
        for k, (name, ph) in enumerate(self.placeholders):
            env[f"DT{k}"] = ph.dtype
            strides = tuple(int(st) for st in np.empty(ph.shape, ph.dtype, order="C").strides) \
                if all(ph.shape) else None
            lines += [f"    v{k} = bindings.get({name!r})",
                      f"    if (type(v{k}) is not RT and type(v{k}) is not GA) or "
                      f"v{k}.shape != {ph.shape!r} or "
                      f"(v{k}.dtype is not DT{k} and v{k}.dtype != DT{k})"
                      + (f" or v{k}.strides != {strides!r}:" if strides else ":"),
                      "        return None"]
            if name in self.lowered.inputs:
                buf_of[self.lowered.inputs[name]] = f"v{k}.gpudata"
        lines += ["    live = []", "    allocate = pool.allocate"]
        for k, (name, nbytes) in enumerate(self._allocs):
            lines += ["    try:", f"        a{k} = allocate({nbytes})",
                      "    except Exception as e:",
                      f"        oom(e, {nbytes}, live)", f"    live.append(a{k})"]
            buf_of[name] = f"a{k}"
        for k, (launch, fmt, args, grid, block) in enumerate(self._launches):
            env[f"launch{k}"] = launch
            if grid is None:            # a library step (cuBLAS): its buffers by name
                lines.append(f"    launch{k}({{" + ", ".join(f"{a!r}: {buf_of[a]}" for a in args)
                             + "})")
                continue
            lines.append(f"    launch{k}({grid!r}, {block!r}, pack({fmt!r}, "
                         + ", ".join(buf_of[a] for a in args) + "), 0, None)")
        results = []
        for k, (name, shape, dtype, sdt, copy, nbytes, attrs) in enumerate(self._outs):
            env[f"attrs{k}"] = attrs
            lines += [f"    r{k} = RT.__new__(RT)", f"    r{k}.__dict__.update(attrs{k})",
                      f"    r{k}.gpudata = {buf_of[name]}"]
            results.append(f"r{k}")
        if self._checks:            # read when a result is read (deferred_checks)
            env["defer"], env["me"] = _DEFERRED.defer, self
            lines.append("    defer(me)")
        lines.append(f"    return [{', '.join(results)}]")
        self.fast_source = "\n".join(lines)
        exec(compile(self.fast_source, "<polyarray cuda launcher>", "exec"), env)
        return env["fast_call"]

    def _alloc(self, nbytes, live):
        try:
            buf = self.pool.allocate(nbytes)
        except Exception as e:      # noqa: BLE001  (pycuda raises its own MemoryError)
            self._out_of_memory(e, nbytes, live)
        live.append(buf)
        return buf

    def _out_of_memory(self, e, nbytes, live):
        """Free this call's buffers and raise a MemoryError naming the size."""
        if "out of memory" not in str(e).lower() and type(e).__name__ != "MemoryError":
            raise e
        for b in live:
            b.free()
        self.pool.free_held()
        raise MemoryError(f"CUDA out of memory: could not allocate {nbytes} bytes "
                          f"({nbytes / 2**30:.2f} GiB) on the device") from None

    def _upload(self, arr, live=None):
        if isinstance(arr, foreign.CudaView):       # a device-resident data leaf
            return arr if arr.c_contiguous else cuda_interop.contiguous_copy(arr, live)
        arr = host_array(arr)
        buf = self._alloc(max(arr.nbytes, 1), live if live is not None else [])
        if arr.nbytes:
            self._drv.memcpy_htod(buf, arr)
        return buf

    def buffers(self, bindings, live):
        """Buffer name -> device memory for one call: the fixed ones, each
        binding's (device arrays as they are, host arrays uploaded) and this
        call's allocations (appended to ``live``)."""
        bufs = self._fixed.copy()
        gpuarray = self._gpuarray
        for pname, bname in self._inputs:
            v = bindings[pname]
            bufs[bname] = v.gpudata if type(v) is gpuarray or isinstance(v, gpuarray) \
                else v if type(v) is foreign.CudaView else self._upload(v, live)
        for name, nbytes in self._allocs:
            bufs[name] = self._alloc(nbytes, live)
        return bufs

    def wrap(self, buf, attrs):
        """A device result over ``buf`` from an output's prepared attributes."""
        arr = self._result_type.__new__(self._result_type)
        arr.__dict__.update(attrs)
        arr.gpudata = buf
        return arr

    def run(self, bindings):
        if not self._ready:
            self._prepare()
        cuda_driver.in_this_thread()        # a thread of its own (a dask worker's)
        live = []
        bufs = self._replayed(bindings) if self._replayable else None
        held = bufs is not None             # the graph's buffers: results copied out
        if not held:
            bufs = self.buffers(bindings, live)
            pack = self._pack_args
            for launch, fmt, args, grid, block in self._launches:
                if grid is None:
                    launch(bufs)        # a library call
                    continue
                launch(grid, block, pack(fmt, *[bufs[a] for a in args]), 0, None)
        results = []
        for name, shape, dtype, sdt, copy, nbytes, attrs in self._outs:
            buf = bufs[name]
            if copy or (held and self.out_mode == "device"):
                new = self._alloc(max(nbytes, 1), live)
                if nbytes:
                    self._drv.memcpy_dtod_async(new, int(buf), nbytes)   # (a bound view too)
                buf = new
            if self.out_mode == "device":
                results.append(self.wrap(buf, attrs))
            else:
                host = np.empty(shape, dtype)
                if nbytes:
                    self._drv.memcpy_dtoh(host.view(sdt) if sdt != dtype else host, int(buf))
                results.append(host)
        if self.out_mode == "device":
            if self._checks:        # read when a result is read (deferred_checks)
                _DEFERRED.defer(self)
        else:
            waited = any(o[5] for o in self._outs)
            if self._checks:
                self.read_flags(waited=waited)
            if _DEFERRED:           # earlier device-result calls: their flags now
                if not waited:
                    self._drv.Context.synchronize()
                _DEFERRED.resolve()
        return results

    def read_flags(self, waited=False):
        """Raise a failed check of this program's calls so far.  ``waited``:
        a blocking copy of an output already waited for the kernels (the
        default stream), so their flag stores are visible."""
        _DEFERRED.discard(self)
        flags, buf = self._flags, self._flags_buf
        if self._mapped:
            if not waited:
                self._drv.Context.synchronize()     # the call's kernels write the flags
        else:
            self._drv.memcpy_dtoh(flags, buf)

        def reset():
            flags[:] = 0
            if not self._mapped:
                self._drv.memcpy_htod(buf, flags)
        self._raise_failed_checks(flags, reset)

    def device_description(self):
        drv, dev = _driver()
        return f"CUDA {dev.name()} sm_{''.join(map(str, dev.compute_capability()))}"

    def synchronize(self):
        import pycuda.driver as drv
        cuda_driver.in_this_thread()
        drv.Context.synchronize()
        _DEFERRED.resolve()

    def repeats_in_graphs(self) -> bool:
        """Whether ``run_repeated`` can capture this program's calls (no
        step waits for the device: a host call or a cuSOLVER's ``info``)."""
        if not self._ready:
            self._prepare()
        return not self.host_calls

    def run_repeated(self, bindings, n, carry):
        """``n`` calls, carried outputs fed back (``cuda.graphs``)."""
        if not self._ready:
            self._prepare()
        cuda_driver.in_this_thread()
        from .graphs import run_repeated
        return run_repeated(self, bindings, n, carry)

    def to_device(self, value):
        """A host binding (not empty) as a GPUArray, for calls that reuse it
        (``repeat``, profiles); anything else unchanged."""
        if not on_host(value):
            return value
        _driver()
        import pycuda.gpuarray as ga
        return ga.to_gpu(np.ascontiguousarray(value))

    def can_read(self, value):
        ga = sys.modules.get("pycuda.gpuarray")
        return ga is not None and isinstance(value, ga.GPUArray)


_DEFERRED = cuda_driver.DEFERRED


def _result_type():
    """The GPUArray subclass of device results (``deferred_checks``)."""
    if "result_type" not in _STATE:
        import pycuda.gpuarray as ga
        cls = _STATE["result_type"] = checked_array_type(ga.GPUArray, _DEFERRED)
        cls.__dlpack__, cls.__dlpack_device__ = cuda_interop.dlpack, cuda_interop.dlpack_device
    return _STATE["result_type"]


class CudaTarget(Target):
    name = "cuda"
    codegen_without_device = True

    @classmethod
    def availability(cls):
        try:
            import loopy  # noqa: F401
        except ImportError as e:
            return False, f"loopy not installed ({e.name})"
        try:
            _driver()
        except RuntimeError as e:
            return False, str(e).replace("CUDA is unavailable: ", "")
        return True, "ok"

    def warm_up(self):
        _driver()
        _pool()

    def memory_stats(self):
        from ..base import pool_stats
        _driver()
        return pool_stats(_pool())

    def import_binding(self, value):
        """Another library's CUDA array, read in place (``cuda.interop``)."""
        return cuda_interop.import_binding(value)

    def binding_info(self, value):
        if type(value) is _STATE.get("result_type"):      # the per-call fast path
            return value.shape, value.dtype
        if isinstance(value, (np.ndarray, np.generic, foreign.CudaView)):
            return value.shape, value.dtype
        ga = sys.modules.get("pycuda.gpuarray")
        if ga is not None and isinstance(value, ga.GPUArray):
            return value.shape, value.dtype
        return None

    def prepare_binding(self, value):
        if isinstance(value, np.ndarray):
            return value if value.flags.c_contiguous else np.ascontiguousarray(value)
        if isinstance(value, foreign.CudaView):
            return value if value.c_contiguous else cuda_interop.contiguous_copy(value)
        return value

    def compile(self, outputs, out="numpy", fast_math=False, schedule=None, **options):
        """``out``: "numpy" or "device" (pycuda GPUArrays); ``fast_math``:
        nvcc's --use_fast_math (off by default)."""
        if out not in ("numpy", "device"):
            raise ValueError(f"out must be 'numpy' or 'device', got {out!r}")
        if options:
            raise TypeError(f"cuda target: unknown options {sorted(options)}")
        import loopy as lp
        from polyarray.codegen import program_key, refuse_beyond_budget
        from polyarray.codegen.schedule import schedule_key
        skey = schedule_key(schedule)
        refuse_beyond_budget(outputs)       # before the key digests every node
        key = None if skey is None else key_digest(
            "cuda", program_key(outputs), lp.VERSION, code_version(), skey)
        from polyarray.codegen.schedule import CUDA_MAX_GRID, CUDA_MAX_WORK_GROUP
        compiled = lower_or_load(_CACHE, key, outputs, lp.CudaTarget(),   # built on 1st call
                                 schedules=schedule, max_work_group=CUDA_MAX_WORK_GROUP,
                                 max_grid=CUDA_MAX_GRID)
        return CudaExecutable(compiled, outputs, out, fast_math, schedule)
