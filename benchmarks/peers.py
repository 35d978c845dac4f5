"""The peers of every workload: one computation, written once against a
small array namespace (``Ns``), run by each framework that is installed --
NumPy on the CPU, CuPy eager, ``cupy.fuse``, JAX ``jit``, PyTorch eager and
``torch.compile``.  Each peer's first result is checked against NumPy
before it is timed; a peer that fails or disagrees is reported, not timed.

Input sets rotate (``sets`` > 1) when one set would fit in the GPU's L2, so
no implementation reads warm cache lines call after call.
"""
from __future__ import annotations

import time

import numpy as np

from .common import check, device_prog, median_time, rotation, time_ours, to_device


class Ns:
    """The few array functions the workloads use, per framework (polyarray
    included: it has NumPy's names)."""

    def __init__(self, name, mod):
        self.name, self.mod = name, mod

    def exp(self, x):
        return self.mod.exp(x)

    def sum(self, x, axis=None, keepdims=False):
        if self.name == "torch":
            return x.sum() if axis is None else x.sum(dim=axis, keepdim=keepdims)
        return self.mod.sum(x, axis=axis, keepdims=keepdims)

    def max(self, x, axis, keepdims=False):
        if self.name == "torch":
            return self.mod.amax(x, dim=axis, keepdim=keepdims)
        return self.mod.max(x, axis=axis, keepdims=keepdims)

    def dot(self, a, b):
        return a @ b if self.name == "torch" else self.mod.dot(a, b)    # torch.dot is 1-D only


class Framework:
    def __init__(self, name, ns, to_device, to_host, sync, wrap=None):
        self.name, self.ns = name, ns
        self.to_device, self.to_host, self.sync = to_device, to_host, sync
        self.wrap = wrap or (lambda f: f)


def frameworks(gpu):
    """``(available frameworks, {name: why not})``."""
    found, missing = [Framework("numpy", Ns("numpy", np), lambda a: a, np.asarray,
                                lambda: None)], {}
    if not gpu:
        return found, {"gpu peers": "no GPU on this device"}
    try:
        import cupy as cp
        sync = cp.cuda.Device().synchronize
        ns = Ns("cupy", cp)
        found.append(Framework("cupy", ns, cp.asarray, cp.asnumpy, sync))
        found.append(Framework("cupy.fuse", ns, cp.asarray, cp.asnumpy, sync, wrap=cp.fuse))
    except Exception as e:      # noqa: BLE001  (not installed, or no driver)
        missing["cupy"] = f"{type(e).__name__}: {e}"[:120]
    try:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_default_matmul_precision", "highest")   # no TF32
        last = []

        def jsync():
            if last:
                jax.block_until_ready(last[-1])
                last.clear()

        def jit(f):
            g = jax.jit(f)

            def call(*a):
                r = g(*a)
                last[:] = [r]
                return r
            return call
        found.append(Framework("jax.jit", Ns("jax", jnp), jax.device_put, np.asarray, jsync,
                               wrap=jit))
    except Exception as e:      # noqa: BLE001
        missing["jax"] = f"{type(e).__name__}: {e}"[:120]
    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        ns = Ns("torch", torch)

        def tdev(a):
            return torch.from_numpy(np.ascontiguousarray(a)).cuda()

        def thost(t):
            return t.detach().cpu().numpy()
        found.append(Framework("torch", ns, tdev, thost, torch.cuda.synchronize))
        def tcompile(f):
            torch._dynamo.reset()   # the wrappers share a code object: no stale graphs
            return torch.compile(f)
        found.append(Framework("torch.compile", ns, tdev, thost, torch.cuda.synchronize,
                               wrap=tcompile))
    except Exception as e:      # noqa: BLE001
        missing["torch"] = f"{type(e).__name__}: {e}"[:120]
    try:
        from numba import cuda
        if not cuda.is_available():
            raise RuntimeError("numba sees no CUDA device")
        missing["numba"] = "no Numba kernel for this workload (only the chain has one)"
    except Exception as e:      # noqa: BLE001
        missing["numba"] = f"import failed: {type(e).__name__}: {e}"[:120]
    return found, missing


def _positional(fn, ns, n):
    """``fn(ns, ...)`` as a function of exactly ``n`` positional arguments
    (``cupy.fuse`` reads the signature; it takes no ``*args``)."""
    f = [lambda a: fn(ns, a), lambda a, c: fn(ns, a, c), lambda a, c, d: fn(ns, a, c, d),
         lambda a, c, d, e: fn(ns, a, c, d, e)][n - 1]
    f.__name__ = f.__qualname__ = "peer"    # cupy.fuse names its kernel after it
    return f


def numba_chain(b, sets, want):
    """The 10-op chain as a Numba CUDA ufunc, when numba-cuda imports."""
    from numba import cuda, vectorize

    @vectorize(["float32(float32)"], target="cuda")
    def chain(x):
        y = x * 1.5 + 0.5
        y = y * x - 0.25
        y = y * x + 1.0
        y = y * x - 2.0
        return y * x + 3.0
    dev = [cuda.to_device(s[0]) for s in sets]
    out = cuda.device_array_like(dev[0])
    check("numba", chain(dev[0], out=out).copy_to_host(), want)
    nxt = rotation(dev)
    return median_time(lambda: chain(nxt(), out=out), cuda.synchronize)


def run_peers(b, fn, sets, want, rtol=1e-4, only=None, skip=()):
    """Seconds per call of ``fn(ns, *inputs)`` for every framework, over
    the rotating host input ``sets``; first-call seconds go in ``first``."""
    times, notes, first = {}, dict(b.missing), {}
    for fw in b.frameworks:
        if (only and fw.name not in only) or fw.name in skip:
            continue
        try:
            dev = [tuple(fw.to_device(a) for a in s) for s in sets]
            f = fw.wrap(_positional(fn, fw.ns, len(sets[0])))
            t0 = time.perf_counter()
            got = f(*dev[0])
            fw.sync()
            first[fw.name] = time.perf_counter() - t0
            check(f"{fw.name}", fw.to_host(got), want, rtol=rtol)
            nxt = rotation(dev)
            slow = first[fw.name] > 0.5         # CPU NumPy on GPU-sized work
            times[fw.name] = median_time(lambda: f(*nxt()), fw.sync,
                                         **({"repeat": 3, "warmup": 0} if slow else {}))
        except Exception as e:      # noqa: BLE001  (report the peer, keep going)
            notes[fw.name] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:120]
    return times, notes, first


def compare(b, name, expr, names, fn, sets, want, nbytes=None, flops=None, rtol=1e-4,
            note="", **peer_kw):
    """Compile ``expr``, check it and every peer against ``want`` (NumPy on
    ``sets[0]``), time all of them on the same rotating inputs, add a row."""
    prog = device_prog(b, expr)
    got = prog(**{n: to_device(b, a) for n, a in zip(names, sets[0])})
    check(name, got.get(), want, rtol=rtol)
    ours = time_ours(b, prog, names, sets)
    peers, failed, _ = run_peers(b, fn, sets, want, rtol=rtol, **peer_kw)
    kinds = f"{len(prog.kernels)} kernel(s)"
    rot = f", {len(sets)} rotating input sets" if len(sets) > 1 else ""
    return b.row(name, ours, peers, nbytes=nbytes, flops=flops, failed=failed,
                 note=f"{kinds}{rot}{'; ' + note if note else ''}")
