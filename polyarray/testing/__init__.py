"""``pa.testing``: compare results with NumPy's and time programs, as the
project's own tests and benchmarks do.

- ``compare``: per-dtype tolerances, ``allclose``, ``assert_allclose``
  (integers and booleans exact, NaN equal to NaN); imports nothing of ours.
- ``timing``: ``median_time``, ``seconds_per_call``, ``format_seconds``.
- ``checking``: ``pa.check`` and ``assert_targets_agree``, one DAG on every
  target against NumPy.  It compiles, so it sits above ``polyarray.program``
  and is loaded on first use of its names: the layers below import
  ``testing.compare`` and ``testing.timing`` without it.
"""
from __future__ import annotations

from .compare import (SCHEDULE_TOLERANCES, TOLERANCES, allclose, assert_allclose,
                      flat_outputs, random_bindings, to_host, tolerance)
from .timing import format_seconds, median_time, seconds_per_call

__all__ = ["SCHEDULE_TOLERANCES", "TOLERANCES", "allclose", "assert_allclose",
           "assert_targets_agree", "check", "CheckReport", "flat_outputs", "format_seconds",
           "median_time", "random_bindings", "seconds_per_call", "to_host", "tolerance"]


def __getattr__(name):
    if name in ("assert_targets_agree", "check", "CheckReport"):
        from . import checking
        return getattr(checking, name)
    raise AttributeError(f"module 'polyarray.testing' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
