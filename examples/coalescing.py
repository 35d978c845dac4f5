"""Coalescing: the Hermite recurrence, one schedule at a time.

    H0 = 1,  H1 = 2x,  H(k+1) = 2x H(k) - 2k H(k-1),   out[r, :] = H0..H(N-1) at x[r]

A Numba ``guvectorize`` answer computed this with one thread per row: each
thread stores its row's N values, so neighbouring threads store N elements
apart and only part of each memory transaction is used (25% store
efficiency).  Here the same DAG runs under three schedules:

* ``row``: a work-item per row, the row's values stored directly (the
  guvectorize layout);
* ``row+tile``: a work-item per row, the rows of a work-group written into a
  local-memory tile and stored from there by consecutive work-items
  (coalesced);
* ``flat``: polyarray's default, a work-item per output element (coalesced
  stores, but each work-item evaluates the recurrence for its row).

It prints each schedule's loop nest and generated code, checks each result
against NumPy, times them, then lets the autotuner choose.  Runs on the
target that ``POLYARRAY_TARGET`` names (else the best available):

    python3 examples/coalescing.py [--rows 1280000] [--N 4 8 16]
"""
import argparse

import numpy as np

import polyarray as pa
from polyarray.schedules import Layout, StoreThroughLocal, Unroll, WorkGroup
from polyarray.testing import seconds_per_call

import sizing                      # examples/sizing.py: --quick, and small sizes on a CPU

SCHEDULES = {
    "row": [Layout("axes"), WorkGroup(256, "i0"), Unroll("i1")],
    "row+tile": [Layout("axes"), WorkGroup(256, "i0"), Unroll("i1"), StoreThroughLocal()],
    "flat": None,                   # the default schedule
}


def hermite(x, N):
    H = [pa.ones_like(x), 2.0 * x]
    for k in range(1, N - 1):
        H.append(2.0 * x * H[k] - 2.0 * k * H[k - 1])
    return pa.concatenate(H[:N], axis=1)


def hermite_np(xv, N):
    H = [np.ones_like(xv), 2 * xv]
    for k in range(1, N - 1):
        H.append(np.float32(2) * xv * H[k] - np.float32(2 * k) * H[k - 1])
    return np.concatenate(H[:N], axis=1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_280_000)
    ap.add_argument("--N", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--show-code", action="store_true", help="print the full sources")
    args = sizing.parse_args(ap, {"rows": 5000, "N": [4, 6]}, argv, target_option=None)
    target = pa.get_default_target()
    print(f"target: {target}; rows = {args.rows}")
    rng = np.random.default_rng(0)
    xv = rng.uniform(-1, 1, (args.rows, 1)).astype(np.float32)
    x = pa.placeholder("x", (args.rows, 1), np.float32)
    upload = pa.compile(x, target=target, out="device")
    binds = {"x": upload(x=xv)}
    chosen = {}
    for N in args.N:
        out = hermite(x, N)
        want = hermite_np(xv, N)
        nbytes = xv.nbytes + want.nbytes
        print(f"\n== N = {N}: {want.shape} float32, {nbytes / 1e6:.1f} MB moved at least")
        cands = []
        for label, steps in SCHEDULES.items():
            sched = {"k0_elementwise": steps} if steps else None
            prog = pa.compile(out, target=target, out="device", schedule=sched)
            got = prog(**binds).get()
            np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4 * np.abs(want).max())
            t = seconds_per_call(prog, binds, batch=20)
            cands.append(prog.schedule["k0_elementwise"])
            print(f"{label:9s} {t * 1e6:9.1f} us  {nbytes / t / 1e9:7.1f} GB/s   "
                  f"schedule {list(prog.schedule['k0_elementwise'])}")
            if N == args.N[0]:
                print(prog.kernels["k0_elementwise"].loop_nest())
                src = prog.source
                print(src if args.show_code else
                      "  ...\n" + "\n".join(src.strip().splitlines()[-6:]))
        tuned = pa.compile(out, target=target, out="device").tune(
            candidates={"k0_elementwise": cands}, log=lambda line: None)
        print(tuned.tuning_report())
        pick = tuned.schedule["k0_elementwise"]
        chosen[N] = [k for k, v in SCHEDULES.items()
                     if v and tuple(v) == pick] or ["flat"]
        np.testing.assert_allclose(tuned(**binds).get(), want, rtol=2e-4,
                                   atol=2e-4 * np.abs(want).max())
    print("\nautotuning chose:", {N: c[0] for N, c in chosen.items()})


if __name__ == "__main__":
    main()
