"""Experiment: where the host time of one small call goes.

``python -m benchmarks.profile_dispatch --device cuda`` times a cached
single-kernel program on 16-element device arrays, then its parts alone
(binding checks, allocation, the launch) and prints a cProfile of 20000
calls, so the per-call cost is measured, not guessed.
"""
import argparse
import cProfile
import pstats
import time

import numpy as np

import polyarray as pa
from .bench import Bench
from .common import to_device


def per_call(fn, n=20000):
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    b = Bench(args.device, quick=True)
    xv = np.arange(16, dtype=np.float32)
    xd = to_device(b, xv)
    x = pa.placeholder("x", (16,), np.float32)
    prog = pa.compile(x * 2.0 + 1.0, target=args.device, out="device")
    prog(x=xd)
    b.sync()
    rows = [("whole call", per_call(lambda: prog(x=xd)))]
    b.sync()
    rows.append(("check_bindings", per_call(lambda: prog.check_bindings({"x": xd}))))
    exe = prog._exe
    rows.append(("exe.run", per_call(lambda: exe.run({"x": xd}))))
    b.sync()
    if args.device == "cuda":
        launch, fmt, kargs, grid, block = exe._launches[0]
        out = exe.pool.allocate(64)
        rows.append(("pool.allocate + free", per_call(lambda: exe.pool.allocate(64).free())))
        from pycuda._pvt_struct import pack
        rows.append(("pack args", per_call(lambda: pack(fmt, out, xd.gpudata))))
        buf = pack(fmt, out, xd.gpudata)
        rows.append(("_launch_kernel, packed", per_call(
            lambda: launch(grid, block, buf, 0, None))))
        b.sync()
    for name, t in rows:
        print(f"{name:28s} {t * 1e6:6.2f} us")
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(20000):
        prog(x=xd)
    pr.disable()
    b.sync()
    pstats.Stats(pr).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
