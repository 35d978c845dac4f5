"""Experiment: elements per work-item in large elementwise kernels (GPU).

``python -m benchmarks.ilp_sweep --device cuda`` times the 10-op chain on
2^26 float32 for several values of ``codegen.kernels.ELEMENTWISE_ILP``.
"""
import argparse
import os
import tempfile

import numpy as np

import codegen.kernels as K
import polyarray as pa
import targets.device_common as dc
from .__main__ import Bench, median_time
from .workloads import _to_device, chain10_np, chain10_pa

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="cuda")
args = ap.parse_args()
b = Bench(args.device, quick=False)
n = 1 << 26
xv = b.rng.uniform(-1, 1, n).astype(np.float32)
xd = _to_device(b, xv)
x = pa.placeholder("x", (n,), np.float32)
for ilp in (1, 2, 4, 8):
    K.ELEMENTWISE_ILP = ilp
    dc.clear_memory_cache()
    os.environ["POLYARRAY_CACHE_DIR"] = tempfile.mkdtemp()
    prog = pa.compile(chain10_pa(x), target=args.device, out="device")
    got = prog(x=xd).get()
    assert np.allclose(got, chain10_np(xv), rtol=1e-4)
    t = median_time(lambda: prog(x=xd), prog.synchronize)
    print(f"ILP {ilp}: {t * 1e6:7.1f} us  {8 * n / t / b.copy_bw:.3f} of copy")
