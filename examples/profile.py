"""Where the time goes: a per-kernel profile of a backpropagation step.

    delta_h = dot(delta_o, W) * h * (1 - h)      # the hidden layer's error
    grad_W1 = X.T @ delta_h                      # the first layer's gradient

``prog.profile(**bindings)`` times each kernel on the device (CUDA events,
or OpenCL events on a profiling queue; the NumPy target times its nodes),
and sets each beside the bytes it moves, the flops it computes (estimated
from the DAG) and the fraction of the measured copy bandwidth or FMA peak.
The table names the DAG nodes each kernel computes; ``pa.show(prog,
profile=p)`` annotates the DAG listing, and ``format="dot"`` gives Graphviz
text with a cluster per kernel.

    python examples/profile.py [--target cuda] [--n 4096] [--plot roofline.png]

At these default sizes the kernels' device times should add up to nearly the
whole synchronized call on a GPU (the last line prints the ratio); at tiny
sizes the launches and host work dominate instead.
"""
import argparse

import numpy as np

import polyarray as pa

import sizing                      # examples/sizing.py: --quick, and small sizes on a CPU

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--target", default=None, help="numpy, opencl or cuda (default: the best)")
ap.add_argument("--n", type=int, default=4096, help="samples in the batch")
ap.add_argument("--features", type=int, default=2048, help="inputs per sample")
ap.add_argument("--hidden", type=int, default=2048, help="hidden units")
ap.add_argument("--outputs", type=int, default=1024, help="output units")
ap.add_argument("--repeat", type=int, default=5, help="profiled calls (medians)")
ap.add_argument("--plot", default=None, help="save the roofline here (needs matplotlib)")
ap.add_argument("--svg", default=None, help="save the DAG as SVG here (needs Graphviz)")
args = sizing.parse_args(ap, {"n": 64, "features": 32, "hidden": 16, "outputs": 8,
                                  "repeat": 2})

n, nv, nh, no = args.n, args.features, args.hidden, args.outputs
X = pa.placeholder("X", (n, nv), np.float32)
h = pa.placeholder("h", (n, nh), np.float32)
W = pa.placeholder("W", (no, nh), np.float32)
delta_o = pa.placeholder("delta_o", (n, no), np.float32)

delta_h = pa.dot(delta_o, W) * h * (1.0 - h)
grad_W1 = X.T @ delta_h

target = args.target or pa.get_default_target()
prog = pa.compile({"delta_h": delta_h, "grad_W1": grad_W1}, target=target)
rng = np.random.default_rng(0)
bindings = {"X": rng.random((n, nv), dtype=np.float32),
            "h": rng.random((n, nh), dtype=np.float32),
            "W": rng.standard_normal((no, nh), dtype=np.float32) * 0.1,
            "delta_o": rng.standard_normal((n, no), dtype=np.float32)}

# the result first: a profile of wrong kernels would be no use
got = prog(**bindings)
want_h = (bindings["delta_o"] @ bindings["W"]) * bindings["h"] * (1.0 - bindings["h"])
pa.testing.assert_allclose(got["delta_h"], want_h, rtol=1e-4, err_msg="delta_h")
pa.testing.assert_allclose(got["grad_W1"], bindings["X"].T @ want_h, rtol=1e-4,
                           err_msg="grad_W1")

profile = prog.profile(**bindings, repeat=args.repeat)
print(profile)
print()
pa.show(prog, profile=profile)
print()
pa.show(prog, format="dot", profile=profile)
print()
print(f"kernel times / synchronized call: {profile.ratio:.2f}")
if args.plot:
    profile.plot(file=args.plot)
    print(f"roofline saved to {args.plot}")
if args.svg:
    pa.show(prog, format="svg", file=args.svg)
    print(f"DAG saved to {args.svg}")
