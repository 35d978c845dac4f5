"""Experiment: codegen's default-schedule constants vs bandwidth (GPU).

``python -m benchmarks.sweep --device cuda [--schedules]`` times the 10-op chain on 2^26
float32 and the full / axis-0 / axis-1 sums of 8192^2 float32 under several
settings of the policy's thresholds (elements per work-item, work-items needed
to fill the device, two-stage width; ``policy.using_thresholds``), each freshly
lowered (other thresholds are other cache keys), checked
against NumPy, then timed.  Its table justifies the defaults.  ``--schedules`` instead times the chain
under explicit schedules, ``Vectorize`` among them.
"""
import argparse
import os
import tempfile

import numpy as np

import polyarray as pa
from polyarray.codegen.policy import using_thresholds
import polyarray.targets.device_common as dc
from polyarray.schedules import Vectorize, WorkGroup
from .bench import Bench
from .common import check, median_time, to_device
from .workloads import chain10_np, chain10_pa

CONFIGS = [
    {"ELEMENTWISE_ILP": 1},
    {"ELEMENTWISE_ILP": 2},
    {"ELEMENTWISE_ILP": 4},
    {"ELEMENTWISE_ILP": 8},
    {"FILL_THREADS": 1 << 16, "TWO_STAGE_GROUPS": 2048},
    {"FILL_THREADS": 1 << 17, "TWO_STAGE_GROUPS": 4096},
    {"FILL_THREADS": 1 << 18, "TWO_STAGE_GROUPS": 8192},
    {"FILL_THREADS": 1 << 19, "TWO_STAGE_GROUPS": 16384},
]


SCHEDULES = {
    "default (4 per work-item, loads first)": None,
    "WorkGroup(256): 1 per work-item": [WorkGroup(256)],
    "Vectorize(i, 4) + WorkGroup(256)": [Vectorize("i", 4), WorkGroup(256, "i_outer")],
    "Vectorize(i, 2) + WorkGroup(256)": [Vectorize("i", 2), WorkGroup(256, "i_outer")],
}


def schedules(b, x, xv, xd, n):
    """The chain under explicit schedules: vector loads vs the default."""
    rows = []
    for label, steps in SCHEDULES.items():
        prog = pa.compile(chain10_pa(x), target=b.device, out="device",
                          schedule={"k0_elementwise": steps} if steps else None)
        check(label, prog(x=xd).get(), chain10_np(xv), rtol=1e-3)
        t = median_time(lambda: prog(x=xd), prog.synchronize)
        rows.append((label, t, 8 * n / t / b.copy_bw))
    print(f"{b.desc}; copy {b.copy_bw / 1e9:.0f} GB/s; 10-op chain on 2^26 float32")
    for label, t, frac in rows:
        print(f"{label:42s} {t * 1e6:8.1f} us {frac:.3f} of copy")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--schedules", action="store_true",
                    help="time the chain under explicit schedules (Vectorize) instead")
    args = ap.parse_args()
    b = Bench(args.device, quick=False)
    n = 1 << 26
    xv = b.rng.uniform(-1, 1, n).astype(np.float32)
    xd = to_device(b, xv)
    x = pa.placeholder("x", (n,), np.float32)
    if args.schedules:
        return schedules(b, x, xv, xd, n)
    m = pa.placeholder("m", (8192, 8192), np.float32)
    md = to_device(b, xv.reshape(8192, 8192))
    cases = [("chain", chain10_pa(x), {"x": xd}, chain10_np(xv), 8 * n, "ELEMENTWISE_ILP"),
             ("sum all", m.sum(), {"m": md}, xv.sum(dtype=np.float64), 4 * n, "FILL"),
             ("sum axis 0", m.sum(axis=0), {"m": md}, xv.reshape(8192, 8192).sum(0), 4 * n,
              "FILL"),
             ("sum axis 1", m.sum(axis=1), {"m": md}, xv.reshape(8192, 8192).sum(1), 4 * n,
              "FILL")]
    rows = []
    for cfg in CONFIGS:
        dc.clear_memory_cache()
        os.environ["POLYARRAY_CACHE_DIR"] = tempfile.mkdtemp()
        for name, expr, binds, want, nbytes, knob in cases:
            if not any(k.startswith(knob) for k in cfg):
                continue
            with using_thresholds(**cfg):
                prog = pa.compile(expr, target=args.device, out="device")
            check(name, prog(**binds).get(), want, rtol=1e-3)
            t = median_time(lambda: prog(**binds), prog.synchronize)
            kinds = "+".join(k.form for k in prog.kernels.values())
            rows.append((name, cfg, kinds, t, nbytes / t / b.copy_bw))
    print(f"{b.desc}; copy {b.copy_bw / 1e9:.0f} GB/s")
    for name, cfg, kinds, t, frac in rows:
        print(f"{name:11s} {str(cfg):52s} {kinds:32s} {t * 1e6:8.1f} us {frac:.3f} of copy")


if __name__ == "__main__":
    main()
