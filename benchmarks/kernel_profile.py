"""Run benchmark workloads' kernels, ours and the peers', a few times each,
for a profiler to measure per kernel.

    ncu --csv --metrics gpu__time_duration.sum,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,\
sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread \
        python -m benchmarks.kernel_profile --workload sum,gradient,softmax

gives each kernel's device time, DRAM and SM throughput, with no host
launch overhead in the numbers.  Peers (CuPy, torch) run the same
operations on the same inputs where they are installed.  ``--table``
prints polyarray's own profile of each program instead (``prog.profile``:
CUDA events, bytes, estimated flops, fraction of the measured hardware,
and the kernel times' sum against a synchronized call), no ncu needed.
"""
import argparse

import numpy as np

import polyarray as pa
from .workloads import chain10_pa

REPEAT = 3
TABLE = False       # --table: print prog.profile() of each of our programs


def _peer(name, fn, sync):
    try:
        for _ in range(REPEAT):
            fn()
        sync()
    except Exception as e:      # noqa: BLE001  (peer missing: say so, keep going)
        print(f"peer {name} not run: {type(e).__name__}: {e}")


def _ours(expr, binds):
    prog = pa.compile(expr, target="cuda", out="device")
    for _ in range(REPEAT):
        prog(**binds)
    prog.synchronize()
    if TABLE:
        print(prog.profile(**binds))
        return
    print("ours:", ", ".join(f"{k} ({v.form}, grid {v.gsize} x {v.lsize})"
                             for k, v in prog.kernels.items()))


def chain(rng, ga):
    xv = rng.uniform(-1, 1, 1 << 26).astype(np.float32)
    _ours(chain10_pa(pa.placeholder("x", xv.shape, np.float32)), {"x": ga.to_gpu(xv)})


def sum_(rng, ga):
    xv = rng.uniform(-1, 1, (8192, 8192)).astype(np.float32)
    m = pa.placeholder("m", xv.shape, np.float32)
    md = ga.to_gpu(xv)
    for expr in (m.sum(), m.sum(axis=0), m.sum(axis=1)):
        _ours(expr, {"m": md})

    def cupy():
        import cupy as cp
        mc = cp.asarray(xv)
        for _ in range(REPEAT):
            mc.sum(), mc.sum(axis=0), mc.sum(axis=1)
        cp.cuda.Device().synchronize()
    _peer("cupy", cupy, lambda: None)


def softmax(rng, ga):
    xv = rng.standard_normal((4096, 1024)).astype(np.float32)
    s = pa.placeholder("s", xv.shape, np.float32)
    e = pa.exp(s - s.max(axis=1, keepdims=True))
    _ours(e / e.sum(axis=1, keepdims=True), {"s": ga.to_gpu(xv)})

    def torch_():
        import torch
        t = torch.from_numpy(xv).cuda()
        for _ in range(REPEAT):
            torch.softmax(t, dim=1)
        torch.cuda.synchronize()
    _peer("torch", torch_, lambda: None)


def gradient(rng, ga):
    from .peers import Ns
    from .training import gradient_ns
    n, nv, nh = 8192, 4096, 4096
    arrays = {"x": rng.uniform(0, 1, (n, nv)), "z": rng.uniform(0, 1, (n, nv)),
              "W": rng.uniform(0, 1, (nv, nh)), "h": rng.uniform(0, 1, (n, nh))}
    arrays = {k: v.astype(np.float32) for k, v in arrays.items()}
    ph = {k: pa.placeholder(k, v.shape, np.float32) for k, v in arrays.items()}
    _ours(gradient_ns(Ns("polyarray", pa), **ph), {k: ga.to_gpu(v) for k, v in arrays.items()})

    def torch_():
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        t = {k: torch.from_numpy(v).cuda() for k, v in arrays.items()}
        ns = Ns("torch", torch)
        for _ in range(REPEAT):
            gradient_ns(ns, **t)
        torch.cuda.synchronize()
    _peer("torch", torch_, lambda: None)


WORKLOADS = {"chain": chain, "sum": sum_, "softmax": softmax, "gradient": gradient}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.kernel_profile")
    ap.add_argument("--workload", default="chain,sum,softmax",
                    help="comma-separated: " + ", ".join(WORKLOADS))
    ap.add_argument("--table", action="store_true",
                    help="print prog.profile() tables (no profiler needed)")
    args = ap.parse_args(argv)
    global TABLE
    TABLE = args.table
    import pycuda.autoprimaryctx  # noqa: F401
    import pycuda.gpuarray as ga
    rng = np.random.default_rng(0)
    for w in args.workload.split(","):
        print(f"-- {w}")
        WORKLOADS[w](rng, ga)


if __name__ == "__main__":
    main()
