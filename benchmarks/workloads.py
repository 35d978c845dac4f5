"""Benchmark workloads.  Each runs polyarray and its peers on the same
inputs, checks every result against NumPy, then times it."""
from __future__ import annotations

import os
import textwrap
import time

import numpy as np

import polyarray as pa
from .common import (ROOT, check, compile_in_new_processes, device_prog, input_sets,
                     median_time, to_device)
from .peers import Ns, compare, numba_chain


def chain10_pa(x):
    """10 ops: a degree-5 Horner polynomial (5 multiplies, 5 adds)."""
    y = x * 1.5 + 0.5
    for c in (-0.25, 1.0, -2.0, 3.0):
        y = y * x + c
    return y


def chain10_np(x):
    y = x * np.float32(1.5) + np.float32(0.5)
    for c in (-0.25, 1.0, -2.0, 3.0):
        y = y * x + np.float32(c)
    return y


def chain10_np_inplace(x, t):
    np.multiply(x, np.float32(1.5), out=t)
    np.add(t, np.float32(0.5), out=t)
    for c in (-0.25, 1.0, -2.0, 3.0):
        np.multiply(t, x, out=t)
        np.add(t, np.float32(c), out=t)
    return t


def host_overhead(call, sync, n=3000):
    """Host seconds per call when calls are queued back to back (median of
    5 batches); the device catches up at the end of each batch."""
    times = []
    for _ in range(5):
        sync()
        t0 = time.perf_counter()
        for _ in range(n):
            call()
        times.append((time.perf_counter() - t0) / n)
        sync()
    return float(np.median(times))


def _dispatch_peers(n):
    """Host time per call of one small op in CuPy, JAX (jit) and torch."""
    peers = {}
    xv = np.arange(n, dtype=np.float32)
    try:
        import cupy as cp
        xc = cp.asarray(xv)
        peers["cupy op"] = host_overhead(lambda: xc * np.float32(2.0),
                                         cp.cuda.Device().synchronize)
    except Exception:       # noqa: BLE001  (peer not installed or no GPU)
        pass
    try:
        import jax
        import jax.numpy as jnp
        f = jax.jit(lambda v: v * 2.0 + 1.0)
        xj = jnp.asarray(xv)
        f(xj).block_until_ready()
        peers["jax jit"] = host_overhead(lambda: f(xj), lambda: f(xj).block_until_ready())
    except Exception:       # noqa: BLE001
        pass
    try:
        import torch
        xt = torch.from_numpy(xv).cuda()
        peers["torch op"] = host_overhead(lambda: xt * 2.0, torch.cuda.synchronize)
    except Exception:       # noqa: BLE001
        pass
    return peers


def opencl_vs_cuda(b):
    """The same program through both targets, when both are available."""
    from polyarray import targets
    if b.device != "cuda" or not targets.availability("opencl")[0]:
        return
    n = 1 << 26
    xv = b.rng.uniform(-1, 1, n).astype(np.float32)
    x = pa.placeholder("x", (n,), np.float32)
    rows = []
    for expr, label in [(chain10_pa(x), "chain"), (x.sum(), "sum")]:
        times = {}
        for t in ("cuda", "opencl"):
            prog = pa.compile(expr, target=t, out="device")
            if t == "cuda":
                xd = to_device(b, xv)
            else:
                import pyopencl.array as cla
                xd = cla.to_device(targets.get_target("opencl")._device(None)[3], xv)
            check(f"{label} on {t}", prog(x=xd).get(), chain10_np(xv) if label == "chain"
                  else xv.sum(), rtol=1e-3)
            times[t] = median_time(lambda: prog(x=xd), prog.synchronize)
        rows.append(times["opencl"] / times["cuda"])
        b.row(f"9. CUDA vs OpenCL, {label} 2^26", times["cuda"],
              {"opencl (same kernels)": times["opencl"]}, nbytes=None,
              note=f"ratio {times['opencl'] / times['cuda']:.3f}")


def chain10(ns, x):
    """The 10-op chain for every framework (Python scalars stay float32)."""
    y = x * 1.5 + 0.5
    for c in (-0.25, 1.0, -2.0, 3.0):
        y = y * x + c
    return y


def fused_chain(b):
    n = 1 << (22 if b.quick else (26 if b.gpu else 24))
    x = pa.placeholder("x", (n,), np.float32)
    sets = input_sets(b, lambda: (b.rng.uniform(-1, 1, n).astype(np.float32),), 4 * n)
    want = chain10_np(sets[0][0])
    t = np.empty_like(want)
    check("chain10 in-place", chain10_np_inplace(sets[0][0], t), want)
    r = compare(b, f"1. 10-op chain, 2^{n.bit_length() - 1} f32", chain10_pa(x), ["x"],
                chain10, sets, want, nbytes=8 * n)
    if b.gpu and b.device == "cuda":
        try:
            r["peers_s"]["numba cuda"] = numba_chain(b, sets, want)
            r["peers_not_timed"].pop("numba", None)
            best = min(r["peers_s"], key=r["peers_s"].get)
            r["best_peer"], r["ratio_to_best_peer"] = best, r["peers_s"][best] / r["polyarray_s"]
        except Exception as e:      # noqa: BLE001
            r["peers_not_timed"]["numba"] = f"{type(e).__name__}: {e}"[:120]


