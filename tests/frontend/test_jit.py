"""``pa.jit``: plain NumPy functions, unchanged, traced once per
signature and compiled for the target; they agree with NumPy."""
from __future__ import annotations

import math

import numpy as np
import pytest

import polyarray as pa
from helpers import assert_same


def backprop(X, W, delta_o, h):
    delta_h = np.dot(delta_o, W) * h * (1.0 - h)
    grad_W = np.dot(X.T, delta_h)
    return grad_W, delta_h


def logreg_step(X, y, w, lr):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return w - lr * (X.T @ (p - y)) / X.shape[0]


def hermite(X, N):
    """The Hermite recurrence as written with NumPy, with ``stack``."""
    cols = [np.ones_like(X), X]
    for i in range(2, N):
        cols.append(X * cols[i - 1] - (i - 1) * cols[i - 2])
    out = np.stack(cols, axis=1)
    c, scale = 1.0, [1.0, 1.0]
    for i in range(2, N):
        c *= i
        scale.append(1.0 / math.sqrt(c))
    return out * np.array(scale)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    f = np.float32
    return dict(X=rng.standard_normal((64, 10)).astype(f), W=rng.standard_normal((8, 12)).astype(f),
                delta_o=rng.standard_normal((64, 8)).astype(f), h=rng.random((64, 12)).astype(f),
                y=(rng.random(64) < 0.5).astype(f), xs=rng.standard_normal(100))


def test_numpy_functions_run_unchanged(target, data):
    d = data
    got = pa.jit(backprop, target=target)(d["X"], d["W"], d["delta_o"], d["h"])
    assert isinstance(got, tuple) and all(isinstance(g, np.ndarray) for g in got)
    for g, e in zip(got, backprop(d["X"], d["W"], d["delta_o"], d["h"])):
        assert_same(g, e)
    step = pa.jit(logreg_step, target=target)
    w, wr = np.zeros(10, np.float32), np.zeros(10, np.float32)
    for _ in range(3):
        w, wr = step(d["X"], d["y"], w, 0.5), logreg_step(d["X"], d["y"], wr, 0.5)
    assert_same(w, wr)
    assert len(step.programs) == 1                  # one signature, one program
    herm = pa.jit(hermite, static_argnums=1, target=target)
    assert_same(herm(d["xs"], 6), hermite(d["xs"], 6))
    assert_same(herm(d["xs"], 4), hermite(d["xs"], 4))
    assert len(herm.programs) == 2                  # a static value per program


def test_signatures_and_static_arguments():
    calls = []

    @pa.jit(static_argnames="axis", target="numpy")
    def norm(x, axis, scale=2.0):
        calls.append(1)
        return np.sqrt(np.sum(x * x, axis=axis)) * scale
    x = np.arange(12.0).reshape(3, 4)
    assert_same(norm(x, 0), np.sqrt((x * x).sum(0)) * 2.0)
    assert_same(norm(x, 1), np.sqrt((x * x).sum(1)) * 2.0)
    norm(x + 1, 1)
    norm(x.astype(np.float32), 1)
    assert len(calls) == 3                          # (0), (1), and float32
    assert_same(norm(x, axis=1, scale=3), np.sqrt((x * x).sum(1)) * 3)
    prog = norm.lower(x, 1)
    assert isinstance(prog, pa.Program) and "sqrt" in repr(prog.outputs[0])
    with pytest.raises(ValueError, match="static_argnames 'ax' is not an argument"):
        pa.jit(lambda x, axis: x, static_argnames="ax")
    with pytest.raises(TypeError, match="static argument axis must be hashable"):
        norm(x, [1])


def test_containers_and_python_scalars_in_and_out():
    @pa.jit(target="numpy")
    def f(params, x, k):
        return {"y": params["w"] * x + params["b"], "k": x * k}, [x.sum()]
    p = {"w": np.float32(2) * np.ones(3, np.float32), "b": np.ones(3, np.float32)}
    x = np.arange(3, dtype=np.float32)
    (out, rest) = f(p, x, 3)
    assert_same(out["y"], p["w"] * x + p["b"])
    assert_same(out["k"], x * 3)                    # a Python scalar: NumPy's promotion
    assert_same(rest[0], x.sum())


def test_branching_on_a_traced_value_names_the_line():
    def f(x):
        if x.sum() > 0:
            return x
        return -x
    with pytest.raises(pa.LazyValueError, match=r"test_jit.py:\d+: if x.sum\(\) > 0:"):
        pa.jit(f, target="numpy", graph_breaks=False)(np.ones(3))
    with pytest.raises(TypeError, match="argument x is a str"):
        pa.jit(lambda x: x, target="numpy")("abc")


def test_arguments_the_outputs_do_not_read():
    f = pa.jit(lambda x, y: np.zeros_like(x) + 1, target="numpy")
    assert_same(f(np.ones(3), np.ones(2)), np.ones(3))


def _escape_times(n, steps):
    """mandelbrot2's loop (NPBench): complex steps over the points still
    bounded, a scatter of the step count where they escape, selections that
    shrink at every step; every argument a Python number (``n`` a multiple
    of 8)."""
    z = np.zeros(n, np.complex128)
    c = np.linspace(-2.0, 0.5, n) + 0.3j
    out, idx = np.zeros(n, np.int64), np.arange(n)
    for i in range(steps):
        np.multiply(z, z, z)
        np.add(z, c, z)
        gone = abs(z) > 2.0
        out[idx[gone]] = i + 1
        keep = ~gone
        z, c, idx = z[keep], c[keep], idx[keep]
    return out.reshape(8, -1).T, z          # (a view, as mandelbrot2's transposes)


def test_results_of_no_argument_are_constants_of_the_trace(target):
    """Results that read no argument are computed once, by NumPy, when the
    function is traced (as values of host data asked for inside a trace
    are): no device program of a kernel per step of the loop, and NumPy's
    values at every call."""
    f = pa.jit(_escape_times, target=target)
    for _ in range(2):
        for g, e in zip(f(96, 14), _escape_times(96, 14)):
            assert_same(g, e)
    (trace,) = f.programs.values()
    assert trace.program is not None and not trace.program.kernels



def _constant_twice(u, n):
    t = np.where(4 >= 2.0, np.arange(3.0) // 2, 2)
    return t, t, t.T


def test_a_constant_result_returned_twice_and_as_a_view(target):
    """A result of no argument returned twice beside its view: each is the
    constant's value (the second of the same array raised KeyError once its
    node had been rebound to the constant)."""
    f = pa.jit(_constant_twice, target=target)
    u = np.array([-3.0, -0.25])
    for _ in range(2):
        for g, e in zip(f(u, 3), _constant_twice(u, 3)):
            assert_same(np.asarray(g), e)

def test_a_device_result_captured_by_a_traced_function(device_target):
    """A device result (``out="device"``) that a traced function reads
    through ``pa.asarray`` gives its values: a host copy on OpenCL, whose
    arrays bind in place only to placeholders (the checked subclass of the
    OpenCL target's results was refused as an object array)."""
    x = pa.placeholder("x", (64,), np.float32)
    on_device = pa.compile(x * 1, target=device_target, out="device")(
        x=np.arange(64, dtype=np.float32))
    assert_same(np.asarray(pa.asarray(on_device)), np.arange(64, dtype=np.float32))

    def f(k):
        return pa.asarray(on_device) * k + 1

    g = pa.jit(f, target=device_target)
    for _ in range(2):
        assert_same(np.asarray(g(3.0)), np.arange(64, dtype=np.float32) * 3 + 1)
