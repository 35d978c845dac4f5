"""What every benchmark module shares: the result check (``pa.testing``'s
comparer, with a benchmark's tolerance), the timer (``pa.testing.median_time``),
moving inputs to the device, rotating input sets and compiling in fresh
processes.  It imports no other benchmark module."""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile

import polyarray as pa
from polyarray.testing import allclose, median_time      # noqa: F401  (re-exported)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def check(name, got, want, rtol=1e-4):
    """Raise unless ``got`` matches NumPy's ``want`` to ``rtol`` (relative to
    the largest value): a wrong answer is never timed."""
    if not allclose(got, want, rtol=rtol):
        raise AssertionError(f"{name}: result differs from NumPy; not timing it")


def device_prog(b, expr, schedule=None, **kw):
    if schedule:
        kw["schedule"] = schedule
    return pa.compile(expr, target=b.device, out="device", **kw)


def to_device(b, arr):
    if b.device == "cuda":
        import pycuda.gpuarray as ga
        return ga.to_gpu(arr)
    import pyopencl.array as cla
    return cla.to_device(b.queue, arr)


def rotation(sets):
    """A callable returning the next input set each call (L2 rotation)."""
    cyc = itertools.cycle(sets)
    return lambda: next(cyc)


ROTATE_BYTES = 256 << 20      # input sets rotate until they span this (H100 L2: 50 MB)


def input_sets(b, make, nbytes):
    """Fresh random input sets, as many as it takes to span ROTATE_BYTES on
    a GPU (one on a CPU), so no call reads the previous call's cache lines."""
    k = 1 if not b.gpu else max(1, -(-ROTATE_BYTES // max(nbytes, 1)))
    return [make() for _ in range(min(k, 32))]


def time_ours(b, prog, names, sets):
    """Seconds per call of ``prog`` over the rotating input sets."""
    dev = [{n: to_device(b, a) for n, a in zip(names, s)} for s in sets]
    nxt = rotation(dev)
    return median_time(lambda: prog(**nxt()), prog.synchronize)


def compile_bytecode():
    """Compile polyarray's bytecode, as ``pip install`` does, before timing
    new processes: one that may not write it (``PYTHONDONTWRITEBYTECODE``)
    would otherwise compile each module it imports while timed."""
    import compileall
    for folder in ("polyarray", "codegen", "targets"):
        compileall.compile_dir(os.path.join(ROOT, folder), quiet=1)


def compile_in_new_processes(script, repeat=1):
    """Run ``script`` (which prints compile seconds and origin as JSON) in
    two new processes sharing an empty cache dir, ``repeat`` times (a new
    dir each time): ``(cold, disk hit)``, each the run of median seconds,
    with ``"runs"``: every run's seconds (a host's noise shows there)."""
    compile_bytecode()
    colds, warms = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, POLYARRAY_CACHE_DIR=d,
                       PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
            runs = [json.loads(subprocess.run([sys.executable, "-c", script], env=env,
                                              capture_output=True, text=True, check=True)
                               .stdout.strip().splitlines()[-1]) for _ in range(2)]
        assert runs[0]["origin"] == "built" and runs[1]["origin"] == "disk", runs
        colds.append(runs[0])
        warms.append(runs[1])

    def median(runs):
        mid = dict(sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2])
        mid["runs"] = [r["seconds"] for r in runs]
        return mid
    return median(colds), median(warms)
