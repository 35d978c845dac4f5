"""What the OpenCL and CUDA targets share: lowering with a two-level cache.

The cache holds the target-independent result of codegen (``Lowered``:
source, launch sizes, buffer table) plus the device binary, keyed by the
program's structure, the target, the device and the options.  A hit skips
loopy and the device compiler entirely.
"""
from __future__ import annotations

import dataclasses
import functools
import logging
import time
from dataclasses import dataclass, field

import numpy as np

from .base import Executable

log = logging.getLogger("polyarray.compile")
_MEMORY = {}


@dataclass
class CompiledProgram:
    lowered: object          # codegen.Lowered
    handle: object           # cl.Program / pycuda module (None: no kernels)
    origin: str              # "memory" | "disk" | "built"
    seconds: float           # time spent producing it in this process
    stages: dict = field(default_factory=dict)     # stage -> seconds, of that


def _strip(lowered):
    """A picklable copy without the loopy objects."""
    kernels = [dataclasses.replace(k, loopy=None) for k in lowered.kernels]
    return dataclasses.replace(lowered, kernels=kernels, stages=None)


def valid_lowered_entry(entry) -> bool:
    """Whether a disk-cache value is ``{"lowered": Lowered}`` with the fields
    the executables read, of the right kinds and consistent with each other
    (a checksum-valid entry of another shape must be rebuilt, not crash)."""
    from polyarray.codegen import BufferSpec, KernelInfo, Lowered
    L = entry["lowered"] if isinstance(entry, dict) else None
    if type(L) is not Lowered or not isinstance(L.source, str):
        return False
    if not (isinstance(L.kernels, list) and isinstance(L.buffers, dict)
            and isinstance(getattr(L, "scalars", None), dict)
            and isinstance(L.inputs, dict) and isinstance(L.data, dict)
            and isinstance(L.outputs, list)):
        return False
    for b in L.buffers.values():
        if not (type(b) is BufferSpec and isinstance(b.size, _INT) and b.size >= 0
                and isinstance(b.storage, np.dtype) and isinstance(b.dtype, np.dtype)
                and isinstance(b.shape, tuple) and b.role in _ROLES):
            return False
    for k in L.kernels:
        if not (type(k) is KernelInfo and isinstance(k.name, str) and k.loopy is None
                and all(a in L.buffers or a in L.scalars for a in k.args)
                and all(isinstance(n, _INT) for n in (*k.gsize, *k.lsize))
                and isinstance(k.form, str) and isinstance(k.rule, str)
                and isinstance(k.schedule, tuple)):
            return False
    return (all(b in L.buffers for b in (*L.inputs.values(), *L.data, *L.outputs))
            and all(isinstance(i, _INT) for i in L.data.values()))


_ROLES = ("input", "data", "temp", "output", "errors")
_INT = (int, np.integer)


def lower_or_load(cache, key, outputs, lp_target, build=None, cpu=False,
                  schedules=None, max_work_group=None, max_grid=None,
                  scope=None) -> CompiledProgram:
    """The lowered program from memory, disk or codegen.  ``build(source) ->
    handle`` compiles it now (None: the target builds on first call).  Device
    binaries are cached by pyopencl/pycuda themselves, keyed by source.
    ``key`` None (a schedule with raw loopy transforms) bypasses both caches.
    ``scope``: what the built handle belongs to besides the key (an OpenCL
    context: the user's and polyarray's share disk entries, not kernels);
    the memory cache holds it, so it stays alive while its kernels do."""
    t0 = time.perf_counter()

    def lower():
        from polyarray.codegen import lower_program
        return lower_program(outputs, lp_target, cpu=cpu, schedules=schedules,
                             max_work_group=max_work_group, max_grid=max_grid)
    if key is None:
        lowered = lower()
        handle, stages = _build(build, lowered, t0)
        return CompiledProgram(lowered, handle, "built", time.perf_counter() - t0, stages)
    memory_key = key if scope is None else (key, scope)
    hit = _MEMORY.get(memory_key)
    if hit is not None:
        return dataclasses.replace(hit, origin="memory", seconds=time.perf_counter() - t0,
                                   stages={"memory cache": time.perf_counter() - t0})
    entry = cache.get(key)
    if entry is not None:
        lowered, origin = entry["lowered"], "disk"
    else:
        lowered, origin = lower(), "built"
        cache.put(key, {"lowered": _strip(lowered)})
    handle, stages = _build(build, lowered, t0, origin)
    compiled = CompiledProgram(lowered, handle, origin, time.perf_counter() - t0, stages)
    _MEMORY[memory_key] = compiled
    return compiled


def _build(build, lowered, t0, origin="built"):
    """``(handle, stages)``: ``build(lowered.source)`` (None: no build now,
    or no kernels) and the compile's stages, which it logs
    (``codegen.logs.log_duration``: INFO past a second)."""
    from polyarray.codegen.logs import log_duration
    t1 = time.perf_counter()
    handle = build(lowered.source) if (build and lowered.source) else None
    t2 = time.perf_counter()
    stages = dict(lowered.stages or {}) if origin == "built" else {"disk cache": t1 - t0}
    if handle is not None:
        stages["device build"] = t2 - t1
    n = len(lowered.kernels)
    log_duration(log, f"compiled {n} kernel{'' if n == 1 else 's'} ({origin})", t2 - t0, stages)
    return handle, stages


