"""pa.fft's transforms against CuPy (cuFFT) and torch.fft, in one process:

    python -m benchmarks.fft_calls [--target cuda] [--log2-n 24] [--side 4096]

Cases: a 1-D complex64 transform of 2^24 points, a 2-D complex64 transform
of 4096 x 4096, and a convolution ``irfft(rfft(x) * rfft(k))`` of 64 rows
of 2^18 float32 (CuPy's and torch's three calls and a product against our
one program).  Each result is checked against NumPy first; times are
``pa.testing.median_time`` of device-resident calls (``out="device"``).
``of copy`` is the time of one device copy of the input and the output
(the least memory traffic of a transform) over the time measured; ``peer/ours``
is the peer's time over ours (1.0: as fast)."""
from __future__ import annotations

import argparse

import numpy as np

import polyarray as pa
from polyarray.testing import median_time


def on_device(target, arr):
    x = pa.placeholder("v", arr.shape, arr.dtype)
    return pa.compile(x, target=target, out="device")(v=arr)


def copy_seconds(target, nbytes):
    """A device copy of ``nbytes`` (read and write), as float32 elements."""
    n = nbytes // 4
    data = on_device(target, np.ones(n, np.float32))
    x = pa.placeholder("x", (n,), np.float32)
    prog = pa.compile(x * np.float32(1), target=target, out="device")
    return median_time(lambda: prog(x=data), prog.synchronize)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="cuda")
    ap.add_argument("--log2-n", type=int, default=24)
    ap.add_argument("--side", type=int, default=4096)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    n, side = 2 ** args.log2_n, args.side
    z1 = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    z2 = (rng.standard_normal((side, side)) + 1j * rng.standard_normal((side, side))
          ).astype(np.complex64)
    rows, length = 64, 2 ** 18
    xs = rng.standard_normal((rows, length)).astype(np.float32)
    ks = rng.standard_normal(length).astype(np.float32)
    cases = {
        f"fft 1-D c64 2^{args.log2_n}": (lambda m, z: m.fft.fft(z), (z1,)),
        f"fft2 c64 {side}^2": (lambda m, z: m.fft.fft2(z), (z2,)),
        f"convolution {rows} x 2^18 f32": (
            lambda m, x, k: m.fft.irfft(m.fft.rfft(x) * m.fft.rfft(k), n=length), (xs, ks)),
    }
    try:
        import cupy as cp
    except Exception:           # noqa: BLE001
        cp = None
    try:
        import torch
        torch = torch if torch.cuda.is_available() else None
    except Exception:           # noqa: BLE001
        torch = None
    print(f"{args.target}: {pa.__name__}, peers: "
          f"{', '.join(p for p, m in (('cupy', cp), ('torch', torch)) if m) or 'none'}")
    for name, (fn, arrays) in cases.items():
        names = [f"a{i}" for i in range(len(arrays))]
        ph = [pa.placeholder(k, a.shape, a.dtype) for k, a in zip(names, arrays)]
        prog = pa.compile(fn(pa, *ph), target=args.target, out="device")
        dev = {k: on_device(args.target, a) for k, a in zip(names, arrays)}
        got = prog(**dev)
        got = got.get() if hasattr(got, "get") else np.asarray(got)
        want = fn(np, *arrays)
        err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        assert err < 1e-4, f"{name}: error {err}"
        ours = median_time(lambda: prog(**dev), prog.synchronize, repeat=5, min_time=0.5)
        nbytes = sum(a.nbytes for a in arrays) + want.astype(got.dtype).nbytes
        frac = copy_seconds(args.target, nbytes) / ours
        forms = sorted({k.form for k in prog.kernels.values()})
        line = (f"{name:28s} polyarray {ours * 1e3:8.3f} ms  of copy {frac:4.2f}  "
                f"({len(prog.kernels)} steps: {', '.join(forms)}; error {err:.1e})")
        if cp is not None:
            ca = [cp.asarray(a) for a in arrays]
            theirs = median_time(lambda: fn(cp, *ca), cp.cuda.Device().synchronize, repeat=5,
                                 min_time=0.5)
            line += f"\n{'':28s} cupy      {theirs * 1e3:8.3f} ms  cupy/ours {theirs / ours:5.2f}"
        if torch is not None:
            ta = [torch.as_tensor(a, device="cuda") for a in arrays]
            theirs = median_time(lambda: fn(torch, *ta), torch.cuda.synchronize, repeat=5,
                                 min_time=0.5)
            line += f"\n{'':28s} torch     {theirs * 1e3:8.3f} ms  torch/ours {theirs / ours:5.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
