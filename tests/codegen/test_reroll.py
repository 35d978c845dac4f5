"""Sums written as Python loops run as reductions on the device targets
(``codegen/plan/reroll.py``): NumPy's results (floats within the usual
tolerance, integers exactly), one reduction kernel instead of one
statement per step, and chains that are not such sums left as written."""
from __future__ import annotations

import numpy as np
import pytest

import polyarray as pa
from helpers import assert_same
from polyarray.ir import nodes as N


def go_fast(a):
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


def _reductions(prog):
    return [n for n in N.topological_order([a.node for a in prog.all_outputs])
            if isinstance(n, N.Reduce)]


def test_a_loop_summing_a_diagonal_is_one_reduction(device_target):
    a = np.random.default_rng(0).random((300, 300))
    f = pa.jit(go_fast, target=device_target)
    assert_same(f(a), go_fast(a))
    x = pa.asarray(a)
    trace = 0.0
    for i in range(300):
        trace += pa.tanh(x[i, i])
    prog = pa.compile(x + trace, target=device_target)
    red, = _reductions(prog)
    assert red.array.shape == (299,)         # the first term is the chain's base
    assert len(prog.source) < 20_000, len(prog.source)
    assert_same(np.asarray(prog()), go_fast(a))


def test_the_numpy_target_runs_the_loop_as_written():
    x = pa.asarray(np.arange(40.0))
    s = 0.0
    for i in range(40):
        s = s + x[i] * 2
    prog = pa.compile(s, target="numpy")
    assert prog.outputs.node is s.node and not _reductions(prog)
    assert float(prog()) == float(np.arange(40.0).sum() * 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8])
def test_vector_terms_alternating_kinds_and_subtraction(target, dtype):
    """``s = s + A[i] * 3 - B[:, 2 * i + 1]``: two kinds of term alternate;
    integer sums wrap exactly as NumPy's left-to-right adds do."""
    rng = np.random.default_rng(1)
    A = rng.integers(0, 100, (24, 5)).astype(dtype)
    B = rng.integers(0, 100, (5, 50)).astype(dtype)

    def f(A, B):
        s = A[0] * 0
        for i in range(24):
            s = s + A[i] * 3 - B[:, 2 * i + 1]
        return s
    got = pa.jit(f, target=target)(A, B)
    with np.errstate(over="ignore"):
        want = f(A, B)
    assert got.dtype == want.dtype
    assert_same(got, want)
    if target != "numpy":
        x, y = pa.asarray(A), pa.asarray(B)
        assert len(_reductions(pa.compile(f(x, y), target=target))) == 2


def test_slices_of_a_moving_window(device_target):
    x = np.random.default_rng(2).random(100).astype(np.float32)

    def f(x):
        s = np.zeros(4, np.float32)
        for i in range(0, 90, 3):
            s += x[i:i + 4] * x[i + 1]
        return s
    got = pa.jit(f, target=device_target)(x)
    assert_same(got, f(x))
    v, s = pa.asarray(x), pa.zeros(4, np.float32)
    for i in range(0, 90, 3):
        s = s + v[i:i + 4] * v[i + 1]
    assert len(_reductions(pa.compile(s, target=device_target))) == 1


def test_chains_that_are_not_such_sums_stay_as_written(device_target):
    """Constants that are not affine in the step, a term that reads the
    running sum, partial sums read elsewhere, and short loops: each
    computed as written, and right."""
    a = np.random.default_rng(3).random(200)
    x = pa.asarray(a)
    s = 0.0
    for i in range(12):
        s = s + x[i * i]                # not affine: no reduction
    t = 1.0
    for i in range(12):
        t = t + t * x[i]                # the term reads the running sum
    parts, u = [], 0.0
    for i in range(12):
        u = u + x[i]
        parts.append(u)                 # every partial sum is an output
    w = 0.0
    for i in range(5):
        w = w + x[i]                    # fewer terms than MIN_TERMS
    prog = pa.compile([s, t, w] + parts, target=device_target)
    assert not _reductions(prog)
    got = [np.asarray(r) for r in prog()]
    want_s = sum(a[i * i] for i in range(12))
    want_t = 1.0
    for i in range(12):
        want_t = want_t + want_t * a[i]
    assert_same(got[0], np.float64(want_s))
    assert_same(got[1], np.float64(want_t))
    assert_same(got[2], np.float64(a[:5].sum()))
    assert_same(np.array(got[3:]), np.cumsum(a[:12]))


def test_a_sum_of_sums(device_target):
    """A loop over rows whose body is itself a loop: the inner sums roll up;
    the outer chain adds a different reduction each step and stays."""
    a = np.random.default_rng(4).random((10, 30))
    x = pa.asarray(a)
    total = 0.0
    for i in range(10):
        row = 0.0
        for j in range(30):
            row = row + x[i, j] * 2
        total = total + row
    prog = pa.compile(total, target=device_target)
    assert len(_reductions(prog)) == 10
    assert_same(np.asarray(prog()), np.float64((a * 2).sum()))


def test_rerolling_is_deterministic():
    x = pa.asarray(np.arange(64.0))

    def build():
        s = 0.0
        for i in range(64):
            s = s + pa.sin(x[63 - i])
        return s
    from polyarray.codegen.plan.reroll import reroll_sums
    one, = reroll_sums([build().node])
    two, = reroll_sums([build().node])
    assert one is two and one.digest == two.digest
