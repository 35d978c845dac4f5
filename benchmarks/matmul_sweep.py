"""Experiment (GPU): register-tiled matmul schedules vs cuBLAS, same run.

``python -m benchmarks.matmul_sweep --device cuda`` compiles 4096^3 float32
``A @ B`` under the default schedule and register-tiled ones (work-group
tile ``bt`` x ``bt`` of 16 x 16 work-items, each computing (bt/16)^2 outputs
in registers; ``kt``-deep local-memory tiles of both operands), checks each
against NumPy and times it beside cuBLAS (torch, TF32 off).
"""
import argparse
import time

import numpy as np

import polyarray as pa
from polyarray.schedules import Prefetch, RegisterTile, Split, Transform
from .bench import Bench
from .common import check, median_time, to_device


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


def register_tiled(bt, th, kt, A="A", B="B"):
    return [RegisterTile(A, B, bt, th, kt)]


def contiguous_registers(bt, th, kt, A="A", B="B"):
    """Each work-item's register tile is contiguous (``i = ty*r + ii``), and
    A's local tile is stored k-major, so both operands' local reads are
    consecutive per work-item (candidates for 16-byte shared loads)."""
    import loopy as lp
    r = bt // th
    return [Split("i", bt, outer_tag="g.1"), Split("i_inner", r, outer_tag="l.1", inner_tag="ilp"),
            Split("j", bt, outer_tag="g.0"), Split("j_inner", r, outer_tag="l.0", inner_tag="ilp"),
            Split("k", kt), Prefetch(A, ("i_inner_outer", "i_inner_inner", "k_inner")),
            Prefetch(B, ("k_inner", "j_inner_outer", "j_inner_inner")),
            Transform(lambda knl: lp.tag_array_axes(knl, f"{A}_fetch", "N0,N1"))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--vector", action="store_true",
                    help="only the default, the best strided and the vector=4 register tiles")
    ap.add_argument("--contiguous", action="store_true",
                    help="also the contiguous-register variant (measured slower)")
    args = ap.parse_args()
    b = Bench(args.device, quick=False)
    n = args.n
    av = b.rng.standard_normal((n, n)).astype(np.float32)
    bv = b.rng.standard_normal((n, n)).astype(np.float32)
    want = av @ bv
    A, B = pa.placeholder("A", (n, n), np.float32), pa.placeholder("B", (n, n), np.float32)
    ad, bd = to_device(b, av), to_device(b, bv)
    cublas = _torch_sgemm(n)
    rows = []
    variants = [("default", None)] + [
            (f"bt={bt} th=16 kt={kt}", register_tiled(bt, 16, kt))
            for bt, kt in ((64, 16), (128, 16), (128, 32))] + [
            (f"bt={bt} th={th} kt={kt}", register_tiled(bt, th, kt))
            for bt, th, kt in ((128, 32, 16), (64, 8, 16), (128, 32, 32))] + [
            (f"contiguous bt={bt} kt={kt}", contiguous_registers(bt, 16, kt))
            for bt, kt in ((128, 16),) if args.contiguous]
    if args.vector:
        variants = [("default", None), ("bt=128 th=16 kt=16", register_tiled(128, 16, 16))] + [
            (f"vector bt={bt} kt={kt}", [RegisterTile("A", "B", bt, 16, kt, vector=4)])
            for bt, kt in ((128, 16), (128, 8), (128, 32), (64, 16))] + [
            (f"vector {bt}x{bj} kt={kt}", [RegisterTile("A", "B", bt, 16, kt, vector=4,
                                                        block_j=bj)])
            for bt, bj, kt in ((128, 256, 16), (256, 128, 16), (128, 256, 8))]
    for label, steps in variants:
        t0 = time.perf_counter()
        opts = {"device_kind": "gpu"} if args.device == "opencl" else {}
        try:
            prog = pa.compile(A @ B, target=args.device, out="device",
                              schedule={"k0_einsum": steps} if steps else None, **opts)
            got = prog(A=ad, B=bd).get()
            compile_s = time.perf_counter() - t0
            check(label, got, want, rtol=1e-3)
        except Exception as e:      # noqa: BLE001  (report it and go on)
            print(f"FAILED {label}: {type(e).__name__}: {str(e)[:300]}")
            continue
        t = median_time(lambda: prog(A=ad, B=bd), prog.synchronize)
        rows.append((label, t, compile_s))
    flops = 2 * n ** 3
    print(f"{b.desc}; cuBLAS (torch, TF32 off): "
          + (f"{cublas * 1e3:.2f} ms, {flops / cublas / 1e12:.1f} TFLOP/s" if cublas else "n/a"))
    for label, t, cs in rows:
        frac = f"{cublas / t:.2f} of cuBLAS" if cublas else ""
        print(f"{label:22s} {t * 1e3:8.2f} ms {flops / t / 1e12:6.1f} TFLOP/s  {frac}  "
              f"(compile + first call {cs:.1f} s)")


if __name__ == "__main__":
    main()
