"""A training loop whose weights never leave the device.

Logistic regression with L2 regularization, written as Theano's tutorial
writes it: the weights are shared variables (``pa.shared``), one step is a
program with ``updates=``, and ``prog.repeat(n)`` runs n steps in one call
(on CUDA as replayed CUDA graphs).  The result is checked against the same
loop in NumPy.

    python examples/training_loop.py [--target cuda|opencl|numpy] [--steps N]
"""
import argparse
import time

import numpy as np

import polyarray as pa

import sizing                      # examples/sizing.py: --quick, and small sizes on a CPU

ap = argparse.ArgumentParser()
ap.add_argument("--target", default=None, help="default: the best available")
ap.add_argument("--steps", type=int, default=1000)
ap.add_argument("--samples", type=int, default=400)
ap.add_argument("--features", type=int, default=784)
args = sizing.parse_args(ap, {"steps": 50, "samples": 64, "features": 32})

rng = np.random.default_rng(0)
N, F, lr = args.samples, args.features, 0.1
X_data = rng.standard_normal((N, F)).astype(np.float32)
Y_data = (rng.random(N) > 0.5).astype(np.float32)
w0 = (0.01 * rng.standard_normal(F)).astype(np.float32)

X = pa.placeholder("X", (N, F), np.float32)
Y = pa.placeholder("Y", (N,), np.float32)
w = pa.shared(w0, name="w")                    # lives on the device after the first call
b = pa.shared(np.float32(0.0), name="b")

p = 1.0 / (1.0 + pa.exp(-(pa.dot(X, w) + b)))  # probability of class 1
xent = -Y * pa.log(p) - (1 - Y) * pa.log(1 - p)
cost = xent.mean() + 0.01 * (w ** 2).sum()
gw = pa.dot(X.T, p - Y) / N + 0.02 * w         # the gradient, written out
gb = (p - Y).mean()
train = pa.compile(cost, target=args.target, updates={w: w - lr * gw, b: b - lr * gb})
print(train)
print(f"{len(train.kernels)} kernels per step:")
for k in train.kernels.values():
    print("  ", k)

t0 = time.perf_counter()
last_cost = train.repeat(args.steps, X=X_data, Y=Y_data)   # the last step's cost
seconds = time.perf_counter() - t0

# the same loop in NumPy
wn, bn = w0.copy(), np.float32(0.0)
for _ in range(args.steps):
    pn = 1.0 / (1.0 + np.exp(-(X_data @ wn + bn)))
    wn, bn = wn - lr * (X_data.T @ (pn - Y_data) / N + 0.02 * wn), bn - lr * (pn - Y_data).mean()
err = np.abs(w.get_value() - wn).max() / np.abs(wn).max()
print(f"{args.steps} steps on {train.target_name} in {seconds * 1e3:.1f} ms "
      f"({seconds / args.steps * 1e6:.1f} us per step, first call's compile included); "
      f"last cost {float(last_cost):.4f}")
print(f"weights vs NumPy: max relative error {err:.2e}")
assert err < 1e-3, "the weights differ from NumPy's"
print("OK: matches NumPy")
