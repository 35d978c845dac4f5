"""The CUDA executable's timing hook for ``prog.profile``: a pair of
``pycuda.driver.Event``s recorded around each launch on its stream (the
launch list is swapped for timed launchers during the call)."""
from __future__ import annotations

from ..timing import device_results


def kernel_times(exe, bindings) -> list:
    """``[(kernel name, seconds)]`` of one call, in launch order."""
    import pycuda.driver as drv
    exe.ready()
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

    def timed_host(call, name):         # a library call (on the host: its blocking copies
        def run(bufs):                  # wait for the kernels before, the device idles)
            start, end = drv.Event(), drv.Event()
            start.record()
            call(bufs)
            end.record()
            events.append((name, start, end))
        return run
    exe._launches = [((timed_host if rest[2] is None else timed)(launch, k.name), *rest)
                     for (launch, *rest), k in zip(saved, infos)]
    try:
        with device_results(exe):
            exe.run(bindings)
    finally:
        exe._launches = saved
    drv.Context.synchronize()
    times = [(name, end.time_since(start) / 1e3) for name, start, end in events]
    exe.synchronize()           # a failed run-time check raises here
    return times
