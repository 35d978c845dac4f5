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


def _device_prog(b, expr, schedule=None, **kw):
    if schedule:
        kw["schedule"] = schedule
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
    xd = _to_device(b, xv)
    for N in ((4, 16) if not b.quick else (8,)):
        want = hermite_np(xv, N)
        nbytes = xv.nbytes + want.nbytes
        times = {}
        for label, steps in SCHEDULES.items():
            prog = _device_prog(b, hermite_pa(x, N),
                                schedule={"k0_elementwise": steps} if steps else None)
            check(f"hermite {label}", prog(x=xd).get(), want, rtol=2e-4)
            times[label] = median_time(lambda: prog(x=xd), prog.synchronize)
        peers = _hermite_cuda_peers(b, xv, xd, N, want) if b.device == "cuda" else {}
        others = ", ".join(f"{k} {v * 1e6:.1f} us ({nbytes / v / b.copy_bw:.2f})"
                           for k, v in times.items() if k != "row+tile")
        b.row(f"hermite {rows}x{N}, row+tile schedule", times["row+tile"], peers,
              nbytes=nbytes, note=f"polyarray's other schedules: {others}")


def _hermite_cuda_peers(b, xv, xd, N, want):
    import pycuda.driver as drv
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
    prog = _device_prog(b, x.T + 0.0)
    xd = _to_device(b, xv)
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


ALL = [fused_chain, softmax, reductions, matmul, hermite, transpose, compile_and_dispatch,
       opencl_vs_cuda]
QUICK = {"dispatch": [compile_and_dispatch], "schedules": [hermite, transpose, matmul]}
