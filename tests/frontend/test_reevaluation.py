"""Values asked for outside pa.jit in a Python loop compute no work twice
(``polyarray/reevaluation.py``): the live arrays that reach work computed
before are rebound to their values, so a loop's DAG stays one iteration or
two deep, and the answers are NumPy's."""
from __future__ import annotations

import numpy as np
import pytest

import polyarray as pa
from polyarray.ir import nodes as N
from helpers import assert_same


def _relax(lib, u, tol, limit=200):
    """A Python while loop on a value computed from the arrays (NPBench's
    channel_flow pattern)."""
    diff, steps = 1.0, 0
    while diff > tol and steps < limit:
        un = u.copy()
        u = 0.5 * un + 0.25 * (lib.roll(un, 1) + lib.roll(un, -1))
        diff = lib.sum(lib.abs(u - un)) / lib.sum(lib.abs(u))
        steps += 1
    return u, steps


def _size(x):
    return len(N.topological_order([x.node]))


def test_a_while_loop_on_values_keeps_its_dag_shallow(target):
    u0 = np.random.default_rng(0).random(300)
    want, want_steps = _relax(np, u0.copy(), 1e-3)
    sizes = []

    class Lib:                      # polyarray, recording the DAG each iteration built
        roll, abs = staticmethod(pa.roll), staticmethod(pa.abs)

        @staticmethod
        def sum(x):
            sizes.append(_size(x))
            return pa.sum(x)
    with pa.target(target):
        got, steps = _relax(Lib, pa.asarray(u0.copy()), 1e-3)
        assert steps == want_steps > 20
        assert_same(got.evaluate(), want)
    # the DAG summed is at most two iterations deep (it grows by 7 nodes an
    # iteration when nothing is rebound)
    assert max(sizes) <= 2 * max(sizes[:2]), sizes


def _fresh(n):
    """Data no other test made (nodes are interned: equal DAGs are one)."""
    return np.random.default_rng().random(n)


def test_asking_once_keeps_the_whole_dag():
    """The first value asked for of a DAG rebinds nothing: the intermediates
    keep their expressions (one fused program, inspectable)."""
    a = _fresh(6)
    x = pa.asarray(a)
    y = x * 2
    z = y + 1
    assert np.isclose(float(pa.sum(z)), (a * 2 + 1).sum())
    assert isinstance(y.node, N.IndexLambda) and isinstance(z.node, N.IndexLambda)


def test_asking_again_rebinds_the_live_arrays_that_reach_computed_work():
    a = _fresh(6)
    x = pa.asarray(a)
    y = x * 2
    float(pa.sum(y))                         # computes y's work
    z = y + 1                                # reaches it
    w = pa.asarray(_fresh(3)) * 3            # does not
    float(pa.sum(z))
    assert isinstance(y.node, N.DataWrapper) and isinstance(z.node, N.DataWrapper)
    assert isinstance(w.node, N.IndexLambda)
    assert_same(np.asarray(y), a * 2)
    assert_same(np.asarray(z), a * 2 + 1)


def test_views_shared_variables_and_placeholders_are_not_rebound():
    a = _fresh(6)
    x = pa.asarray(a)
    y = x * 2
    float(pa.sum(y))
    v = y[1:]                                # a view of y: follows its root
    s = pa.shared(np.ones(6), name="s")
    t = s * y                                # reads a shared variable: its value
    p = pa.placeholder("p", (6,), np.float64) + y     # reads an unbound placeholder
    float(pa.sum(y + 1))
    assert isinstance(y.node, N.DataWrapper)
    assert_same(np.asarray(v), a[1:] * 2)
    assert not isinstance(t.node, N.DataWrapper) and not isinstance(p.node, N.DataWrapper)
    s.set_value(np.full(6, 2.0))             # t follows the variable, as before
    assert_same(np.asarray(t), a * 4)


@pytest.mark.parametrize("mode", ["mask", "nonzero"])
def test_eager_functions_ask_through_the_same_path(mode):
    """Boolean masks and eager functions (nonzero) in a loop (NPBench's
    azimint_naive): NumPy's values, and the maximum that every mask reads is
    computed once, then read as data."""
    data = np.random.default_rng(1).random(200)
    radius = np.random.default_rng(2).random(200)
    d, r = pa.asarray(data), pa.asarray(radius)
    rmax = r.max()
    got, want = pa.zeros(20), np.zeros(20)
    for i in range(20):
        m = pa.logical_and(rmax * i / 20 <= r, r < rmax * (i + 1) / 20)
        got[i] = (d[m] if mode == "mask" else d[pa.nonzero(m)[0]]).mean()
        mask = np.logical_and(radius.max() * i / 20 <= radius, radius < radius.max() * (i + 1) / 20)
        want[i] = data[mask].mean()
    assert isinstance(rmax.node, N.DataWrapper)
    assert_same(np.asarray(got), want)


