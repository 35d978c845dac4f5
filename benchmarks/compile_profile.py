"""Where a compile's time goes, by stage.

    python -m benchmarks.compile_profile [--target cuda|opencl] [--ops 10 200 2000]
                                         [--cprofile N]

The workload is the issue's chain: every node is used twice
(``a = vals[-1]; b = vals[-3]``, then ``sin(a) * 0.5 + b`` or
``exp(-a * a) - b * 0.25``, alternating) on 4096 float32.  Each size runs
in a new process with an empty cache directory, and the first call is
included.  The stages are:

* frontend: building the DAG;
* plan: materialization and fusion passes;
* kernels: policy, forms, schedules;
* codegen: loopy's merge, preprocessing and code generation;
* device build: the OpenCL build, or NVRTC/nvcc at the first CUDA call.
  Without a GPU, the cubin for an H100 (``sm_90``) where NVRTC or nvcc is
  found ("cubin (nvcc, no GPU)"), else CUDA source generation alone ("other":
  caches, bookkeeping);
* first call: the rest of the first call, with uploads and launches.

``--cprofile N`` also prints the N functions with the most time of their
own for the largest size.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_SCRIPT = r"""
import json, sys, time, numpy as np
t_start = time.perf_counter()
import polyarray as pa
from polyarray import targets
target, n_ops, prof = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ok, why = targets.availability(target)
run = ok                        # cuda without a GPU: the source and its cubin only
if target != "cuda" or ok:
    targets.get_target(target).warm_up()
t_import = time.perf_counter() - t_start

from benchmarks.compile_profile import chain

if prof:
    import cProfile, pstats, io
    pr = cProfile.Profile(); pr.enable()
t0 = time.perf_counter()
out = chain(n_ops)
t1 = time.perf_counter()
prog = pa.compile(out, target=target)
t2 = time.perf_counter()
built = None
if run:
    prog(x=np.linspace(-1, 1, 4096, dtype=np.float32))
elif target == "cuda":          # no GPU: the cubin for an H100 (sm_90), where a compiler is
    from polyarray.targets.cuda import compiler as cuda_compiler
    from polyarray.targets.cuda.build import build_cubins
    try:
        built = cuda_compiler.compiler_for(prog.source).name
    except cuda_compiler.CudaCompileError:      # neither NVRTC nor nvcc here
        built = None
    if built:
        build_cubins(prog.source, "sm_90")      # a refused source fails the benchmark
t3 = time.perf_counter()
if prof:
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(prof)
    print(s.getvalue(), file=sys.stderr)
lowered = prog._exe.compiled.lowered
stages = dict(lowered.stages or {})
first = t3 - t2
if target == "cuda" and run:
    # nvcc runs at the first call; the build is the module's (cuda.build_module logs it)
    stages["device build + first call"] = first
else:       # OpenCL builds in compile; CUDA without a GPU builds nothing
    rest = (t2 - t1) - sum(stages.values())
    stages["device build" if target == "opencl" else "other"] = rest
    if built:
        stages[f"cubin ({built}, no GPU)"] = first
    else:
        stages["first call"] = first
print(json.dumps({"ops": n_ops, "frontend": t1 - t0, "compile": t2 - t1, "first_call": first,
                  "total": t3 - t0, "stages": stages, "kernels": len(prog.kernels),
                  "source_kb": len(prog.source) / 1024, "ran": run, "built": built,
                  "origin": prog._exe.compiled.origin, "import_and_device": t_import}))
"""


def chain(n):
    """The issue's chain of ``n`` ops on 4096 float32, every node used twice."""
    import numpy as np
    import polyarray as pa
    x = pa.placeholder("x", (4096,), np.float32)
    vals = [x, pa.sin(x), pa.cos(x)]
    for k in range(n):
        a, b = vals[-1], vals[-3]
        vals.append(pa.sin(a) * 0.5 + b if k % 2 == 0 else pa.exp(-a * a) - b * 0.25)
    return vals[-1]


def measure(target, n_ops, cprofile=0):
    """One cold compile of the chain of ``n_ops`` in a new process."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, POLYARRAY_CACHE_DIR=d,
                   PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
        proc = subprocess.run([sys.executable, "-c", _SCRIPT, target, str(n_ops), str(cprofile)],
                              env=env, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    if cprofile:
        print(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


_PEER_SCRIPT = r"""
import json, os, sys, time
peer, n = sys.argv[1], int(sys.argv[2])
import numpy as np
xv = np.linspace(-1, 1, 4096, dtype=np.float32)


