"""The benchmark machine: the device, its measured copy bandwidth and
float32 FMA peak, the peers installed, and the result rows."""
from __future__ import annotations

import sys

import numpy as np

from polyarray.inspect import hardware


class Bench:
    def __init__(self, device, quick):
        self.device = device
        self.quick = quick
        self.rows = []
        self.rng = np.random.default_rng(0)
        if device == "opencl":
            from polyarray.targets.opencl import select_device
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
        self.peak_flops = self.measure_peak_flops()
        self._peers = None

    def _load_peers(self):
        """The peers' frameworks, imported on first use (the experiment
        scripts that build a Bench never import torch or JAX)."""
        if self._peers is None:
            from .peers import frameworks
            self._peers = frameworks(self.gpu)
        return self._peers

    @property
    def frameworks(self):
        return self._load_peers()[0]

    @property
    def missing(self):
        """{framework: why it is not timed}."""
        return self._load_peers()[1]

    def measure_copy(self):
        """Device-to-device copy bandwidth (bytes read + written per second;
        ``polyarray.inspect.hardware``, which profiles compare with too)."""
        if self.device == "cuda":
            return hardware.cuda_copy_bandwidth()
        return hardware.opencl_copy_bandwidth(self.queue, (1 << 24) if self.quick else (1 << 26))

    def measure_peak_flops(self):
        """float32 FMA throughput of the CUDA device (``polyarray.inspect.hardware``:
        16 independent FMA chains per thread on every SM); None elsewhere."""
        if self.device != "cuda":
            return None
        return hardware.cuda_peak_flops("float32")

    def row(self, name, ours, peers, nbytes=None, flops=None, note="", failed=None):
        best = min(peers.values()) if peers else None
        r = {"workload": name, "polyarray_s": ours, "peers_s": peers,
             "best_peer": min(peers, key=peers.get) if peers else None,
             "ratio_to_best_peer": (best / ours) if best else None,
             "fraction_of_copy_bw": (nbytes / ours / self.copy_bw) if nbytes else None,
             "fraction_of_peak_flops": (flops / ours / self.peak_flops)
             if flops and self.peak_flops else None,
             "peers_not_timed": failed or {}, "note": note}
        self.rows.append(r)
        # progress on stderr as each row is measured: a run cut short by a
        # time limit (a long sweep) still shows what it measured
        peer = f"; best peer {r['best_peer']} {_fmt(best)}" if best else ""
        print(f"  row: {name}: {_fmt(ours)}{peer}", file=sys.stderr, flush=True)
        return r

    def print_table(self):
        peak = f"{self.peak_flops / 1e12:.1f} TFLOP/s" if self.peak_flops else "n/a"
        print(f"\ndevice: {self.desc}; measured copy bandwidth "
              f"{self.copy_bw / 1e9:.1f} GB/s (read+write); measured f32 FMA peak {peak}")
        print(f"{'workload':40s} {'polyarray':>10s} {'vs best':>8s} {'of hw':>10s}  peers")
        for r in self.rows:
            peers = ", ".join(f"{k} {_fmt(v)}" for k, v in r["peers_s"].items())
            ratio = f"{r['ratio_to_best_peer']:.2f}x" if r["ratio_to_best_peer"] else "-"
            frac = (f"{r['fraction_of_copy_bw']:.2f} bw" if r["fraction_of_copy_bw"] else
                    f"{r['fraction_of_peak_flops']:.2f} flop" if r["fraction_of_peak_flops"]
                    else "-")
            print(f"{r['workload']:40s} {_fmt(r['polyarray_s']):>10s} {ratio:>8s} {frac:>10s}"
                  f"  {peers}")
            if r["note"]:
                print(f"{'':42s}{r['note']}")
            for k, why in r["peers_not_timed"].items():
                print(f"{'':42s}not timed: {k}: {why}")


def _fmt(seconds):
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"
