"""polyarray quick start: the gradient of a one-layer autoencoder.

    grad_W = dot(X.T, dot(-(x - z), W) * h * (1 - h))

The expression is built lazily (shapes and dtypes are known at once), then
evaluated on the best available target (POLYARRAY_TARGET overrides it) and
checked against plain NumPy.
"""
import numpy as np

import polyarray as pa

n, nv, nh = 256, 64, 32
rng = np.random.default_rng(0)

X = pa.placeholder("X", shape=(n, nv), dtype=np.float32)   # inputs
z = pa.placeholder("z", shape=(n, nv), dtype=np.float32)   # reconstruction
h = pa.placeholder("h", shape=(n, nh), dtype=np.float32)   # hidden activations
W = pa.array(rng.standard_normal((nv, nh)).astype(np.float32))
x = X

grad_W = pa.dot(X.T, pa.dot(-(x - z), W) * h * (1.0 - h))

print("shapes before evaluating:")
for name, a in [("X", X), ("z", z), ("h", h), ("W", W), ("grad_W", grad_W)]:
    print(f"  {name:7s} {a.dtype.name}{list(a.shape)}")
print("expression:", grad_W)
print()
pa.show(grad_W)

target = pa.get_default_target()
Xv = rng.random((n, nv), dtype=np.float32)
zv = rng.random((n, nv), dtype=np.float32)
hv = rng.random((n, nh), dtype=np.float32)

prog = pa.compile(grad_W, target=target)
result = prog(X=Xv, z=zv, h=hv)

Wv = W.to_numpy()
reference = Xv.T @ ((-(Xv - zv) @ Wv) * hv * (1.0 - hv))
err = np.linalg.norm(result - reference) / np.linalg.norm(reference)
print()
print(f"target: {prog.target_name} (available: {', '.join(pa.available_targets())})")
print(f"result: {result.dtype}{list(result.shape)}, relative error vs NumPy: {err:.2e}")
assert result.shape == reference.shape and result.dtype == reference.dtype
assert err < 1e-5, "result does not match NumPy"
print("OK: matches NumPy")