def chain(ns, x):
    vals = [x, ns.sin(x), ns.cos(x)]
    for k in range(n):
        a, b = vals[-1], vals[-3]
        vals.append(ns.sin(a) * 0.5 + b if k % 2 == 0 else ns.exp(-a * a) - b * 0.25)
    return vals[-1]


if peer == "jax":
    import jax, jax.numpy as jnp
    x = jax.device_put(xv); x.block_until_ready()
    t0 = time.perf_counter()
    jax.jit(lambda x: chain(jnp, x))(x).block_until_ready()
else:
    import torch
    x = torch.from_numpy(xv).cuda(); torch.cuda.synchronize()
    t0 = time.perf_counter()
    torch.compile(lambda x: chain(torch, x))(x); torch.cuda.synchronize()
print(json.dumps({"seconds": time.perf_counter() - t0}))
"""


def peer_compile(peer, n_ops, timeout):
    """Seconds of a peer's first call of the chain (tracing, compiling and
    running; after its import and device start-up) in a new process with
    empty caches, or None past ``timeout`` (or if it does not import)."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=d, JAX_COMPILATION_CACHE_DIR=d,
                   TRITON_CACHE_DIR=d)
        try:
            proc = subprocess.run([sys.executable, "-c", _PEER_SCRIPT, peer, str(n_ops)],
                                  env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
    if proc.returncode:
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]


def compile_rows(b, sizes=None, peer_timeout=120.0):
    """``python -m benchmarks --only compile``: the chain compiled cold in a new
    process (first call included, after import and device start-up) at
    several sizes, with JAX ``jit`` and ``torch.compile`` on the same chain
    (on CUDA, where they run) measured in the same run."""
    target = b.device
    sizes = sizes or ([10, 200] if b.quick else [10, 200, 2000])
    per_op = {}
    for n in sizes:
        r = measure(target, n)
        peers, failed = {}, {}
        if target == "cuda" and r["ran"]:
            for peer in ("jax", "torch.compile"):
                s = peer_compile("jax" if peer == "jax" else "torch", n, peer_timeout)
                if s is None:
                    failed[peer] = f"over {peer_timeout:.0f} s or failed"
                else:
                    peers[peer] = s
        per_op[n] = r["total"] / n
        slow = max(r["stages"], key=r["stages"].get)
        b.row(f"18. compile chain {n} ops: cold", r["total"], peers, failed=failed,
              note=f"{r['kernels']} kernel(s), {r['source_kb']:.0f} KB; largest stage "
                   f"{slow} {r['stages'][slow]:.2f} s"
                   + ("" if r["ran"] else f"; no GPU: CUDA source and {r['built']} cubin"
                      if r.get("built") else "; no GPU: CUDA source only"))
    if len(sizes) > 1:
        lo, hi = min(sizes), max(sizes)
        mid = sorted(sizes)[-2]
        print(f"compile: per-op cost at {hi} ops is {per_op[hi] / per_op[mid]:.2f}x "
              f"that at {mid} ops (goal <= 1.2x; {lo} ops: {per_op[lo] * 1e3:.1f} ms/op)")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.compile_profile",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="cuda", choices=["cuda", "opencl"])
    ap.add_argument("--ops", type=int, nargs="+", default=[10, 200, 2000])
    ap.add_argument("--cprofile", type=int, default=0,
                    help="print this many functions of the largest size's profile")
    args = ap.parse_args(argv)
    rows = [measure(args.target, n, args.cprofile if n == max(args.ops) else 0)
            for n in args.ops]
    names = list(dict.fromkeys(k for r in rows for k in r["stages"]))
    print(f"target {args.target}; a new process and an empty cache dir per size; seconds")
    print(f"{'ops':>6s} {'total':>8s} {'frontend':>9s} " + " ".join(f"{n:>12s}" for n in names)
          + f" {'kernels':>8s} {'source KB':>10s} {'per op ms':>10s}")
    for r in rows:
        print(f"{r['ops']:6d} {r['total']:8.3f} {r['frontend']:9.3f} "
              + " ".join(f"{r['stages'].get(n, 0.0):12.3f}" for n in names)
              + f" {r['kernels']:8d} {r['source_kb']:10.1f} {r['total'] / r['ops'] * 1e3:10.2f}")
    if not rows[0]["ran"]:
        print("(no GPU: CUDA source generation"
              + (f" and the {rows[0]['built']} build for sm_90, no call)" if rows[0].get("built")
                 else " only, no device compiler, no call)"))
    return rows


if __name__ == "__main__":
    main()
