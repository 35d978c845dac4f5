"""The NumPy target's timing hook for ``prog.profile``: each node's
evaluation timed on the host (it runs nodes, not kernels; a strided view
costs nothing and its reader pays)."""
from __future__ import annotations

import time

import numpy as np


def kernel_times(exe, bindings) -> list:
    """``[(node position, seconds)]`` of one call over the topological order."""
    from . import NumpyNodeEvaluator
    evaluator, values, times = NumpyNodeEvaluator(), {}, []
    clock = time.perf_counter
    with np.errstate(all="ignore"):
        for step, node in enumerate(exe.order):
            t0 = clock()
            values[id(node)] = evaluator.rec(node, values, bindings)
            times.append((step, clock() - t0))
            for dead in exe._free_after[step]:
                del values[dead]
    return times
