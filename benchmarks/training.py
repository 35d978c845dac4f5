"""Workloads 3, 4 and 8: the gradient expression, logistic regression
trained on the device, and the gradient's compile time."""
from __future__ import annotations

import textwrap
import time

import numpy as np

import polyarray as pa
from .common import check, compile_in_new_processes, to_device
from .peers import Ns, compare


def gradient_ns(ns, x, z, W, h):
    return ns.dot(x.T, ns.dot(-(x - z), W) * h * (1.0 - h))


def gradient_sizes(b):
    return (512, 256, 256) if (b.quick or not b.gpu) else (8192, 4096, 4096)


def gradient(b):
    """grad_W = dot(X.T, dot(-(x - z), W) * h * (1 - h)), X = x."""
    n, nv, nh = gradient_sizes(b)
    names = ["x", "z", "W", "h"]
    shapes = [(n, nv), (n, nv), (nv, nh), (n, nh)]
    ph = [pa.placeholder(k, s, np.float32) for k, s in zip(names, shapes)]
    sets = [tuple(b.rng.uniform(0, 1, s).astype(np.float32) for s in shapes)]
    want = gradient_ns(Ns("numpy", np), *sets[0])
    flops = 2 * n * nv * nh * 2
    compare(b, f"3. gradient n={n} nv={nv} nh={nh}", gradient_ns(Ns("polyarray", pa), *ph),
            names, gradient_ns, sets, want, flops=flops, rtol=1e-3, skip=("cupy.fuse",))


# ---- 4. logistic regression (Theano's tutorial), weights on the device ----

N_SAMPLES, FEATS, STEPS, LR = 400, 784, 10_000, 0.1


def logreg_step(ns, X, Y, w, c):
    """One gradient step of L2-regularized logistic regression."""
    p = 1.0 / (1.0 + ns.exp(-(ns.dot(X, w) + c)))
    d = p - Y
    return w - LR * (ns.dot(X.T, d) / N_SAMPLES + 0.02 * w), c - LR * ns.sum(d) / N_SAMPLES


def logistic_regression(b):
    steps = 200 if b.quick else STEPS
    rng = b.rng
    X = rng.standard_normal((N_SAMPLES, FEATS)).astype(np.float32)
    Y = (rng.random(N_SAMPLES) > 0.5).astype(np.float32)
    w0 = np.zeros(FEATS, np.float32) + 0.01 * rng.standard_normal(FEATS).astype(np.float32)
    c0 = np.float32(0.0)
    Xp, Yp = pa.placeholder("X", X.shape, np.float32), pa.placeholder("Y", Y.shape, np.float32)
    wp, cp_ = pa.placeholder("w", (FEATS,), np.float32), pa.placeholder("c", (), np.float32)
    prog = pa.compile(list(logreg_step(Ns("polyarray", pa), Xp, Yp, wp, cp_)), target=b.device,
                      out="device", **({"device_kind": "gpu"} if b.device == "opencl" else {}))
    # reference: 100 NumPy steps, every implementation must agree on them
    ref_w, ref_c = w0, c0
    for _ in range(100):
        ref_w, ref_c = logreg_step(Ns("numpy", np), X, Y, ref_w, ref_c)

    def ours(k):
        Xd, Yd = to_device(b, X), to_device(b, Y)
        w, c = to_device(b, w0), to_device(b, np.asarray(c0))
        for _ in range(k):
            w, c = prog(X=Xd, Y=Yd, w=w, c=c)
        prog.synchronize()
        return w.get()
    check("logreg polyarray", ours(100), ref_w, rtol=1e-3)
    t0 = time.perf_counter()
    ours(steps)
    t_ours = time.perf_counter() - t0
    peers, failed = {}, dict(b.missing)
    for fw in b.frameworks:
        if fw.name == "cupy.fuse":
            continue
        try:
            step = fw.wrap(lambda X_, Y_, w_, c_, ns=fw.ns: logreg_step(ns, X_, Y_, w_, c_))

            def run(k, fw=fw, step=step):
                Xd, Yd = fw.to_device(X), fw.to_device(Y)
                w, c = fw.to_device(w0), fw.to_device(np.asarray(c0))
                for _ in range(k):
                    w, c = step(Xd, Yd, w, c)
                fw.sync()
                return fw.to_host(w)
            check(f"logreg {fw.name}", run(100), ref_w, rtol=1e-3)
            t0 = time.perf_counter()
            run(steps)
            peers[fw.name] = time.perf_counter() - t0
        except Exception as e:      # noqa: BLE001
            failed[fw.name] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:120]
    b.row(f"4. logistic regression, {steps} steps", t_ours, peers, failed=failed,
          note=f"total seconds; N={N_SAMPLES}, {FEATS} features, weights on the device; "
               f"{len(prog.kernels)} kernel(s) per step")


# ---- 4b. the same loop with shared variables ----

def _logreg_data(b):
    rng = b.rng
    X = rng.standard_normal((N_SAMPLES, FEATS)).astype(np.float32)
    Y = (rng.random(N_SAMPLES) > 0.5).astype(np.float32)
    w0 = (0.01 * rng.standard_normal(FEATS)).astype(np.float32)
    return X, Y, w0, np.float32(0.0)