def softmax_ns(ns, x):
    e = ns.exp(x - ns.max(x, 1, keepdims=True))
    return e / ns.sum(e, 1, keepdims=True)


def softmax(b):
    shape = (1024, 1024) if b.quick else (4096, 1024)
    x = pa.placeholder("x", shape, np.float32)
    sets = input_sets(b, lambda: (b.rng.standard_normal(shape).astype(np.float32),),
                      4 * shape[0] * shape[1])
    want = softmax_ns(Ns("numpy", np), sets[0][0])
    e = pa.exp(x - x.max(axis=1, keepdims=True))
    compare(b, f"2. softmax rows {shape}", e / e.sum(axis=1, keepdims=True), ["x"],
            softmax_ns, sets, want, nbytes=2 * 4 * shape[0] * shape[1])


def reductions(b):
    shape = (2048, 2048) if b.quick else ((8192, 8192) if b.gpu else (4096, 4096))
    x = pa.placeholder("x", shape, np.float32)
    sets = input_sets(b, lambda: (b.rng.uniform(-1, 1, shape).astype(np.float32),),
                      4 * shape[0] * shape[1])
    for label, expr, axis in [("sum all", x.sum(), None), ("sum axis=0", x.sum(axis=0), 0),
                              ("sum axis=1", x.sum(axis=1), 1)]:
        compare(b, f"2. {label} {shape} f32", expr, ["x"],
                lambda ns, v, axis=axis: ns.sum(v, axis), sets,
                sets[0][0].sum(axis=axis), nbytes=4 * shape[0] * shape[1], rtol=1e-3)


_COMPILE_SCRIPT = textwrap.dedent("""
    import json, time, numpy as np, polyarray as pa
    from benchmarks.workloads import chain10_pa
    from polyarray import targets
    targets.get_target("{target}").warm_up()     # device/driver start-up
    x = pa.placeholder("x", (1000, 3), np.float32)
    t0 = time.perf_counter()
    prog = pa.compile(chain10_pa(x).sum(axis=1), target="{target}")
    print(json.dumps({{"seconds": time.perf_counter() - t0,
                      "origin": prog._exe.compiled.origin}}))
""")


def compile_and_dispatch(b):
    # the median of 5 new cache dirs: one run swings 2x on the H100's host
    cold, warm = compile_in_new_processes(_COMPILE_SCRIPT.format(target=b.device), repeat=5)

    def spread(r):
        return f"{min(r['runs']) * 1e3:.1f}-{max(r['runs']) * 1e3:.1f} ms"
    b.row("8. compile chain+sum (8-op): cold", cold["seconds"], {},
          note=f"chain + reduction, new cache dir, after device start-up; "
               f"median of 5, {spread(cold)}")
    b.row("8. compile chain+sum: disk hit", warm["seconds"], {},
          note=f"loopy skipped; device build from the driver's cache; median of 5, "
               f"{spread(warm)}")
    x = pa.placeholder("x", (16,), np.float32)
    xv = np.arange(16, dtype=np.float32)
    prog = device_prog(b, x * 2.0 + 1.0)
    xd = to_device(b, xv)
    check("dispatch", prog(x=xd).get(), xv * 2 + 1)
    ours = host_overhead(lambda: prog(x=xd), prog.synchronize)
    roundtrip = median_time(lambda: prog(x=xd), prog.synchronize, repeat=500)
    prog_host = pa.compile(x * 2.0 + 1.0, target=b.device)
    host = median_time(lambda: prog_host(x=xv), repeat=500)
    npt = median_time(lambda: xv * np.float32(2.0) + np.float32(1.0), repeat=2000)
    peers = {"numpy": npt}
    if b.device == "cuda":
        peers.update(_dispatch_peers(16))
    b.row("7. host time per call, 16 elements", ours, peers,
          note=f"host time per call, no sync; with a sync each call "
               f"{roundtrip * 1e6:.1f} us; numpy in/out {host * 1e6:.1f} us")


def matmul(b):
    n = 512 if (b.quick or not b.gpu) else 4096
    A = pa.placeholder("A", (n, n), np.float32)
    B = pa.placeholder("B", (n, n), np.float32)
    sets = [tuple(b.rng.standard_normal((n, n)).astype(np.float32) for _ in "AB")]
    r = compare(b, f"5. matmul {n}^3 f32", A @ B, ["A", "B"], lambda ns, a, c: ns.dot(a, c),
                sets, sets[0][0] @ sets[0][1], flops=2 * n ** 3, rtol=1e-3,
                skip=("cupy.fuse",), note="peers: cuBLAS (TF32 off) / XLA")
    r["note"] += f"; {2 * n ** 3 / r['polyarray_s'] / 1e12:.1f} TFLOP/s"