def clear_memory_cache():
    """Forget compiled programs held in this process (for experiments that
    change codegen settings at run time, and for tests)."""
    from .cache import clear_memory_layers
    from polyarray.codegen.kernels.reuse import forget
    _MEMORY.clear()
    clear_memory_layers()
    forget()            # kernels' code kept for later programs (codegen/kernels/reuse.py)


def arg_format(args, scalars) -> str:
    """The struct format of a kernel's packed arguments (CUDA): a pointer
    per buffer, a scalar's own type per scalar (C alignment: native)."""
    return "".join(scalars[a].dtype.char if a in scalars else "P" for a in args)


def on_host(value) -> bool:
    """A non-empty host array (NumPy array or scalar) that ``to_device``
    uploads."""
    return isinstance(value, (np.ndarray, np.generic)) and np.asarray(value).nbytes > 0


def host_array(arr):
    """A C-contiguous host copy-source; bool is sent as its uint8 bytes."""
    arr = np.ascontiguousarray(arr)
    return arr.view(np.uint8) if arr.dtype == np.bool_ else arr


def allocation_bytes(spec) -> int:
    """Bytes a buffer (``BufferSpec``) is allocated on the device: at least
    one, so that an empty buffer still has an address."""
    return max(spec.size, 1) * spec.storage.itemsize


class DeviceExecutable(Executable):
    """What the OpenCL and CUDA executables share: the data leaves, the
    buffers a call allocates, how each output is returned, and ``kernels``
    for inspection."""

    def profile_bindings(self, bindings) -> dict:
        return {name: self.to_device(v) for name, v in bindings.items()}

    def wall_time(self, bindings) -> float:
        from .timing import device_wall_time
        return device_wall_time(self, bindings)

    def __init__(self, compiled, outputs, lp_target, cpu=False, schedules=None):
        from polyarray.codegen import data_nodes
        from polyarray.ir import nodes as N
        self.compiled = compiled
        self.lowered = L = compiled.lowered
        self.source = L.source
        self._outputs_nodes, self._lp_target, self._cpu = outputs, lp_target, cpu
        self._schedules = schedules
        self._kernel_info = None
        order = N.topological_order(outputs)
        datas = data_nodes(order)
        self.placeholders = sorted(N.placeholders(outputs, order).items())
        self._data_arrays = {name: datas[k].data for name, k in L.data.items()}
        # buffers allocated per call: (name, bytes)
        self._allocs = [(name, allocation_bytes(b))
                        for name, b in L.buffers.items() if b.role in ("temp", "output")]
        # arguments passed by value (raw kernels' scalars): name -> NumPy scalar
        self._scalars = dict(getattr(L, "scalars", None) or {})
        # run-time checks (codegen.emit.runtime_checks): a zeroed flag buffer kept on the device
        self._checks = tuple(getattr(L, "checks", ()))
        self._n_flags = len(self._checks)

    def compile_stages(self) -> tuple:
        c = self.compiled
        return c.origin, dict(c.stages)

    def _raise_failed_checks(self, flags, reset):
        """After a call: raise NumPy's error if a device check failed, first
        zeroing the flags (``reset()``) so the next call starts clean."""
        if flags.any():
            from polyarray.codegen.emit.runtime_checks import raise_failed_check
            failed = flags.copy()
            reset()
            raise_failed_check(failed, self._checks)

    device_desc = "?"

    def device_description(self):
        """The device this program runs on, for tuning-cache keys."""
        return self.device_desc

    def output_plan(self):
        """Per output: (name, spec, copy, nbytes); ``copy`` when the output is
        an input returned as is, or repeats an earlier output (never alias)."""
        seen, plan = set(), []
        for name in self.lowered.outputs:
            b = self.lowered.buffers[name]
            plan.append((name, b, b.role != "output" or name in seen,
                         b.size * b.storage.itemsize))
            seen.add(name)
        return plan

    @property
    def kernels(self):
        """name -> KernelInfo.  From the disk cache, the entry's own (nothing is
        lowered); their loopy objects are made when first asked for."""
        if self._kernel_info is None:
            infos = self.lowered.kernels
            if any(k.loopy is None for k in infos):
                infos = lower_when_asked(infos, self._outputs_nodes, self._lp_target,
                                         self._cpu, self._schedules)
            self._kernel_info = {k.name: k for k in infos}
        return self._kernel_info


def lower_when_asked(infos, outputs, lp_target, cpu, schedules):
    """Copies of ``infos`` (a disk-cache entry's: no loopy objects) whose
    loopy objects come from lowering ``outputs`` again, once, on first use:
    launching, ``repr`` and ``prog.schedule`` need none of them."""
    @functools.cache
    def lowered():
        from polyarray.codegen import lower_program
        L = lower_program(outputs, lp_target, cpu=cpu, schedules=schedules)
        return {k.name: k.loopy for k in L.kernels}
    return [dataclasses.replace(k, loopy=lambda name=k.name: lowered()[name]) for k in infos]
