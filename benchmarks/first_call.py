"""First-call time of traced Python loops: ``python -m benchmarks.first_call``.

A time loop written in NumPy and traced by ``pa.jit`` unrolls; what a user
waits for on the first call is tracing, planning, code generation and the
device build.  Each case runs in a new process with an empty polyarray
cache, after a warm-up program (imports, device context and the compiler
loaded: the cost of the loop alone), and prints the first call and a later
call beside JAX's ``jax.jit`` of the same code (also after its own warm-up),
measured in the same run.  The results are checked against NumPy first.

Cases:

* ``heat2d``: 50 steps of a 2-D heat equation on 2048^2 float32 written with
  ``np.roll`` (the same source runs under NumPy, polyarray and jax.numpy).
* ``jacobi_1d``: NPBench's jacobi_1d at preset S (800 steps of 3200 float64,
  written in place with slices: polyarray only, JAX cannot write in place).
* ``backprop``: the weight gradients of a two-layer tanh network, five
  matrix products (x 8192 x 1024, hidden 512, float32; JAX at "highest"
  matmul precision, as NumPy).

``python -m benchmarks --only first`` prints backprop and heat2d as rows of
the suite, JAX's first call as the peer.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = r'''
import json, os, sys, time
import numpy as np
case, who, target = sys.argv[1:4]

def heat2d(u, steps):
    for _ in range(steps):
        lap = (xp.roll(u, 1, 0) + xp.roll(u, -1, 0) + xp.roll(u, 1, 1)
               + xp.roll(u, -1, 1) - 4 * u)
        u = u + 0.1 * lap
    return u

def jacobi_1d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])

def backprop(x, t, W1, W2):
    h = xp.tanh(x @ W1)
    dy = (h @ W2 - t) / x.shape[0]
    dh = (dy @ W2.T) * (1 - h * h)
    return x.T @ dh, h.T @ dy

if case == "backprop":
    rng = np.random.default_rng(0)
    n, d, hidden = 8192, 1024, 512
    args = (rng.standard_normal((n, d), dtype=np.float32),
            rng.standard_normal((n, d), dtype=np.float32),
            rng.standard_normal((d, hidden), dtype=np.float32) / 32,
            rng.standard_normal((hidden, d), dtype=np.float32) / 32)
    xp = np
    want = backprop(*args)
    fn = backprop
elif case == "heat2d":
    n, steps = 2048, 50
    u0 = np.random.default_rng(0).random((n, n), dtype=np.float32)
    xp = np
    want = heat2d(u0, steps)
    fn, args = heat2d, (u0, steps)
else:
    n, steps = 3200, 800
    A0 = np.fromfunction(lambda i: (i + 2) / n, (n,), dtype=np.float64)
    B0 = np.fromfunction(lambda i: (i + 3) / n, (n,), dtype=np.float64)
    wa, wb = A0.copy(), B0.copy(); jacobi_1d(steps, wa, wb)
    want = wa
    fn, args = jacobi_1d, None

def fetch(r):
    return tuple(np.asarray(v) for v in r) if isinstance(r, (tuple, list)) else np.asarray(r)

def warm_small(jit, lib):
    x = np.ones(8, np.float32)
    np.asarray(jit(lambda a: lib.sin(a) + 1)(x))

if who == "polyarray":
    import polyarray as pa
    xp = pa
    warm_small(lambda f: pa.jit(f, target=target), pa)
    if case in ("heat2d", "backprop"):
        f = pa.jit(heat2d, target=target, static_argnums=(1,)) if case == "heat2d" else \
            pa.jit(backprop, target=target)
        t0 = time.perf_counter(); got = fetch(f(*args)); first = time.perf_counter() - t0
        t0 = time.perf_counter(); fetch(f(*args)); later = time.perf_counter() - t0
    else:
        f = pa.jit(jacobi_1d, target=target)
        A, B = A0.copy(), B0.copy()
        t0 = time.perf_counter(); f(steps, A, B); first = time.perf_counter() - t0
        got = A
        A, B = A0.copy(), B0.copy()
        t0 = time.perf_counter(); f(steps, A, B); later = time.perf_counter() - t0
else:
    import jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_default_matmul_precision", "highest")
    xp = jnp
    warm_small(jax.jit, jnp)
    f = jax.jit(heat2d, static_argnums=(1,)) if case == "heat2d" else jax.jit(backprop)
    t0 = time.perf_counter(); got = fetch(f(*args)); first = time.perf_counter() - t0
    t0 = time.perf_counter(); fetch(f(*args)); later = time.perf_counter() - t0

pairs = zip(got, want) if case == "backprop" else [(got, want)]
ok = all(np.allclose(np.asarray(g), w, rtol=1e-3 if case == "backprop" else 1e-4, atol=1e-4)
         for g, w in pairs)
print(json.dumps({"case": case, "who": who, "first_s": first, "later_s": later, "ok": ok}))
'''


def run_case(case, who, target, timeout):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, POLYARRAY_CACHE_DIR=cache)
        try:
            r = subprocess.run([sys.executable, "-c", SCRIPT, case, who, target],
                               capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return {"case": case, "who": who, "error": f"timeout {timeout} s"}
    if r.returncode:
        return {"case": case, "who": who, "error": r.stderr.strip().splitlines()[-1:]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def first_calls(b):
    """The suite's rows (``python -m benchmarks --only first``): the first
    call of backprop and heat2d in a new process beside JAX's, where JAX is
    installed (its first call is the peer; a missing peer is no row's
    failure)."""
    from .common import compile_bytecode
    compile_bytecode()
    for case, label in [("backprop", "19. first call: backprop (5 products)"),
                        ("heat2d", "19. first call: heat2d (50 steps)")]:
        ours = run_case(case, "polyarray", b.device, 300)
        if "error" in ours or not ours["ok"]:
            raise RuntimeError(f"{case}: {ours.get('error', 'result differs from NumPy')}")
        jax = run_case(case, "jax", b.device, 300)
        peers = {"jax.jit": jax["first_s"]} if "error" not in jax and jax["ok"] else {}
        failed = {} if peers else {"jax.jit": str(jax.get("error", "wrong result"))[:80]}
        b.row(label, ours["first_s"], peers, failed=failed,
              note=f"pa.jit in a new process, empty cache, after a warm-up program; later calls "
                   f"{ours['later_s'] * 1e3:.2f} ms")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="cuda", choices=["numpy", "opencl", "cuda"])
    ap.add_argument("--cases", default="heat2d,jacobi_1d")
    ap.add_argument("--peers", default="jax")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    from .common import compile_bytecode
    compile_bytecode()
    rows = []
    for case in a.cases.split(","):
        whos = ["polyarray"] + ([p for p in a.peers.split(",") if p]
                                if case in ("heat2d", "backprop") else [])
        for who in whos:
            row = run_case(case, who, a.target, a.timeout)
            rows.append(row)
            if "error" in row:
                print(f"{case:10s} {who:10s} ERROR {row['error']}", flush=True)
            else:
                print(f"{case:10s} {who:10s} first call {row['first_s']:8.3f} s   "
                      f"later {row['later_s'] * 1e3:9.2f} ms   correct={row['ok']}", flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"target": a.target, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
