"""Matrix products at each precision and in float16, against torch (cuBLAS):

    python -m benchmarks.matmul_precision [--n 4096]

Rows: float32 at "highest" (torch with TF32 off), "tf32" (torch with TF32
on) and "bf16" (torch's float32 precision "medium"), and float16 inputs
(torch's half matmul: HGEMM on the tensor cores).  Each result is checked
against NumPy first (within the format's rounding); times are
``pa.testing.median_time`` of device-resident calls beside torch's in the
same process.  "of cuBLAS" is torch's time over polyarray's: the hardware
limit here is cuBLAS's own kernel for the same precision."""
from __future__ import annotations

import argparse

import numpy as np

import polyarray as pa
from polyarray.testing import median_time


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096)
    args = ap.parse_args(argv)
    n = args.n
    import torch
    rng = np.random.default_rng(0)
    rows = [("float32 highest", np.float32, "highest", 1e-4, "highest"),
            ("float32 tf32", np.float32, "tf32", 3e-3, "high"),
            ("float32 bf16", np.float32, "bf16", 3e-2, "medium"),
            ("float16", np.float16, "highest", 3e-3, None)]
    print(f"cuda, {n}^3 products; peer torch {torch.__version__}")
    for label, dt, precision, tol, torch_precision in rows:
        a = rng.standard_normal((n, n)).astype(dt)
        b = rng.standard_normal((n, n)).astype(dt)
        x, y = pa.placeholder("x", a.shape, dt), pa.placeholder("y", b.shape, dt)
        prog = pa.compile(pa.matmul(x, y, precision=precision), target="cuda", out="device")
        up = pa.compile([x, y], target="cuda", out="device")
        da, db = up(x=a, y=b)
        got = prog(x=da, y=db).get().astype(np.float64)
        want = a.astype(np.float64) @ b.astype(np.float64)
        scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
        assert np.all(np.abs(got - want) <= tol * scale), label
        ours = median_time(lambda: prog(x=da, y=db), prog.synchronize, repeat=5, min_time=0.5)
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        if torch_precision is not None:
            torch.set_float32_matmul_precision(torch_precision)
        peer = median_time(lambda: ta @ tb, torch.cuda.synchronize, repeat=5, min_time=0.5)
        torch.set_float32_matmul_precision("highest")
        forms = "+".join(k.form for k in prog.kernels.values())
        tflops = 2 * n ** 3 / ours / 1e12
        print(f"{label:16s} polyarray {ours * 1e3:8.3f} ms ({tflops:6.1f} TFLOP/s, {forms})  "
              f"torch {peer * 1e3:8.3f} ms  of cuBLAS {peer / ours:5.2f}", flush=True)


if __name__ == "__main__":
    main()
