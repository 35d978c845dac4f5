"""What the targets' timing hooks share, for ``prog.profile``
(``polyarray.inspect.profiling``).

A profiled call runs the executable's own ``run`` -- the same buffers, the
same launches in the same order -- with each launch timed, by each
executable's own hook (``kernel_times``):

* **CUDA** (``cuda/timing.py``): a pair of ``pycuda.driver.Event``s recorded
  around each launch on the launch's stream (the launch list is swapped for
  timed launchers during the call);
* **OpenCL** (``opencl/timing.py``): the call is enqueued on a queue of the
  same context made with ``PROFILING_ENABLE`` (the target's own queue has no
  profiling), and each kernel's event gives its start and end;
* **NumPy** (``numpy/timing.py``): each node's evaluation is timed on the
  host (it runs nodes, not kernels; a strided view costs nothing and its
  reader pays).

A library call run on the host is timed on the host's clock (OpenCL) or by
events around it (CUDA: its blocking copies wait for the kernels before).
Profiled calls leave their results on the device (as ``out="device"``), and
host bindings are copied to the device once beforehand
(``profile_bindings``), so a call's wall time is the device work and its
launches, not transfers.
"""
from __future__ import annotations

import contextlib
import time


@contextlib.contextmanager
def device_results(exe):
    """``exe``'s calls return device arrays for the duration."""
    old = exe.out_mode
    exe.out_mode = "device"
    try:
        yield
    finally:
        exe.out_mode = old


def host_wall_time(exe, bindings) -> float:
    """Seconds of one call that runs on the host."""
    t0 = time.perf_counter()
    exe.run(bindings)
    return time.perf_counter() - t0


def device_wall_time(exe, bindings) -> float:
    """Seconds of one call, from its start until the device has finished."""
    exe.synchronize()
    with device_results(exe):
        t0 = time.perf_counter()
        exe.run(bindings)
        exe.synchronize()
        return time.perf_counter() - t0
