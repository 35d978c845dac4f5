"""Numbers spaced on a log scale: ``logspace`` (``base ** linspace``) and
``geomspace`` (``10 ** linspace`` of the log10 of the bounds, the bounds
set exactly).  Their bounds are scalars, so the values are NumPy's own,
made when the function is called (a data leaf): a device's ``pow`` may
differ from the host's in the last bit, and an integer ``dtype`` truncates,
so ``geomspace(1, 256, 9, dtype=int)``'s 127 would be 128 on CUDA."""
from __future__ import annotations

import operator

import numpy as np

from ..ir import nodes as N
from .creation import array
from .dtypes import check_dtype


def _scalar(v, what):
    if isinstance(v, N.Node) or np.ndim(v):
        raise TypeError(f"{what}: start, stop and base must be scalars, not arrays (its "
                        "values are NumPy's, made when it is called)")
    return v


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None) -> N.Node:
    """``base ** linspace(start, stop, num)``."""
    for v in (start, stop, base):
        _scalar(v, "logspace")
    if dtype is not None:
        check_dtype(dtype, "logspace")
    return array(np.logspace(start, stop, num, endpoint, base, dtype))


def geomspace(start, stop, num=50, endpoint=True, dtype=None) -> N.Node:
    """``10 ** linspace(log10 |start|, log10 |stop|)`` times ``start``'s
    sign, with the first (and last, with ``endpoint``) value ``start``
    (``stop``) exactly."""
    start, stop = _scalar(start, "geomspace"), _scalar(stop, "geomspace")
    num = operator.index(num)
    if start == 0 or stop == 0:
        raise ValueError("Geometric sequence cannot include zero")
    if dtype is not None:
        check_dtype(dtype, "geomspace")
    return array(np.geomspace(start, stop, num, endpoint, dtype))
