"""``pa.*`` log-spaced ranges (:mod:`polyarray.ops.ranges`): ``logspace``,
``geomspace``."""
from __future__ import annotations

from ..array import Array
from ..ops import ranges as G
from ..ops.axes import normalize_axis_index


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0) -> Array:
    """``base ** linspace(start, stop, num)`` (``np.logspace``), a lazy
    constant; the bounds and base must be scalars (so ``axis`` is 0 or -1)."""
    normalize_axis_index(axis, 1)
    return Array(G.logspace(start, stop, num, endpoint, base, dtype))


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0) -> Array:
    """``num`` numbers from ``start`` to ``stop`` in geometric progression
    (``np.geomspace``), a lazy constant with the bounds exact; they must be
    scalars (so ``axis`` is 0 or -1)."""
    normalize_axis_index(axis, 1)
    return Array(G.geomspace(start, stop, num, endpoint, dtype))
