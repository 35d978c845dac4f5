"""``pa.fori_loop`` and ``pa.while_loop``: JAX's signatures, NumPy's
results, the body compiled once whatever the trip count, inside and outside
``pa.jit``; the errors JAX gives for a body that changes the carry."""
from __future__ import annotations

import numpy as np
import pytest

import polyarray as pa
from helpers import assert_same


def _heat_numpy(u, steps, k=0.1):
    for _ in range(steps):
        u = u + k * (np.roll(u, 1) - 2 * u + np.roll(u, -1))
    return u


def heat(u, steps):
    def body(i, u):
        return u + 0.1 * (np.roll(u, 1) - 2 * u + np.roll(u, -1))
    return pa.fori_loop(0, steps, body, u)


def test_fori_loop_matches_the_python_loop(target):
    u = np.random.default_rng(0).random(64)
    with pa.target(target):
        got = pa.fori_loop(0, 30, lambda i, v: v + 0.1 * (pa.roll(v, 1) - 2 * v + pa.roll(v, -1)),
                           pa.asarray(u))
    assert_same(np.asarray(got), _heat_numpy(u, 30))


def test_inside_jit_the_body_compiles_once(target):
    f = pa.jit(heat, target=target, static_argnames="steps")
    u = np.random.default_rng(1).random(64)
    assert_same(f(u, steps=10), _heat_numpy(u, 10))
    compiled = len(f.segment_programs)
    assert_same(f(u, steps=200), _heat_numpy(u, 200))     # another trip count
    assert len(f.segment_programs) == compiled
    assert "pa.fori_loop runs" not in f.report() and "fori_loop(0, steps" in f.report()


def test_the_index_the_carry_structure_and_closed_over_arrays(target):
    def f(x, w):
        def body(i, carry):
            acc, total = carry["acc"], carry["total"]
            return {"acc": acc * w + i, "total": total + acc.sum()}
        return pa.fori_loop(2, 7, body, {"acc": x, "total": np.float64(0)})

    def f_numpy(x, w):
        acc, total = x, np.float64(0)
        for i in range(2, 7):
            acc, total = acc * w + i, total + acc.sum()
        return {"acc": acc, "total": total}
    x, w = np.arange(4.0), np.array([0.5, 1.0, 1.5, 2.0])
    got, want = pa.jit(f, target=target)(x, w), f_numpy(x, w)
    assert_same(got["acc"], want["acc"])
    assert_same(got["total"], want["total"])


def newton(a):
    def cond(c):
        x, it = c
        return (np.abs(x * x - a).max() > 1e-12) & (it < 100)

    def body(c):
        x, it = c
        return 0.5 * (x + a / x), it + 1
    return pa.while_loop(cond, body, (np.ones_like(a), np.int64(0)))


def test_while_loop(target):
    a = np.array([2.0, 3.0, 4.0, 5.0])
    x, iterations = pa.jit(newton, target=target)(a)
    assert_same(x, np.sqrt(a))
    want_it, xs = 0, np.ones_like(a)
    while np.abs(xs * xs - a).max() > 1e-12 and want_it < 100:
        xs, want_it = 0.5 * (xs + a / xs), want_it + 1
    assert int(iterations) == want_it


def test_a_graph_break_after_a_loop_computes_only_the_functions_arrays(target):
    def f(B, y):
        t = pa.while_loop(lambda v: v.sum() < 6.75, lambda v: v + 1, y)
        y[...] = t
        B[B >= 0.5] *= y                 # a mask from the data: a graph break
        u = pa.fori_loop(0, 3, lambda i, v: v * 0.5 + 1, B)
        return u[u > 1]                  # another break, after a fori_loop

    def f_numpy(B, y):
        while y.sum() < 6.75:
            y += 1
        B[B >= 0.5] *= y
        u = B.copy()
        for _ in range(3):
            u = u * 0.5 + 1
        return u[u > 1]
    B = np.array([-3.0, 3.25, 3.75, 2.0, -0.75, 2.75], np.float32)
    y = np.array([-2.0, 3.75, -1.0, 2.5], np.float32)
    B2, y2 = B.copy(), y.copy()
    got, want = pa.jit(f, target=target)(B, y), f_numpy(B2, y2)
    assert_same(got, want)
    assert_same(B, B2)
    assert_same(y, y2)


def test_a_0d_result_is_an_array(target):
    def f(B):
        t = np.zeros((), np.int64)
        np.sum(B, axis=0, out=t)
        u = pa.fori_loop(0, 3, lambda i, v: v + i, t)
        u[...] |= 8                      # written in place, as NumPy's 0-d arrays
        w = u
        u += 1
        return u, w
    got = pa.jit(f, target=target)(np.arange(6.0))
    assert_same(got[0], np.array(27))
    assert_same(got[1], np.array(27))


def test_a_body_that_changes_the_carry_is_refused():
    x = pa.asarray(np.zeros(3))
    with pytest.raises(TypeError, match=r"body_fun's result val is float64\[2\].*float64\[3\]"):
        pa.fori_loop(0, 2, lambda i, v: v[:2], x)
    with pytest.raises(TypeError, match="int64.*float64"):
        pa.fori_loop(0, 2, lambda i, v: (v > 0).astype(np.int64), x)
    with pytest.raises(TypeError, match="structure"):
        pa.fori_loop(0, 2, lambda i, v: (v, v), x)
    with pytest.raises(TypeError, match="boolean scalar"):
        pa.while_loop(lambda v: v > 0, lambda v: v, x)
    with pytest.raises(TypeError, match="must be an integer"):
        pa.fori_loop(0.0, 2, lambda i, v: v, x)


def test_outside_jit_unbound_placeholders_are_refused():
    p = pa.placeholder("p", (3,))
    with pytest.raises(pa.LazyValueError, match="initial value"):
        pa.fori_loop(0, 2, lambda i, v: v + 1, p)
    x = pa.asarray(np.zeros(3))
    with pytest.raises(pa.LazyValueError, match="unbound placeholder.*'p'"):
        pa.fori_loop(0, 2, lambda i, v: v + p, x)
