"""Gather workloads: lazy ``x[idx]`` with run-time index checks,
against the peers and against the same gather without checks
(``pa.take(..., mode="clip")``), so the checks' cost is measured.  Indices
are in range, so clipping changes nothing: negative ones would be clipped
to 0 and then read one cached element, a faster gather than the checked
one."""
from __future__ import annotations

import numpy as np

import polyarray as pa
from .common import device_prog, input_sets, time_ours
from .peers import compare


def _gather_ns(ns, v, i):
    return v[i] * 2.0 + 1.0


def _gather_rows_ns(ns, v, i):
    return ns.sum(v[:, i], 1)


def gathers(b):
    n = 1 << (20 if b.quick else (26 if b.gpu else 22))      # the chain's 2^26 on GPUs
    x = pa.placeholder("x", (n,), np.float32)
    idx = pa.placeholder("idx", (n,), np.int64)
    sets = input_sets(b, lambda: (b.rng.uniform(-1, 1, n).astype(np.float32),
                                  b.rng.integers(0, n, n)), 12 * n)
    want = sets[0][0][sets[0][1]] * np.float32(2) + np.float32(1)
    r = compare(b, f"13. gather x[idx]*2+1, 2^{n.bit_length() - 1} f32, int64 idx",
                x[idx] * 2.0 + 1.0, ["x", "idx"], _gather_ns, sets, want, nbytes=16 * n)
    _check_cost(b, r, pa.take(x, idx, mode="clip") * 2.0 + 1.0, ["x", "idx"], sets)

    rows, cols = (256, 4096) if (b.quick or not b.gpu) else (4096, 8192)
    k = cols // 2
    y = pa.placeholder("y", (rows, cols), np.float32)
    c = pa.placeholder("c", (k,), np.int32)
    sets = input_sets(b, lambda: (b.rng.uniform(-1, 1, (rows, cols)).astype(np.float32),
                                  b.rng.integers(0, cols, k).astype(np.int32)),
                      4 * rows * cols)
    want = sets[0][0][:, sets[0][1]].sum(axis=1)
    r = compare(b, f"13. gathered row sums y[:, c].sum(1), {rows}x{cols}, {k} cols",
                y[:, c].sum(axis=1), ["y", "c"], _gather_rows_ns, sets, want,
                nbytes=4 * rows * k + 4 * k, rtol=1e-3)
    _check_cost(b, r, pa.take(y, c, axis=1, mode="clip").sum(axis=1), ["y", "c"], sets)


def _check_cost(b, row, unchecked_expr, names, sets):
    """Time the same work without run-time checks; record the checks' cost."""
    prog = device_prog(b, unchecked_expr)
    t = time_ours(b, prog, names, sets)
    row["unchecked_s"] = t
    row["check_cost"] = row["polyarray_s"] / t - 1.0
    print(f"    {row['workload']}: checked {row['polyarray_s'] * 1e6:.1f} us, unchecked "
          f"{t * 1e6:.1f} us: checks cost {100 * row['check_cost']:+.1f}%")