_ROW_PER_THREAD_CUDA = r"""
extern "C" __global__ void hermite_rows(float *out, const float *__restrict__ x, int rows)
{   // guvectorize's layout: one thread per row, the row's N values stored directly
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float v = x[r], h0 = 1.0f, h1 = 2.0f * v;
    out[r * NN] = h0;
    if (NN > 1) out[r * NN + 1] = h1;
    for (int k = 1; k < NN - 1; ++k) {
        float h2 = 2.0f * v * h1 - 2.0f * k * h0;
        out[r * NN + k + 1] = h2; h0 = h1; h1 = h2; }
}
"""


def hermite(b):
    """The Hermite recurrence under the example's schedules, beside a
    hand-written one-thread-per-row CUDA kernel (the stand-in for Numba's
    guvectorize, which does not import on the GPU machine) and CuPy eager."""
    import sys as _sys
    _sys.path.insert(0, os.path.join(ROOT, "examples"))
    from coalescing import SCHEDULES, hermite as hermite_pa, hermite_np
    rows = 20000 if b.quick else 1_280_000
    xv = b.rng.uniform(-1, 1, (rows, 1)).astype(np.float32)
    x = pa.placeholder("x", (rows, 1), np.float32)
    xd = to_device(b, xv)
    for N in ((4, 16) if not b.quick else (8,)):
        want = hermite_np(xv, N)
        nbytes = xv.nbytes + want.nbytes
        times = {}
        for label, steps in SCHEDULES.items():
            prog = device_prog(b, hermite_pa(x, N),
                                schedule={"k0_elementwise": steps} if steps else None)
            check(f"hermite {label}", prog(x=xd).get(), want, rtol=2e-4)
            times[label] = median_time(lambda: prog(x=xd), prog.synchronize)
        peers = _hermite_cuda_peers(b, xv, xd, N, want) if b.device == "cuda" else {}
        others = ", ".join(f"{k} {v * 1e6:.1f} us ({nbytes / v / b.copy_bw:.2f})"
                           for k, v in times.items() if k != "row+tile")
        b.row(f"6. hermite {rows}x{N}, row+tile schedule", times["row+tile"], peers,
              nbytes=nbytes, note=f"polyarray's other schedules: {others}")


def _hermite_cuda_peers(b, xv, xd, N, want):
    import pycuda.gpuarray as ga
    from pycuda.compiler import SourceModule
    rows = xv.shape[0]
    fn = SourceModule(_ROW_PER_THREAD_CUDA.replace("NN", str(N)), no_extern_c=True,
                      arch="sm_90").get_function("hermite_rows")
    out = ga.empty((rows, N), np.float32)

    def launch():
        fn(out, xd, np.int32(rows), block=(256, 1, 1), grid=((rows + 255) // 256, 1))
    launch()
    check("hermite hand-written row per thread", out.get(), want, rtol=2e-4)
    peers = {"CUDA row/thread (guvectorize layout)": median_time(launch, b.sync)}
    try:
        import cupy as cp
        xc = cp.asarray(xv)

        def cupy_eager():
            H = [cp.ones_like(xc), 2 * xc]
            for k in range(1, N - 1):
                H.append(2 * xc * H[k] - (2 * k) * H[k - 1])
            return cp.concatenate(H[:N], axis=1)
        check("hermite cupy", cp.asnumpy(cupy_eager()), want, rtol=2e-4)
        peers["cupy eager"] = median_time(cupy_eager, cp.cuda.Device().synchronize)
    except ImportError:
        pass
    return peers


def transpose(b):
    n = 1024 if (b.quick or not b.gpu) else 8192
    xv = b.rng.standard_normal((n, n)).astype(np.float32)
    x = pa.placeholder("x", (n, n), np.float32)
    prog = device_prog(b, x.T + 0.0)
    xd = to_device(b, xv)
    check("transpose", prog(x=xd).get(), xv.T)
    ours = median_time(lambda: prog(x=xd), prog.synchronize)
    peers = {"numpy (copy)": median_time(lambda: np.ascontiguousarray(xv.T))}
    if b.device == "cuda":
        try:
            import cupy as cp
            xc = cp.asarray(xv)
            peers["cupy"] = median_time(lambda: cp.ascontiguousarray(xc.T),
                                        cp.cuda.Device().synchronize)
        except ImportError:
            pass
    b.row(f"transpose {n}^2 f32 (default schedule)", ours, peers, nbytes=2 * xv.nbytes)
