"""Numbers spaced on a log scale: ``logspace`` (``base ** linspace``) and
``geomspace`` (``10 ** linspace`` of the log10 of the bounds, the bounds
set exactly), NumPy's formulas step for step
(``numpy/_core/function_base.py``).  Lazy constants of scalar bounds, as
``linspace``'s."""
from __future__ import annotations

import operator

import numpy as np

from ..ir import nodes as N
from .creation import arange, linspace
from .dtypes import check_dtype
from .elementwise import apply_ufunc as U, astype, where


def _scalar(v, what):
    if isinstance(v, N.Node) or np.ndim(v):
        raise TypeError(f"{what}: start, stop and base must be scalars, not arrays (a lazy "
                        "constant: its values are made where they are used)")
    return v


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None) -> N.Node:
    """``base ** linspace(start, stop, num)``."""
    for v in (start, stop, base):
        _scalar(v, "logspace")
    y = linspace(start, stop, num, endpoint)
    out = U("power", base, y)
    return out if dtype is None else astype(out, check_dtype(dtype, "logspace"))


def geomspace(start, stop, num=50, endpoint=True, dtype=None) -> N.Node:
    """``10 ** linspace(log10 |start|, log10 |stop|)`` times ``start``'s
    sign, with the first (and last, with ``endpoint``) value ``start``
    (``stop``) exactly."""
    start, stop = _scalar(start, "geomspace"), _scalar(stop, "geomspace")
    num = operator.index(num)
    if start == 0 or stop == 0:
        raise ValueError("Geometric sequence cannot include zero")
    dt = np.result_type(np.asarray(start), np.asarray(stop), float(num),
                        np.zeros((), dtype))
    dt = check_dtype(dt, "geomspace")
    out_dtype = dt if dtype is None else check_dtype(dtype, "geomspace")
    sign = np.sign(np.asarray(start, dt))
    lo, hi = np.asarray(start, dt) / sign, np.asarray(stop, dt) / sign
    with np.errstate(invalid="ignore"):
        log_lo, log_hi = np.log10(lo), np.log10(hi)
    y = U("power", 10.0, linspace(float(log_lo), float(log_hi), num, endpoint))
    y = astype(y, dt)
    if num > 0:
        i = arange(num)
        y = where(U("equal", i, 0), lo[()], y)
        if num > 1 and endpoint:
            y = where(U("equal", i, num - 1), hi[()], y)
    return astype(U("multiply", y, sign[()]), out_dtype)
