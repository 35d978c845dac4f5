"""pa.linalg's library calls against CuPy (cuSOLVER) and NumPy (LAPACK):

    python -m benchmarks.linalg_calls [--target cuda] [--n 4096] [--dtype float64]

Each result is checked against NumPy first; times are ``pa.testing.median_time``
of device-resident calls (``out="device"``, inputs already on the device),
with CuPy's ``cupy.linalg`` in the same process on the same matrix.  The
fraction printed is CuPy's time over polyarray's (1.0: as fast as CuPy)."""
from __future__ import annotations

import argparse

import numpy as np

import polyarray as pa
from polyarray.testing import median_time


def spd(n, dtype, seed=0):
    a = np.random.default_rng(seed).standard_normal((n, n))
    return (a @ a.T / n + np.eye(n)).astype(dtype)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="cuda")
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--dtype", default="float64")
    args = ap.parse_args(argv)
    dt, n = np.dtype(args.dtype), args.n
    a = spd(n, dt)
    b = np.random.default_rng(1).standard_normal((n, 1)).astype(dt)
    x = pa.placeholder("a", a.shape, dt)
    y = pa.placeholder("b", b.shape, dt)
    cases = {"cholesky": (pa.linalg.cholesky(x), np.linalg.cholesky(a), {"a": a}),
             "solve": (pa.linalg.solve(x, y), np.linalg.solve(a, b), {"a": a, "b": b}),
             "inv": (pa.linalg.inv(x), np.linalg.inv(a), {"a": a}),
             "slogdet": (pa.linalg.slogdet(x)[1], np.linalg.slogdet(a)[1], {"a": a}),
             "eigvalsh": (pa.linalg.eigvalsh(x), np.linalg.eigvalsh(a), {"a": a})}
    try:
        import cupy as cp
    except Exception:           # noqa: BLE001
        cp = None
    print(f"{args.target}, n = {n}, {dt.name}")
    for name, (expr, want, binds) in cases.items():
        prog = pa.compile(expr, target=args.target, out="device")
        forms = [k.form for k in prog.kernels.values() if "op" in k.facts]
        dev = {k: pa.compile(pa.placeholder(k, v.shape, v.dtype), target=args.target,
                             out="device")(**{k: v}) for k, v in binds.items()}
        got = prog(**dev)
        got = got.get() if hasattr(got, "get") else np.asarray(got)
        err = np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1.0)
        assert err < (1e-3 if dt == np.float32 else 1e-8), f"{name}: error {err}"
        ours = median_time(lambda: prog(**dev), prog.synchronize, repeat=5, min_time=0.5)
        line = f"{name:9s} polyarray {ours * 1e3:9.3f} ms ({', '.join(forms)})"
        if cp is not None:
            ca = cp.asarray(a)
            cb = cp.asarray(b)
            fn = {"cholesky": lambda: cp.linalg.cholesky(ca),
                  "solve": lambda: cp.linalg.solve(ca, cb),
                  "inv": lambda: cp.linalg.inv(ca),
                  "slogdet": lambda: cp.linalg.slogdet(ca)[1],
                  "eigvalsh": lambda: cp.linalg.eigvalsh(ca)}[name]
            theirs = median_time(fn, cp.cuda.Device().synchronize, repeat=5, min_time=0.5)
            line += f"   cupy {theirs * 1e3:9.3f} ms   cupy/ours {theirs / ours:5.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
