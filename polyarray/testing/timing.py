"""Timing programs: the one timer that the tests, the benchmarks, the
autotuner, profiles and ``pa.show`` use.  It imports nothing of polyarray's,
so every layer may use it."""
from __future__ import annotations

import time

import numpy as np


def median_time(fn, sync=lambda: None, repeat=10, warmup=2, min_time=0.2, batch=None):
    """Seconds per call of ``fn`` in steady state: calls are queued back to
    back in batches, with ``sync`` before each clock read, and the median over
    batches is returned (at least ``repeat`` of them, more until ``min_time``
    has passed).  The device then overlaps one call's host work with the
    previous call's kernels, as in a real loop; timing single calls would add
    the launch latency (10-15 us) to every kernel time.  ``batch``: calls per
    batch; by default as many as take about 5 ms."""
    for _ in range(warmup):
        fn()
    sync()
    if batch is None:
        t0 = time.perf_counter()
        fn()
        sync()
        batch = max(1, min(200, int(0.005 / max(time.perf_counter() - t0, 1e-7))))
    times = []
    t_end = time.perf_counter() + min_time
    while len(times) < repeat or (time.perf_counter() < t_end and len(times) < 200):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / batch)
    return float(np.median(times))


def format_seconds(s) -> str:
    """``12.3 us``, ``4.56 ms`` or ``1.23 s`` (profiles, ``pa.show``)."""
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def seconds_per_call(prog, bindings, repeat=10, batch=10) -> float:
    """``median_time`` of a compiled program: ``repeat`` batches of ``batch``
    calls, each batch followed by ``prog.synchronize()``."""
    return median_time(lambda: prog(**bindings), prog.synchronize, repeat=repeat,
                       min_time=0.0, batch=batch)
