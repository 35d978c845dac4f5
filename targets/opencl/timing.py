"""The OpenCL executable's timing hook for ``prog.profile``: the call is
enqueued on a queue of the same context made with ``PROFILING_ENABLE`` (the
target's own queue has no profiling), and each kernel's event gives its
start and end; a library call run on the host is timed on the host's clock."""
from __future__ import annotations

import time

from ..timing import device_results


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


def kernel_times(exe, bindings) -> list:
    """``[(kernel name, seconds)]`` of one call, in launch order."""
    queue = profiling_queue(exe)
    exe.queue.finish()          # nothing of ours still runs on the other queue
    events = []
    saved = exe.queue, exe._cl, exe._launches

    def timed_host(call, name):         # a library call: seconds on the host's clock, from
        def run(bufs):                  # the kernels before it done to its own work done
            queue.finish()              # (VkFFT's enqueues return at once)
            t0 = time.perf_counter()
            call(bufs)
            queue.finish()
            events.append((name, time.perf_counter() - t0))
        return run
    exe.queue, exe._cl = queue, _RecordingCL(exe._cl, events)
    exe._launches = [(timed_host(knl, k.name) if gs is None else knl, args, gs, ls)
                     for (knl, args, gs, ls), k in zip(exe._launches, exe.lowered.kernels)]
    try:
        with device_results(exe):
            exe.run(bindings)
        queue.finish()
    finally:
        exe.queue, exe._cl, exe._launches = saved
    times = [(name, ev if isinstance(ev, float) else (ev.profile.end - ev.profile.start) * 1e-9)
             for name, ev in events]
    exe.synchronize()           # a failed run-time check raises here
    return times
