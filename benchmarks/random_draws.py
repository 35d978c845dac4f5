"""Monte Carlo pi with pa.random, both bit generators, against torch and
CuPy when they are importable.

    python -m benchmarks.random_draws [--target cuda] [--log2-draws 28] [--seed 1234]

What it does:

1. Checks the bits on the device: ``Generator(Philox(seed))`` against
   NumPy's own ``Generator(Philox(seed))`` (random float64/float32, uniform,
   integers, raw words; NumPy on the host is the reference), and each bit
   generator's draws against polyarray's NumPy target.
2. Times ``4 * mean(x*x + y*y <= 1)`` over ``D = 2**log2_draws`` float32
   draws (``D / 2`` points), each bit generator drawing x and y inside the
   kernel that counts (``prog.kernels`` lists the kernels), with
   ``pa.testing.median_time`` on ``out="device"`` calls.
3. Times a float32 copy of ``D`` elements (``y = x * 1``: reads and writes
   ``D * 4`` bytes each) with the same timer: "copy-bandwidth equivalent"
   below is ``copy time / pi time``, i.e. how the pi program compares with
   merely copying the draws once (1.0: as fast as that copy; the pi program
   itself reads and writes almost nothing, so it can exceed 1).  Also
   printed: draws per second, and GB/s as if the draws were written and read
   back (``D * 4 * 2`` bytes per call).
4. The same pi with ``torch.rand`` and ``cupy.random`` (their draws stored,
   then read), if importable.
5. Draws stored to device memory alone (float32 uniforms and normals),
   against ``torch.rand``/``torch.randn`` and CuPy's ``default_rng``.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import polyarray as pa
from polyarray.testing import median_time


def check_bits(target, seed):
    """Device bits against NumPy (Philox) and against the NumPy target."""
    ok = True

    def make(g):
        return [g.random(1001), g.random(999, np.float32), g.uniform(-3.0, 7.0, 517),
                g.integers(0, 2**40, 333), g.integers(0, 2**16, 77, np.uint16),
                g.integers(0, 10, 1000, np.int32), g.bit_generator.random_raw(64)]
    got = pa.compile(make(pa.random.Generator(pa.random.Philox(seed))), target=target)()
    want = make(np.random.Generator(np.random.Philox(seed)))
    for k, (a, b) in enumerate(zip(got, want)):
        same = np.array_equal(a, b)
        ok &= same
        print(f"  Philox draw {k}: {'bit-exact' if same else 'DIFFERENT'} vs NumPy's Philox")
    for bits in (pa.random.Philox4x32, pa.random.Philox):
        def draws(bits=bits):
            g = pa.random.Generator(bits(seed))
            return [g.random(4097, np.float32), g.integers(0, 100, 4097, np.int8),
                    g.integers(-2**62, 2**62, 1025), g.standard_normal(1025)]
        dev = pa.compile(draws(), target=target)()
        ref = pa.compile(draws(), target="numpy")()
        for k, (a, b) in enumerate(zip(dev, ref)):
            same = np.array_equal(a, b) if a.dtype.kind != "f" or k < 3 else \
                np.allclose(a, b, rtol=1e-12, atol=1e-12)
            ok &= same
            print(f"  {bits.__name__} draw {k}: {'same' if same else 'DIFFERENT'} as the "
                  "numpy target")
    return ok


def pi_program(bits, draws, target, seed):
    g = pa.random.Generator(bits(seed))
    points = draws // 2
    x, y = g.random(points, np.float32), g.random(points, np.float32)
    inside = (x * x + y * y <= 1).sum()
    return pa.compile(inside, target=target, out="device"), points


def copy_time(draws, target):
    """Seconds per float32 copy of ``draws`` elements, device to device."""
    data = pa.compile(pa.random.default_rng(0).random(draws, np.float32), target=target,
                      out="device")()
    x = pa.placeholder("x", (draws,), np.float32)
    prog = pa.compile(x * np.float32(1), target=target, out="device")
    return median_time(lambda: prog(x=data), prog.synchronize)


def report(label, seconds, draws, copy_s, kernels=None):
    rate = draws / seconds
    gbs = draws * 4 * 2 / seconds / 1e9
    extra = f", {kernels} kernel(s)" if kernels is not None else ""
    print(f"{label:34s} {seconds * 1e3:8.3f} ms  {rate / 1e9:7.2f} Gdraws/s  "
          f"{gbs:7.1f} GB/s-equiv  copy-bandwidth equivalent {copy_s / seconds:5.2f}{extra}")


def draws_alone(draws, target, seed, copy_s):
    """Draws stored to device memory (``D`` float32 uniforms, ``D`` float32
    normals), against torch's and CuPy's generators in the same process."""
    rng = pa.random.default_rng(seed)
    ours = {}
    for what, node in (("uniform", rng.random(draws, np.float32)),
                       ("normal", rng.standard_normal(draws, np.float32))):
        prog = pa.compile(node, target=target, out="device")
        ours[what] = median_time(prog, prog.synchronize)
        (k,) = prog.kernels.values()
        report(f"pa {what} float32, stored", ours[what], draws, copy_s, len(prog.kernels))
        print(f"  kernel: form {k.form}, rule {k.rule}")
    peers = {}
    try:
        import torch
        if torch.cuda.is_available():
            sync = torch.cuda.synchronize
            peers["torch"] = {
                "uniform": median_time(lambda: torch.rand(draws, device="cuda"), sync),
                "normal": median_time(lambda: torch.randn(draws, device="cuda"), sync)}
    except ImportError:
        pass
    try:
        import cupy as cp
        g = cp.random.default_rng(seed)
        sync = cp.cuda.Device().synchronize
        peers["cupy"] = {
            "uniform": median_time(lambda: g.random(draws, dtype=cp.float32), sync),
            "normal": median_time(lambda: g.standard_normal(draws, dtype=cp.float32), sync)}
    except ImportError:
        pass
    for peer, times in peers.items():
        for what, t in times.items():
            print(f"  {peer} {what} float32: {t * 1e3:.3f} ms; {peer}/pa = "
                  f"{t / ours[what]:.2f} (>= 1: polyarray as fast or faster)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="cuda")
    ap.add_argument("--log2-draws", type=int, default=28)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    draws = 2**args.log2_draws
    pa.print_environment_info()

    print("bits on the device:")
    ok = check_bits(args.target, args.seed)
    print("  all bit-exact" if ok else "  SOME DRAWS DIFFER")

    c = copy_time(draws, args.target)
    print(f"float32 copy of {draws} elements: {c * 1e3:.3f} ms "
          f"({draws * 8 / c / 1e9:.1f} GB/s read+write)")

    for bits in (pa.random.Philox4x32, pa.random.Philox):
        t0 = time.perf_counter()
        prog, points = pi_program(bits, draws, args.target, args.seed)
        compile_s = time.perf_counter() - t0
        count = int(pa.compile(prog.outputs, target=args.target)())
        seconds = median_time(prog, prog.synchronize)
        print(f"\n{bits.__name__}: pi ~ {4 * count / points:.6f} (|error| "
              f"{abs(4 * count / points - math.pi):.2e}), compile {compile_s:.1f} s")
        for name, k in prog.kernels.items():
            print(f"  kernel {name}: form {k.form}, rule {k.rule}")
        report(f"pa {bits.__name__}", seconds, draws, c, len(prog.kernels))

    draws_alone(draws, args.target, args.seed, c)

    try:
        import torch
        if torch.cuda.is_available():
            points = draws // 2

            def torch_pi():
                u = torch.rand(2, points, device="cuda")
                return (u[0] * u[0] + u[1] * u[1] <= 1).sum()
            report("torch.rand + count", median_time(torch_pi, torch.cuda.synchronize),
                   draws, c)
            report("torch.rand alone", median_time(
                lambda: torch.rand(draws, device="cuda"), torch.cuda.synchronize), draws, c)
    except ImportError:
        print("torch: not importable")
    try:
        import cupy as cp
        points = draws // 2
        rng = cp.random.default_rng(args.seed)
        sync = cp.cuda.Device().synchronize

        def cupy_pi():
            u = rng.random((2, points), dtype=cp.float32)
            return (u[0] * u[0] + u[1] * u[1] <= 1).sum()
        report("cupy default_rng + count", median_time(cupy_pi, sync), draws, c)
        report("cupy default_rng alone", median_time(
            lambda: rng.random(draws, dtype=cp.float32), sync), draws, c)
        report("cupy.random.random (cuRAND)", median_time(
            lambda: cp.random.random(draws, dtype=cp.float32), sync), draws, c)
    except ImportError:
        print("cupy: not importable")


if __name__ == "__main__":
    main()
