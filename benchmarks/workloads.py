"""Benchmark workloads.  Each runs polyarray and its peers on the same
inputs, checks every result against NumPy, then times it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

import polyarray as pa
from .__main__ import check, median_time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def _device_prog(b, expr, **kw):
    return pa.compile(expr, target=b.device, out="device", **kw)


def _to_device(b, arr):
    if b.device == "cuda":
        import pycuda.gpuarray as ga
        return ga.to_gpu(arr)
    import pyopencl.array as cla
    return cla.to_device(b.queue, arr)


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
    import targets
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
                xd = _to_device(b, xv)
            else:
                import pyopencl.array as cla
                xd = cla.to_device(targets.get_target("opencl")._device(None)[3], xv)
            check(f"{label} on {t}", prog(x=xd).get(), chain10_np(xv) if label == "chain"
                  else xv.sum(), rtol=1e-3)
            times[t] = median_time(lambda: prog(x=xd), prog.synchronize)
        rows.append(times["opencl"] / times["cuda"])
        b.row(f"OpenCL/CUDA time ratio, {label} 2^26", times["cuda"],
              {"opencl (same kernels)": times["opencl"]}, nbytes=None,
              note=f"ratio {times['opencl'] / times['cuda']:.3f}")


def fused_chain(b):
    n = 1 << (22 if b.quick else (26 if b.gpu else 24))
    xv = b.rng.uniform(-1, 1, n).astype(np.float32)
    x = pa.placeholder("x", (n,), np.float32)
    prog = _device_prog(b, chain10_pa(x))
    xd = _to_device(b, xv)
    prog_host = pa.compile(chain10_pa(x), target=b.device)
    want = chain10_np(xv)
    check("chain10", prog(x=xd).get(), want)
    t = np.empty_like(xv)
    check("chain10 in-place", chain10_np_inplace(xv, t), want)
    ours = median_time(lambda: prog(x=xd), prog.synchronize)
    ours_host = median_time(lambda: prog_host(x=xv))
    peers = {"numpy": median_time(lambda: chain10_np(xv)),
             "numpy out=": median_time(lambda: chain10_np_inplace(xv, t))}
    b.row(f"10-op chain, 2^{n.bit_length() - 1} f32", ours, peers, nbytes=8 * n,
          note=f"(with host copies in/out: {ours_host * 1e3:.2f} ms)")


def softmax(b):
    shape = (1024, 1024) if b.quick else (4096, 1024)
    xv = b.rng.standard_normal(shape).astype(np.float32)
    x = pa.placeholder("x", shape, np.float32)
    e = pa.exp(x - x.max(axis=1, keepdims=True))
    prog = _device_prog(b, e / e.sum(axis=1, keepdims=True))
    xd = _to_device(b, xv)

    def np_softmax(v):
        ev = np.exp(v - v.max(axis=1, keepdims=True))
        return ev / ev.sum(axis=1, keepdims=True)
    check("softmax", prog(x=xd).get(), np_softmax(xv))
    ours = median_time(lambda: prog(x=xd), prog.synchronize)
    b.row(f"softmax rows {shape}", ours, {"numpy": median_time(lambda: np_softmax(xv))},
          nbytes=2 * 4 * xv.size, note=f"{len(prog.kernels)} kernels")


def reductions(b):
    shape = (2048, 2048) if b.quick else ((8192, 8192) if b.gpu else (4096, 4096))
    xv = b.rng.uniform(-1, 1, shape).astype(np.float32)
    x = pa.placeholder("x", shape, np.float32)
    xd = _to_device(b, xv)
    for label, expr, ref in [("sum all", x.sum(), lambda: xv.sum()),
                             ("sum axis=0", x.sum(axis=0), lambda: xv.sum(axis=0)),
                             ("sum axis=1", x.sum(axis=1), lambda: xv.sum(axis=1))]:
        prog = _device_prog(b, expr)
        check(label, prog(x=xd).get(), ref(), rtol=1e-3)
        ours = median_time(lambda: prog(x=xd), prog.synchronize)
        b.row(f"{label} {shape} f32", ours, {"numpy": median_time(ref)},
              nbytes=4 * xv.size)


_COMPILE_SCRIPT = textwrap.dedent("""
    import json, time, numpy as np, polyarray as pa
    from benchmarks.workloads import chain10_pa
    import targets
    targets.get_target("{target}").warm_up()     # device/driver start-up
    x = pa.placeholder("x", (1000, 3), np.float32)
    t0 = time.perf_counter()
    prog = pa.compile(chain10_pa(x).sum(axis=1), target="{target}")
    print(json.dumps({{"seconds": time.perf_counter() - t0,
                      "origin": prog._exe.compiled.origin}}))
