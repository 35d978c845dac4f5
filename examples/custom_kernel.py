"""Custom kernels in CuPy's style: a few lines of C, fused with the rest.

    softplus_scaled = ElementwiseKernel("T x, T s", "T y", "y = s * log1p(exp(x / s))")
    l2norm          = ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0")

The custom elementwise op sits inside a chain, ``tanh(softplus(x, s) - 1) * 2``,
which stays one kernel (as the same chain written with pa.log1p/pa.exp);
the custom reduction normalizes rows, ``x / l2norm(x, axis=1, keepdims=True)``,
fused with its reader as a softmax is.  Each result is compared with
NumPy; the numpy target runs the Python references given to the kernels.

    python examples/custom_kernel.py [--target opencl|cuda|numpy] [--rows N]
"""
import argparse

import numpy as np

import polyarray as pa

import sizing                      # examples/sizing.py: --quick, and small sizes on a CPU

softplus = pa.elementwise_kernel(
    "T x, T s", "T y", "y = s * log1p(exp(x / s))", "softplus_scaled",
    reference=lambda x, s: s * np.log1p(np.exp(x / s)))

l2norm = pa.reduction_kernel(
    "T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm",
    reference=lambda x, axis, keepdims: np.sqrt((x * x).sum(axis=axis, keepdims=keepdims)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=None, help="opencl, cuda or numpy (default: the best)")
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--cols", type=int, default=256)
    args = sizing.parse_args(ap, {"rows": 200})
    target = args.target or pa.get_default_target()
    shape = (args.rows, args.cols)
    x = pa.placeholder("x", shape, np.float32)
    rng = np.random.default_rng(0)
    xv = rng.standard_normal(shape).astype(np.float32)
    s = np.float32(0.5)

    chain = pa.tanh(softplus(x, 0.5) - 1) * 2
    builtin = pa.tanh(0.5 * pa.log1p(pa.exp(x / 0.5)) - 1) * 2
    rows = x / l2norm(x, axis=1, keepdims=True)
    total = l2norm(x)
    prog = pa.compile([chain, rows, total], target=target)
    got_chain, got_rows, got_total = prog(x=xv)

    want_chain = np.tanh(s * np.log1p(np.exp(xv / s)) - 1) * 2
    want_rows = xv / np.linalg.norm(xv, axis=1, keepdims=True)
    want_total = np.linalg.norm(xv.astype(np.float64))
    print(f"target: {prog.target_name}; x: float32{list(shape)}")
    for label, got, want in (("tanh(softplus(x) - 1) * 2", got_chain, want_chain),
                             ("x / l2norm(x, axis=1)", got_rows, want_rows),
                             ("l2norm(x)", got_total, want_total)):
        err = np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30)
        print(f"  {label:28s} max relative error vs NumPy {err:.1e}")
        assert err < 1e-4, f"{label} does not match NumPy"
    if prog.target_name != "numpy":
        alone = pa.compile(chain, target=target)
        plain = pa.compile(builtin, target=target)
        normalize = pa.compile(rows, target=target)
        forms = ", ".join(str(k.form) for k in normalize.kernels.values())
        print(f"kernels: the chain with the custom op {len(alone.kernels)}, written with "
              f"pa.log1p/pa.exp {len(plain.kernels)}; the row normalization "
              f"{len(normalize.kernels)} ({forms})")
        assert len(alone.kernels) == len(plain.kernels) == 1
        print("the custom C function, as generated:")
        src = alone.source
        start = src.index("/* polyarray custom kernel: softplus_scaled")
        print("  " + "\n  ".join(src[start:].split("}\n")[0].splitlines()) + "\n  }")
    print("OK: matches NumPy")


if __name__ == "__main__":
    main()
