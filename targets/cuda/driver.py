"""The CUDA driver, shared by the CUDA target's modules: pycuda imported
lazily (through ``pycuda.autoprimaryctx``, so that CuPy, PyTorch and JAX
share the primary context), the memory pool, and the device's ordinal."""
from __future__ import annotations

import sys
import threading

from ..deferred_checks import DeferredChecks

# the CUDA target's device-result calls whose check flags are unread
DEFERRED = DeferredChecks()

STATE = {}
_THREAD = threading.local()     # .current: this thread has polyarray's context


class _Pushed:
    """The primary context on this thread's pycuda context stack (pushed
    here, or by ``autoprimaryctx`` when this thread imported it), popped
    when the thread ends (its ``threading.local`` values are dropped in the
    ending thread), or at exit for the main thread: pycuda aborts the
    process when a thread exits with a non-empty stack ("The context stack
    was not empty upon module cleanup"; a dask worker's task thread)."""

    def __init__(self, context, push=True):
        if push:
            context.push()
        self.context = context

    def pop(self):
        context, self.context = self.context, None
        if context is not None:
            try:
                context.pop()
            except Exception:       # noqa: BLE001  (interpreter shutdown: nothing to undo)
                pass

    __del__ = pop


def _pop_at_exit():
    """atexit, in the main thread, while the context is still current: the
    memory pool's held blocks freed and the pool told to free what comes
    back (a block freed after the context is gone, at the pool's own
    destruction, made pycuda abort the process at exit), then what polyarray
    pushed popped."""
    pool = STATE.get("pool")
    if pool is not None:
        # the held blocks are freed with the context current in this thread:
        # where CUDA was first used in another thread (a dask worker's task
        # thread), pycuda could not free them here ("pooled_device_allocation
        # in out-of-thread context could not be cleaned up", once per block)
        borrowed = None
        if not getattr(_THREAD, "current", False):
            try:
                import pycuda.autoprimaryctx as primary
                primary.context.push()
                borrowed = primary.context
            except Exception:   # noqa: BLE001  (the context is gone: nothing to free)
                pass
        try:
            pool.stop_holding()
        except Exception:       # noqa: BLE001  (nothing left to free)
            pass
        if borrowed is not None:
            try:
                borrowed.pop()
            except Exception:   # noqa: BLE001
                pass
    pushed = getattr(_THREAD, "pushed", None)
    if pushed is not None:
        pushed.pop()


def in_this_thread():
    """Make the primary context current in the calling thread.  pycuda's
    contexts are per thread, and ``autoprimaryctx`` pushed it only in the
    thread that first used CUDA: a dask worker runs its tasks in threads of
    its own, whose first allocation failed with "invalid device context"
    (pa.dask on the H100).  About 50 ns once the thread has it."""
    if not getattr(_THREAD, "current", False):
        import pycuda.driver as drv
        if drv.Context.get_current() is None:
            import pycuda.autoprimaryctx as primary
            _THREAD.pushed = _Pushed(primary.context)
        _THREAD.current = True


def driver():
    """(driver module, device), or TargetUnavailableError saying why not."""
    from .. import TargetUnavailableError as Unavailable
    if "error" in STATE:
        raise Unavailable(f"CUDA is unavailable: {STATE['error']}")
    if "drv" not in STATE:
        try:
            import pycuda.driver as drv
        except ImportError as e:
            # say what is missing: the GPU, or (where there is one) pycuda
            import glob
            gpu = glob.glob("/proc/driver/nvidia/gpus/*") or glob.glob("/dev/nvidia[0-9]*")
            STATE["error"] = (f"pycuda is not installed ({e}) although this machine has "
                               "an NVIDIA GPU: pip install 'polyarray[cuda]'" if gpu
                               else "no CUDA GPU on this machine")
            raise Unavailable(f"CUDA is unavailable: {STATE['error']}") from None
        try:
            drv.init()
            if drv.Device.count() == 0:
                raise RuntimeError("no CUDA device")
            fresh = "pycuda.autoprimaryctx" not in sys.modules   # imported here, now
            import pycuda.autoprimaryctx  # noqa: F401
        except Exception as e:      # noqa: BLE001  (driver missing, no GPU, ...)
            STATE["error"] = f"no usable CUDA GPU ({str(e).splitlines()[0]})"
            raise Unavailable(f"CUDA is unavailable: {STATE['error']}") from None
        STATE["drv"] = drv
        STATE["device"] = drv.Context.get_device()
        import atexit
        primary = sys.modules["pycuda.autoprimaryctx"]
        if fresh and threading.current_thread() is not threading.main_thread():
            # autoprimaryctx pushed the context on this thread's stack and
            # would pop it at exit from the main thread, where it is not:
            # this thread pops it when it ends
            atexit.unregister(primary._finish_up)
            _THREAD.pushed = _Pushed(primary.context, push=False)
        atexit.register(_pop_at_exit)
    in_this_thread()        # pushes the context where this thread lacks it
    return STATE["drv"], STATE["device"]


def pool():
    if "pool" not in STATE:
        import pycuda.driver as drv
        import pycuda.tools
        from ..poison import poisoned
        STATE["pool"] = poisoned(pycuda.tools.DeviceMemoryPool(),
                                  lambda buf, n: drv.memset_d8(int(buf), 0xFF, n))
    return STATE["pool"]


def device_ordinal() -> int:
    """The CUDA device ordinal of the context polyarray runs in."""
    if "ordinal" not in STATE:
        drv, dev = driver()
        STATE["ordinal"] = next((i for i in range(drv.Device.count())
                                 if drv.Device(i).pci_bus_id() == dev.pci_bus_id()), 0)
    return STATE["ordinal"]
