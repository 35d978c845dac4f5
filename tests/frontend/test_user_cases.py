"""User-style programs on every device target: the autoencoder gradient,
logistic regression with the weights kept on the device between steps,
logsumexp, the Hermite recurrence, and device out-of-memory behaviour."""
import gc

import numpy as np
import pytest

import polyarray as pa
from polyarray import targets
from helpers import assert_same


def to_device(target, arr):
    """Upload through the target itself: an identity program with device output."""
    x = pa.placeholder("v", arr.shape, arr.dtype)
    return pa.compile(x, target=target, out="device")(v=arr)


def test_gradient(device_target):
    rng = np.random.default_rng(0)
    n, nv, nh = 96, 40, 24
    X, z = rng.random((n, nv), dtype=np.float32), rng.random((n, nv), dtype=np.float32)
    h, W = rng.random((n, nh), dtype=np.float32), rng.standard_normal((nv, nh)).astype(np.float32)
    Xp, zp, hp = (pa.placeholder(k, v.shape, np.float32) for k, v in [("X", X), ("z", z), ("h", h)])
    g = pa.dot(Xp.T, pa.dot(-(Xp - zp), pa.array(W)) * hp * (1.0 - hp))
    got = pa.compile(g, target=device_target)(X=X, z=z, h=h)
    assert_same(got, X.T @ ((-(X - z) @ W) * h * (1.0 - h)))


def test_logistic_regression_weights_stay_on_device(device_target):
    rng = np.random.default_rng(1)
    N, F = 400, 784
    X = rng.standard_normal((N, F)).astype(np.float32)
    y = (rng.random(N) > 0.5).astype(np.float32)
    Xp, yp = pa.placeholder("X", (N, F), np.float32), pa.placeholder("y", (N,), np.float32)
    w, b = pa.placeholder("w", (F,), np.float32), pa.placeholder("b", (), np.float32)
    p1 = 1.0 / (1.0 + pa.exp(-(Xp @ w) - b))
    g = p1 - yp
    step = pa.compile({"w": w - 0.01 * (Xp.T @ g) / N, "b": b - 0.01 * g.mean()},
                      target=device_target, out="device")
    Xd, yd = to_device(device_target, X), to_device(device_target, y)
    wd, bd = to_device(device_target, np.zeros(F, np.float32)), \
        to_device(device_target, np.zeros((), np.float32))
    wn, bn = np.zeros(F, np.float32), np.float32(0)
    for _ in range(50):
        out = step(X=Xd, y=yd, w=wd, b=bd)
        wd, bd = out["w"], out["b"]            # device arrays fed straight back
        pn = 1 / (1 + np.exp(-(X @ wn) - bn))
        gn = pn - y
        wn, bn = wn - np.float32(0.01) * (X.T @ gn) / N, bn - np.float32(0.01) * gn.mean()
    # a driver array (a subclass that reads deferred checks: deferred_checks.py)
    assert any(c.__module__ in ("pyopencl.array", "pycuda.gpuarray")
               for c in type(wd).__mro__), type(wd).__mro__
    np.testing.assert_allclose(wd.get(), wn, rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(bd.get(), bn, rtol=1e-3, atol=1e-6)


def test_device_array_calls_check_bindings_on_every_path(device_target):
    """Calls with device arrays take the target's generated fast path (CUDA)
    after the first call; any mistake still gets the general path's error."""
    rng = np.random.default_rng(4)
    xv, yv = (rng.standard_normal(16).astype(np.float32) for _ in range(2))
    x, y = pa.placeholder("x", (16,), np.float32), pa.placeholder("y", (16,), np.float32)
    prog = pa.compile({"s": x * 2.0 + y, "t": x - y}, target=device_target, out="device")
    xd, yd = to_device(device_target, xv), to_device(device_target, yv)
    for _ in range(3):
        out = prog(x=xd, y=yd)
        assert_same(out["s"].get(), xv * np.float32(2) + yv)
        assert_same(out["t"].get(), xv - yv)
    if device_target == "cuda":
        assert prog._exe.fast_call is not None
    assert_same(prog(x=xv, y=yd)["t"].get(), xv - yv)      # host and device mixed
    with pytest.raises(TypeError, match="'x' has the wrong dtype: expected float32, got float64"):
        prog(x=to_device(device_target, xv.astype(np.float64)), y=yd)
    with pytest.raises(ValueError, match=r"'y' has the wrong shape: expected \(16,\), got \(8,\)"):
        prog(x=xd, y=to_device(device_target, yv[:8]))
    with pytest.raises(TypeError, match="missing binding for placeholder 'y'"):
        prog(x=xd)
    with pytest.raises(TypeError, match="unexpected binding 'z'"):
        prog(x=xd, y=yd, z=yd)
    with pytest.raises(TypeError, match="binding for placeholder 'x' must be an array"):
        prog(x="1.0", y=yd)
    assert_same(prog(x=[1.0] * 16, y=yd)["t"].get(), 1 - yv)    # a list: converted
    assert_same(prog(x=xd, y=yd)["s"].get(), xv * np.float32(2) + yv)


def test_logsumexp(device_target):
    x = pa.placeholder("x", (64, 1000), np.float64)
    m = x.max(axis=1, keepdims=True)
    lse = pa.log(pa.exp(x - m).sum(axis=1)) + m[:, 0]
    xv = np.random.default_rng(2).standard_normal((64, 1000)) * 30
    mv = xv.max(axis=1, keepdims=True)
    assert_same(pa.compile(lse, target=device_target)(x=xv),
                np.log(np.exp(xv - mv).sum(axis=1)) + mv[:, 0])


def test_hermite_recurrence(device_target):
    rows, N = 20000, 16
    x = pa.placeholder("x", (rows, 1), np.float32)
    H = [pa.ones_like(x), 2.0 * x]
    for k in range(1, N - 1):
        H.append(2.0 * x * H[k] - 2.0 * k * H[k - 1])
    out = pa.concatenate(H, axis=1)
    xv = np.random.default_rng(3).uniform(-1, 1, (rows, 1)).astype(np.float32)
    Hn = [np.ones_like(xv), 2 * xv]
    for k in range(1, N - 1):
        Hn.append(np.float32(2) * xv * Hn[k] - np.float32(2 * k) * Hn[k - 1])
    prog = pa.compile(out, target=device_target)
    assert len(prog.kernels) == 1
    assert_same(prog(x=xv), np.concatenate(Hn, axis=1))


_cuda_ok, _cuda_why = targets.availability("cuda")


@pytest.mark.skipif(not _cuda_ok, reason=f"cuda: {_cuda_why}")
def test_out_of_memory_is_a_clear_error_and_leaks_nothing():
    x = pa.placeholder("x", (1024,), np.float32)
    small = pa.compile(x * 2.0, target="cuda")
    small(x=np.ones(1024, np.float32))
    gc.collect()        # arrays of earlier tests in reference cycles (tracebacks)
    before = pa.memory_stats("cuda")["active_blocks"]
    assert "held_blocks" in pa.memory_stats("cuda")
    huge = pa.compile(pa.broadcast_to(x[:1], (300 * 2**30 // 4,)) + 1.0, target="cuda")
    with pytest.raises(MemoryError, match=r"could not allocate \d+ bytes"):
        huge(x=np.ones(1024, np.float32))
    assert pa.memory_stats("cuda")["active_blocks"] == before
    assert all(k.loopy_kernel is not None for k in small.kernels.values())
    np.testing.assert_array_equal(small(x=np.ones(1024, np.float32)), 2 * np.ones(1024))
