"""The targets' timing hooks for ``prog.profile`` (``polyarray.inspect.profiling``).

A profiled call runs the executable's own ``run`` -- the same buffers, the
same launches in the same order -- with each launch timed on the device:

* **CUDA**: a pair of ``pycuda.driver.Event``s recorded around each launch
  on the launch's stream (the launch list is swapped for timed launchers
  during the call);
* **OpenCL**: the call is enqueued on a queue of the same context made with
  ``PROFILING_ENABLE`` (the target's own queue has no profiling), and each
  kernel's event gives its start and end;
* **NumPy**: each node's evaluation is timed on the host (it runs nodes,
  not kernels; a strided view costs nothing and its reader pays).

Profiled calls leave their results on the device (as ``out="device"``), and
host bindings are copied to the device once beforehand (``device_bindings``),
so a call's wall time is the device work and its launches, not transfers.
"""
from __future__ import annotations

import contextlib
import time

import numpy as np



def _kind(exe):
    from .cuda import CudaExecutable
    from .opencl import OpenCLExecutable
    if isinstance(exe, CudaExecutable):
        return "cuda"
    if isinstance(exe, OpenCLExecutable):
        return "opencl"
    return "numpy"


def device_bindings(exe, bindings) -> dict:
    """``bindings`` (checked) with host arrays copied to ``exe``'s device
    once (the executable's ``to_device``; the NumPy target has none)."""
    to_device = getattr(exe, "to_device", None)
    if to_device is None:
        return dict(bindings)
    if _kind(exe) == "cuda":
        _ready(exe)
    return {name: to_device(v) for name, v in bindings.items()}


def _ready(exe):
    """The CUDA module built and the launch plan made, in the program's own
    result mode (so its fast launcher is the one it would have)."""
    if not exe._ready:
        exe._prepare()


@contextlib.contextmanager
def _device_results(exe):
    old = exe.out_mode
    exe.out_mode = "device"
    try:
        yield
    finally:
        exe.out_mode = old


def wall_time(exe, bindings) -> float:
    """Seconds of one call, from its start until the device has finished."""
    kind = _kind(exe)
    if kind == "numpy":
        t0 = time.perf_counter()
        exe.run(bindings)
        return time.perf_counter() - t0
    if kind == "cuda":
        _ready(exe)
    exe.synchronize()
    with _device_results(exe):
        t0 = time.perf_counter()
        exe.run(bindings)
        exe.synchronize()
        return time.perf_counter() - t0


def kernel_times(exe, bindings) -> list:
    """``[(kernel name, seconds)]`` of one call, in launch order (NumPy:
    ``[(node position, seconds)]`` over the topological order)."""
    return {"cuda": _cuda, "opencl": _opencl, "numpy": _numpy}[_kind(exe)](exe, bindings)


def _cuda(exe, bindings):
    import pycuda.driver as drv
    _ready(exe)
    infos = exe.lowered.kernels
    saved = exe._launches
    if len(saved) != len(infos):
        raise RuntimeError(f"{len(saved)} launches for {len(infos)} kernels: cannot time them")
    events = []

    def timed(launch, name):
        def run(grid, block, args, shared, stream):
            start, end = drv.Event(), drv.Event()
            start.record(stream)
            launch(grid, block, args, shared, stream)
            end.record(stream)
            events.append((name, start, end))
        return run

    def timed_host(call, name):         # a library call on the host: its blocking copies
        def run(bufs):                  # wait for the kernels before, the device idles
            start, end = drv.Event(), drv.Event()
            start.record()
            call(bufs)
            end.record()
            events.append((name, start, end))
        return run
    exe._launches = [((timed_host if rest[0] is None else timed)(launch, k.name), *rest)
                     for (launch, *rest), k in zip(saved, infos)]
    try:
        with _device_results(exe):
            exe.run(bindings)
    finally:
        exe._launches = saved
    drv.Context.synchronize()
    times = [(name, end.time_since(start) / 1e3) for name, start, end in events]
    exe.synchronize()           # a failed run-time check raises here
    return times


class _RecordingCL:
    """pyopencl, with each kernel enqueue's event recorded."""

    def __init__(self, cl, events):
        self._cl, self._events = cl, events

    def enqueue_nd_range_kernel(self, queue, kernel, *args, **kwargs):
        event = self._cl.enqueue_nd_range_kernel(queue, kernel, *args, **kwargs)
        self._events.append((kernel.function_name, event))
        return event

    def __getattr__(self, name):
        return getattr(self._cl, name)


_QUEUES = {}


def profiling_queue(exe):
    """A queue with ``PROFILING_ENABLE`` on ``exe``'s context and device
    (one per device for the process)."""
    import pyopencl as cl
    key = exe.queue.device.int_ptr
    if key not in _QUEUES:
        _QUEUES[key] = cl.CommandQueue(
            exe.ctx, exe.queue.device, properties=cl.command_queue_properties.PROFILING_ENABLE)
    return _QUEUES[key]


def _opencl(exe, bindings):
    queue = profiling_queue(exe)
    exe.queue.finish()          # nothing of ours still runs on the other queue
    events = []
    saved = exe.queue, exe._cl, exe._launches

    def timed_host(call, name):         # a library call on the host: seconds on its clock
        def run(bufs):
            t0 = time.perf_counter()
            call(bufs)
            events.append((name, time.perf_counter() - t0))
        return run
    exe.queue, exe._cl = queue, _RecordingCL(exe._cl, events)
    exe._launches = [(timed_host(knl, k.name) if gs is None else knl, args, gs, ls)
                     for (knl, args, gs, ls), k in zip(exe._launches, exe.lowered.kernels)]
    try:
        with _device_results(exe):
            exe.run(bindings)
        queue.finish()
    finally:
        exe.queue, exe._cl, exe._launches = saved
    times = [(name, ev if isinstance(ev, float) else (ev.profile.end - ev.profile.start) * 1e-9)
             for name, ev in events]
    exe.synchronize()           # a failed run-time check raises here
    return times


def _numpy(exe, bindings):
    from .numpy import NumpyNodeEvaluator
    evaluator, values, times = NumpyNodeEvaluator(), {}, []
    clock = time.perf_counter
    with np.errstate(all="ignore"):
        for step, node in enumerate(exe.order):
            t0 = clock()
            values[id(node)] = evaluator.rec(node, values, bindings)
            times.append((step, clock() - t0))
            for dead in exe._free_after[step]:
                del values[dead]
    return times


def device_queue(exe):
    """The OpenCL queue of ``exe`` (for measuring its device), else None."""
    return exe.queue if _kind(exe) == "opencl" else None