def logistic_regression_shared(b):
    """Weights as pa.shared variables with updates=: a call per step, and
    prog.repeat(steps) (CUDA graphs on the cuda target); peers: JAX with the
    whole loop in one jit (lax.fori_loop), torch replaying a CUDA graph of a
    step, JAX jit per step."""
    steps = 200 if b.quick else STEPS
    X, Y, w0, c0 = _logreg_data(b)
    ref_w, ref_c = w0, c0
    for _ in range(steps):
        ref_w, ref_c = logreg_step(Ns("numpy", np), X, Y, ref_w, ref_c)
    Xp, Yp = pa.placeholder("X", X.shape, np.float32), pa.placeholder("Y", Y.shape, np.float32)
    w = pa.shared(w0, name="bench_w")
    c = pa.shared(np.asarray(c0), name="bench_c")
    new_w, new_c = logreg_step(Ns("polyarray", pa), Xp, Yp, w, c)
    prog = pa.compile([], updates={w: new_w, c: new_c}, target=b.device, out="device",
                      **({"device_kind": "gpu"} if b.device == "opencl" else {}))
    Xd, Yd = to_device(b, X), to_device(b, Y)

    def per_call():
        for _ in range(steps):
            prog(X=Xd, Y=Yd)
        prog.synchronize()

    def repeated():
        prog.repeat(steps, X=Xd, Y=Yd)
    times = {}
    for name, fn in (("per call", per_call), ("repeat", repeated)):
        w.set_value(w0)
        c.set_value(np.asarray(c0))
        fn()                                        # warm-up, and the check
        check(f"logreg shared ({name})", w.get_value(), ref_w, rtol=2e-3)
        w.set_value(w0)
        t0 = time.perf_counter()
        fn()
        times[name] = time.perf_counter() - t0
    peers, failed = _logreg_loop_peers(b, X, Y, w0, c0, steps, ref_w)
    for name, t in times.items():
        b.row(f"4b. logreg shared, {name}, {steps} steps", t, peers, failed=failed,
              note=f"total seconds; {len(prog.kernels)} kernel(s) per step")


def _logreg_loop_peers(b, X, Y, w0, c0, steps, ref_w):
    peers, failed = {}, {}
    if not b.gpu:
        return peers, {"jax/torch": "GPU peers only (CUDA device)"}
    try:
        import jax
        import jax.numpy as jnp
        ns = Ns("jax", jnp)

        @jax.jit
        def loop(X_, Y_, w_, c_):
            return jax.lax.fori_loop(0, steps, lambda i, wc: logreg_step(ns, X_, Y_, *wc),
                                     (w_, c_))
        args = [jax.device_put(a) for a in (X, Y, w0, np.asarray(c0))]
        check("logreg jax fori_loop", np.asarray(loop(*args)[0]), ref_w, rtol=2e-3)
        t0 = time.perf_counter()
        loop(*args)[0].block_until_ready()
        peers["jax fori_loop"] = time.perf_counter() - t0
    except Exception as e:      # noqa: BLE001
        failed["jax fori_loop"] = f"{type(e).__name__}: {e}"[:120]
    try:
        import torch
        ns = Ns("torch", torch)
        Xt, Yt = (torch.from_numpy(a).cuda() for a in (X, Y))
        wt, ct = torch.from_numpy(w0).cuda(), torch.tensor(c0).cuda()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                nw, nc = logreg_step(ns, Xt, Yt, wt, ct)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            nw, nc = logreg_step(ns, Xt, Yt, wt, ct)
            wt.copy_(nw)
            ct.copy_(nc)

        def run():
            wt.copy_(torch.from_numpy(w0).cuda())
            ct.fill_(float(c0))
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(steps):
                g.replay()
            torch.cuda.synchronize()
            return time.perf_counter() - t0
        run()
        check("logreg torch graph", wt.cpu().numpy(), ref_w, rtol=2e-3)
        peers["torch cuda graph"] = run()
    except Exception as e:      # noqa: BLE001
        failed["torch cuda graph"] = f"{type(e).__name__}: {e}"[:120]
    return peers, failed


# ---- 8. compile time of workload 3 ----

_COMPILE_GRADIENT = textwrap.dedent("""
    import json, time, numpy as np, polyarray as pa
    from benchmarks.training import gradient_ns
    from benchmarks.peers import Ns
    from polyarray import targets
    targets.get_target("{target}").warm_up()     # device/driver start-up
    n, nv, nh = {sizes}
    ph = [pa.placeholder(k, s, np.float32)
          for k, s in zip("xzWh", [(n, nv), (n, nv), (nv, nh), (n, nh)])]
    t0 = time.perf_counter()
    prog = pa.compile(gradient_ns(Ns("polyarray", pa), *ph), target="{target}"{opts})
    print(json.dumps({{"seconds": time.perf_counter() - t0,
                      "origin": prog._exe.compiled.origin}}))
""")


def compile_gradient(b):
    opts = ', device_kind="gpu"' if b.device == "opencl" else ""
    cold, warm = compile_in_new_processes(
        _COMPILE_GRADIENT.format(target=b.device, sizes=gradient_sizes(b), opts=opts))
    b.row("8. compile gradient (w3): cold", cold["seconds"], {},
          note="new process, empty cache dir, after device start-up")
    b.row("8. compile gradient (w3): disk hit", warm["seconds"], {},
          note="new process, same cache dir")
