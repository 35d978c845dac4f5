"""Compiling without the cyclic garbage collector's pauses (issue 18).

A compile allocates many objects that live for the length of the compile
(loopy's kernels, pymbolic expressions, isl sets): enough to start
collections of the older generations, and each of those walks every object
in the process, NumPy's, loopy's and the user's alike.  On the H100's host
(Python 3.12), one collection took 21-24 ms of a 120 ms cold compile, and
1.2 ms of a 4 ms disk hit.  Those objects are freed by reference counting
when the compile ends; the collector is switched back on then and runs as
usual afterwards.  Nested and concurrent compiles (threads) share one
pause, which ends with the last of them; a collector the user switched off
stays off."""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager

_LOCK = threading.Lock()
_STATE = {"depth": 0, "was_enabled": False}


@contextmanager
def collector_paused():
    """``gc.disable()`` for the block, restored when the last block ends
    (by an exception too)."""
    with _LOCK:
        if _STATE["depth"] == 0:
            _STATE["was_enabled"] = gc.isenabled()
            gc.disable()
        _STATE["depth"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _STATE["depth"] -= 1
            if _STATE["depth"] == 0 and _STATE["was_enabled"]:
                gc.enable()