""")


def compile_and_dispatch(b):
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, POLYARRAY_CACHE_DIR=d,
                   PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
        runs = []
        for _ in range(2):
            r = subprocess.run([sys.executable, "-c", _COMPILE_SCRIPT.format(target=b.device)],
                               env=env, capture_output=True, text=True, check=True)
            runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    assert cold["origin"] == "built" and warm["origin"] == "disk", runs
    b.row("compile: cold (lower + build)", cold["seconds"], {},
          note="chain + reduction, new cache dir, after device start-up")
    b.row("compile: disk-cache hit, new proc", warm["seconds"], {},
          note="loopy skipped; device build from the driver's cache")
    x = pa.placeholder("x", (16,), np.float32)
    xv = np.arange(16, dtype=np.float32)
    prog = _device_prog(b, x * 2.0 + 1.0)
    xd = _to_device(b, xv)
    check("dispatch", prog(x=xd).get(), xv * 2 + 1)
    ours = host_overhead(lambda: prog(x=xd), prog.synchronize)
    roundtrip = median_time(lambda: prog(x=xd), prog.synchronize, repeat=500)
    prog_host = pa.compile(x * 2.0 + 1.0, target=b.device)
    host = median_time(lambda: prog_host(x=xv), repeat=500)
    npt = median_time(lambda: xv * np.float32(2.0) + np.float32(1.0), repeat=2000)
    peers = {"numpy": npt}
    if b.device == "cuda":
        peers.update(_dispatch_peers(16))
    b.row("per call, 16 elems, device in/out", ours, peers,
          note=f"host time per call, no sync; with a sync each call "
               f"{roundtrip * 1e6:.1f} us; numpy in/out {host * 1e6:.1f} us")


def _torch_sgemm(n):
    """cuBLAS SGEMM through torch with TF32 off, when a CUDA GPU is visible."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    return median_time(lambda: a @ b, torch.cuda.synchronize)


def matmul(b):
    n = 512 if (b.quick or not b.gpu) else 4096
    av = b.rng.standard_normal((n, n)).astype(np.float32)
    bv = b.rng.standard_normal((n, n)).astype(np.float32)
    A = pa.placeholder("A", (n, n), np.float32)
    B = pa.placeholder("B", (n, n), np.float32)
    prog = _device_prog(b, A @ B)
    ad, bd = _to_device(b, av), _to_device(b, bv)
    check("matmul", prog(A=ad, B=bd).get(), av @ bv, rtol=1e-3)
    ours = median_time(lambda: prog(A=ad, B=bd), prog.synchronize)
    peers = {"numpy": median_time(lambda: av @ bv)}
    cublas = _torch_sgemm(n) if b.gpu else None
    if cublas:
        peers["cuBLAS (torch, no TF32)"] = cublas
    kinds = ",".join(k.kind for k in prog.kernels.values())
    b.row(f"matmul {n}^3 f32", ours, peers,
          note=f"{2 * n ** 3 / ours / 1e12:.2f} TFLOP/s ({kinds})")


ALL = [fused_chain, softmax, reductions, matmul, compile_and_dispatch, opencl_vs_cuda]
QUICK = {"dispatch": [compile_and_dispatch]}