def _cholesky(lib, A):
    """NPBench's cholesky: element-by-element writes over shrinking slices."""
    A[0, 0] = lib.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= lib.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= lib.dot(A[i, :i], A[i, :i])
        A[i, i] = lib.sqrt(A[i, i])


def test_element_by_element_code_is_computed_on_the_host(device_target, caplog):
    """More single-element writes than reevaluation.MAX_ELEMENT_WRITES since
    the last value: NumPy computes it on the host (a WARNING naming the
    line), NumPy's answer."""
    from polyarray import reevaluation
    n = 48
    m = np.random.default_rng(3).random((n, n))
    a0 = m @ m.T + n * np.eye(n)
    want = a0.copy()
    _cholesky(np, want)
    assert n * n // 2 > reevaluation.MAX_ELEMENT_WRITES
    with pa.target(device_target), caplog.at_level("WARNING", logger="polyarray"):
        A = pa.asarray(a0.copy())
        _cholesky(pa, A)
        got = np.asarray(A)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert "computed with NumPy on the host" in caplog.text and "single-element" in caplog.text


def test_a_program_new_at_one_line_again_and_again_is_computed_on_the_host(
        device_target, caplog, monkeypatch):
    """An index baked into each iteration's program (a slice bound from the
    loop): past MAX_PROGRAMS_PER_LINE new programs at one line, the host."""
    from polyarray import reevaluation
    monkeypatch.setattr(reevaluation, "MAX_PROGRAMS_PER_LINE", 3)
    monkeypatch.setattr(reevaluation, "SMALL_WORK", 0)     # not the small values' path
    x0 = _fresh(40)
    x = pa.asarray(x0)
    got, want = [], []
    with pa.target(device_target), caplog.at_level("WARNING", logger="polyarray"):
        for k in range(1, 8):
            got.append(float(pa.sum(x[:k] * 3.0 + 0.5 * k)))
            want.append(float(np.sum(x0[:k] * 3.0 + 0.5 * k)))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert caplog.text.count("computed with NumPy on the host") == 1
    assert "for the 4th time" in caplog.text



def test_small_values_of_host_data_are_computed_by_numpy(device_target, monkeypatch):
    """A value of host data alone that computes little (``A_row[i]``, a dot
    of a few elements: spmv's loop) is computed by the NumPy target, not
    launched and copied back; larger work and device data go to the device
    target.  NumPy's answers either way."""
    from polyarray import reevaluation
    used = []
    real = reevaluation.compile_

    def compile_(outputs, target=None, **options):
        used.append(target)
        return real(outputs, target=target, **options)
    monkeypatch.setattr(reevaluation, "compile_", compile_)
    rng = np.random.default_rng(7)
    rows, vals = np.array([0, 3, 7, 12]), rng.random(12)
    with pa.target(device_target):
        r, v = pa.asarray(rows), pa.asarray(vals)
        got = [float((v[int(r[i]):int(r[i + 1])] * 2).sum()) for i in range(3)]
        assert set(used) == {"numpy"}, used
        big0 = rng.random(100_000)
        total = float((pa.asarray(big0) * 2).sum())
    assert got == [float((vals[rows[i]:rows[i + 1]] * 2).sum()) for i in range(3)]
    assert used[-1] == device_target
    np.testing.assert_allclose(total, (big0 * 2).sum(), rtol=1e-12)


def test_values_of_host_data_in_a_jit_trace_are_computed_by_numpy(device_target, monkeypatch):
    """Inside a pa.jit trace a value that reads none of the call's arguments
    is a constant of the trace: the NumPy target computes it, not a device
    program built for each new shape (mandelbrot2's loop, which shrinks its
    arrays by a mask at every step, built one per step)."""
    from polyarray import reevaluation
    used, real = [], reevaluation.compile_

    def recording(outputs, target=None, **options):
        used.append(target)
        return real(outputs, target=target, **options)
    monkeypatch.setattr(reevaluation, "compile_", recording)

    def shrinking(x, steps):
        z = np.arange(64.0) * 0.5           # made in the trace, from no argument: lazy
        for i in range(steps):
            z = z[z > i]                    # a new shape each step, known from the values
        return x + z.sum()

    f = pa.jit(shrinking, static_argnums=(1,), target=device_target)
    x = np.ones(3)
    want = shrinking(x, 6)
    assert_same(f(x, 6), want)
    assert used and set(used) == {"numpy"}, used
