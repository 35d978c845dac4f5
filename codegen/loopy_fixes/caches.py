"""The conditions loopy runs under while polyarray lowers: its disk caches
off (their keys confuse constants of other types), its warnings and
islpy's logged, not shown (``logs.routed_warnings``), and Python's cyclic
collector paused.  ``lower_program`` runs inside them, as does a kernel's
loop nest printed later (``KernelInfo.loop_nest``)."""
from __future__ import annotations

import logging
from contextlib import contextmanager

log = logging.getLogger("polyarray.codegen")


def without_loopy_caches(fn):
    """Run ``fn`` with loopy's disk caches off, and the warnings of loopy
    and islpy logged (``logs.routed_warnings``), not shown to users.
    polyarray caches whole programs under its own keys (``program_key``);
    loopy's keys (``LoopyKeyBuilder``) hash ``np.uint64(0)``,
    ``np.float64(0)`` and ``0`` alike, so a kernel that differs from a cached
    one only in a constant's type got the cached kernel's code (a uint64
    product rounded through double: fuzzer seeds 85 and 167)."""
    from functools import wraps

    @wraps(fn)
    def run(*args, **kwargs):
        import loopy as lp
        from ..logs import routed_warnings
        with lp.CacheMode(False), routed_warnings(log, "lowering"), collector_paused():
            return fn(*args, **kwargs)
    return run


@contextmanager
def collector_paused():
    """Python's cyclic garbage collector paused (reference counting still
    frees what lowering drops).  Lowering allocates millions of small
    objects; each gen-2 collection they trigger walks every object of the
    process (loopy, islpy, numpy and the user's DAG): a third of the
    lowering of a chain of 2000 ops went there.  A collector someone
    else paused stays paused; concurrent lowerings may re-enable it early
    (harmless: only the saving is lost)."""
    import gc
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


__all__ = ["collector_paused", "without_loopy_caches"]
