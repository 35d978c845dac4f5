"""The Hermite recurrence as scientists write it with NumPy, run lazily.

    out = np.ones((X.shape[0], N)); out[:, 1] = X
    for i in range(2, N): out[:, i] = X * out[:, i-1] - (i-1) * out[:, i-2]
    for i in range(2, N): c *= i; out[:, i] /= math.sqrt(c)

The same function runs with ``np`` and with ``pa`` (``x[i] = v`` on a lazy
array rebinds it to "x with that region replaced").  polyarray reads
``out[:, i-1]`` as the value written there, so the DAG is the one
``pa.stack(columns, axis=1)`` builds, and compiles to one fused kernel.
Prints the agreement with NumPy, the kernel count and, on a device target,
the fraction of copy bandwidth reached by the default schedule and by a
work-item per row stored through local memory:

    python3 examples/hermite_setitem.py [--target opencl] [--rows 1280000] [--N 16]
"""
import argparse
import math

import numpy as np

import polyarray as pa
from polyarray.schedules import Layout, StoreThroughLocal, Unroll, WorkGroup
from polyarray.testing import seconds_per_call

import sizing                      # examples/sizing.py: --quick, and small sizes on a CPU

# the default schedule, and a work-item per row whose rows are stored through
# local memory (examples/coalescing.py explains both)
SCHEDULES = {"default": None,
             "row+tile": [Layout("axes"), WorkGroup(256, "i0"), Unroll("i1"), StoreThroughLocal()]}


def hermite(X, N, xp):
    """Normalized probabilists' Hermite functions, written as with NumPy."""
    out = xp.ones((X.shape[0], N))
    out[:, 1] = X
    for i in range(2, N):
        out[:, i] = X * out[:, i - 1] - (i - 1) * out[:, i - 2]
    c = 1.0
    for i in range(2, N):
        c *= i
        out[:, i] /= math.sqrt(c)
    return out


def hermite_stack(X, N):
    """The same, as polyarray needed it written before ``x[i] = v``."""
    cols = [pa.ones_like(X), X]
    for i in range(2, N):
        cols.append(X * cols[i - 1] - (i - 1) * cols[i - 2])
    c = 1.0
    for i in range(2, N):
        c *= i
        cols[i] = cols[i] / math.sqrt(c)
    return pa.stack(cols, axis=1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=None, help="numpy, opencl or cuda (default: the best)")
    ap.add_argument("--rows", type=int, default=1_280_000)
    ap.add_argument("--N", type=int, default=16)
    args = sizing.parse_args(ap, {"rows": 5000, "N": 8}, argv)
    target = args.target or pa.get_default_target()
    rows, N = args.rows, args.N
    print(f"target: {target}; X: {rows} float64, N = {N}")

    xv = np.random.default_rng(0).uniform(-1, 1, rows)
    X = pa.placeholder("X", (rows,), np.float64)
    out = hermite(X, N, pa)
    prog = pa.compile(out, target=target)
    got, want = prog(X=xv), hermite(xv, N, np)
    err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    print(f"max relative error vs NumPy: {err:.2e}")
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    same = prog.outputs.node is hermite_stack(X, N).node    # the DAG the program computes
    print(f"kernels: {len(prog.kernels)}; the same DAG as the stack form: {same}")
    if target == "numpy":
        return
    dev = pa.compile(X, target=target, out="device")(X=xv)
    y = pa.placeholder("y", (rows, N), np.float64)
    copy = pa.compile(y + 0.0, target=target, out="device")
    tc = seconds_per_call(copy, {"y": pa.compile(y, target=target, out="device")(y=want)},
                          batch=20)
    moved, copied = xv.nbytes + want.nbytes, 2 * want.nbytes
    print(f"copy:     {tc * 1e6:9.1f} us  {copied / tc / 1e9:7.1f} GB/s "
          "(an array of the output's size)")
    for label, steps in SCHEDULES.items():
        fused = pa.compile(out, target=target, out="device",
                           schedule=steps and {"k0_elementwise": steps})
        np.testing.assert_allclose(fused(X=dev).get(), want, rtol=1e-12,
                                   atol=1e-12 * np.abs(want).max())
        t = seconds_per_call(fused, {"X": dev}, batch=20)
        print(f"{label:9s} {t * 1e6:9.1f} us  {moved / t / 1e9:7.1f} GB/s  "
              f"{(moved / t) / (copied / tc):.2f} of copy")

if __name__ == "__main__":
    main()
