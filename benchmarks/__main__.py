"""polyarray benchmarks: ``python -m benchmarks --device opencl [--quick]``.

Every workload runs polyarray and its peers on the same inputs in the same
process; results are checked against NumPy before anything is timed.  Times
are medians after warm-up, with a device synchronize before each clock
read.  The table prints each peer's time, polyarray's ratio to the best
peer (>1 means polyarray is faster), and the fraction of the hardware limit
reached (bytes moved over the measured device copy bandwidth).  A JSON file
with the same numbers is written next to the table (``--json``).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def median_time(fn, sync=lambda: None, repeat=10, warmup=2, min_time=0.2):
    """Seconds per call in steady state: calls are queued back to back in
    batches of about 5 ms, with a synchronize before each clock read, and
    the median over batches is returned.  The device then overlaps one
    call's host work with the previous call's kernels, as in a real loop;
    timing single calls would add the launch latency (10-15 us) to every
    kernel time."""
    for _ in range(warmup):
        fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    batch = max(1, min(200, int(0.005 / max(time.perf_counter() - t0, 1e-7))))
    times = []
    t_end = time.perf_counter() + min_time
    while len(times) < repeat or (time.perf_counter() < t_end and len(times) < 200):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / batch)
    return float(np.median(times))


def check(name, got, want, rtol=1e-4):
    got, want = np.asarray(got), np.asarray(want)
    scale = max(1.0, float(np.max(np.abs(want))))
    if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=rtol * scale):
        raise AssertionError(f"{name}: result differs from NumPy; not timing it")


class Bench:
    def __init__(self, device, quick):
        self.device = device
        self.quick = quick
        self.rows = []
        self.rng = np.random.default_rng(0)
        if device == "opencl":
            from targets.opencl import select_device
            import pyopencl as cl
            ctx, dev, desc = select_device()
            self.desc = desc
            self.gpu = bool(dev.type & cl.device_type.GPU)
            self.queue = cl.CommandQueue(ctx)
            self.sync = self.queue.finish
        elif device == "cuda":
            import pycuda.autoprimaryctx  # noqa: F401
            import pycuda.driver as drv
            dev = drv.Context.get_device()
            self.desc = f"CUDA / {dev.name()}"
            self.gpu = True
            self.sync = drv.Context.synchronize
        else:
            raise SystemExit(f"unsupported --device {device!r} (opencl, cuda)")
        self.copy_bw = self.measure_copy()

    def measure_copy(self):
        """Device-to-device copy bandwidth (bytes read + written per second)."""
        if self.device == "cuda":
            import pycuda.driver as drv
            n = 1 << 26
            a, b = drv.mem_alloc(4 * n), drv.mem_alloc(4 * n)
            drv.memset_d32(a, 0x3F800000, n)
            t = median_time(lambda: drv.memcpy_dtod(b, a, 4 * n), self.sync, repeat=10)
            return 2 * 4 * n / t
        import pyopencl as cl
        n = (1 << 24) if self.quick else (1 << 26)
        a = cl.Buffer(self.queue.context, cl.mem_flags.READ_WRITE, 4 * n)
        b = cl.Buffer(self.queue.context, cl.mem_flags.READ_WRITE, 4 * n)
        cl.enqueue_fill_buffer(self.queue, a, np.float32(1), 0, 4 * n)
        t = median_time(lambda: cl.enqueue_copy(self.queue, b, a), self.sync, repeat=5)
        return 2 * 4 * n / t

    def row(self, name, ours, peers, nbytes=None, flops=None, note=""):
        best = min(peers.values()) if peers else None
        r = {"workload": name, "polyarray_s": ours, "peers_s": peers,
             "ratio_to_best_peer": (best / ours) if best else None,
             "fraction_of_copy_bw": (nbytes / ours / self.copy_bw) if nbytes else None,
             "note": note}
        self.rows.append(r)
        return r

    def print_table(self):
        print(f"\ndevice: {self.desc}; measured copy bandwidth "
              f"{self.copy_bw / 1e9:.1f} GB/s (read+write)")
        print(f"{'workload':34s} {'polyarray':>11s}  {'peers':40s} {'vs best':>8s} {'of copy':>8s}")
        for r in self.rows:
            peers = ", ".join(f"{k} {_fmt(v)}" for k, v in r["peers_s"].items())
            ratio = f"{r['ratio_to_best_peer']:.2f}x" if r["ratio_to_best_peer"] else "-"
            frac = f"{r['fraction_of_copy_bw']:.2f}" if r["fraction_of_copy_bw"] else "-"
            print(f"{r['workload']:34s} {_fmt(r['polyarray_s']):>11s}  {peers:40s} "
                  f"{ratio:>8s} {frac:>8s}  {r['note']}")


def _fmt(seconds):
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    ap.add_argument("--device", default="opencl", choices=["opencl", "cuda"])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (CI smoke run)")
    ap.add_argument("--json", default=None, help="write results here (default: none)")
    ap.add_argument("--only", default=None, help="run one group of workloads (dispatch, schedules)")
    args = ap.parse_args(argv)
    from . import workloads
    b = Bench(args.device, args.quick)
    for w in (workloads.QUICK[args.only] if args.only else workloads.ALL):
        try:
            w(b)
        except Exception as e:      # noqa: BLE001  (report and keep going)
            print(f"FAILED {w.__name__}: {type(e).__name__}: {str(e)[:300]}")
    b.print_table()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": b.desc, "copy_bw_bytes_per_s": b.copy_bw,
                       "host": platform.node(), "date": time.strftime("%Y-%m-%d"),
                       "rows": b.rows}, f, indent=1)


if __name__ == "__main__":
    main()
