"""A debugging net: with ``POLYARRAY_POISON=1`` every buffer a device
target allocates (outputs and temporaries) is filled with 0xFF bytes first:
NaN for floats, -1 for signed and the maximum for unsigned integers.

Fresh device memory is often zero, so a kernel that leaves part of a buffer
unwritten (a partial no work-item stores, an output row a guard skips) can
give the right answer by luck, and then a wrong one when the memory pool
hands back a used block.  The test suite sets this variable, so such a bug
fails every time instead of sometimes."""
from __future__ import annotations

import os


def enabled() -> bool:
    return os.environ.get("POLYARRAY_POISON") == "1"


class PoisonedPool:
    """A memory pool whose allocations come back filled by ``fill(buf, nbytes)``."""

    def __init__(self, pool, fill):
        self._pool, self._fill = pool, fill

    def allocate(self, nbytes):
        buf = self._pool.allocate(nbytes)
        if nbytes:
            self._fill(buf, nbytes)
        return buf

    __call__ = allocate         # pyopencl arrays call their allocator

    def __getattr__(self, name):
        return getattr(self._pool, name)


def poisoned(pool, fill):
    """``pool``, or a PoisonedPool around it when poisoning is on."""
    return PoisonedPool(pool, fill) if enabled() else pool
