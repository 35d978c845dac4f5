"""Loops whose rows build on the rows before run as one recurrence kernel on
the device targets (``codegen/plan/recurrence.py``): NumPy's results
(floats within the usual tolerance, integers exactly), one ``Recurrence``
node instead of one node per step, and loops that are not such
recurrences left as written."""
from __future__ import annotations

import io

import numpy as np
import pytest

import polyarray as pa
from helpers import assert_same
from polyarray.ir import nodes as N


def _recurrences(prog):
    return [n for n in N.topological_order([a.node for a in prog.all_outputs])
            if isinstance(n, N.Recurrence)]


def smooth(x, a, b):
    """Deriche's four passes: along the columns both ways, then the rows."""
    y1 = np.empty_like(x)
    y1[:, 0] = a * x[:, 0]
    y1[:, 1] = a * x[:, 1] + b * y1[:, 0]
    for j in range(2, x.shape[1]):
        y1[:, j] = a * x[:, j] + 0.3 * x[:, j - 1] + b * y1[:, j - 1] - 0.2 * y1[:, j - 2]
    y2 = np.empty_like(x)
    y2[:, -1] = 0.0
    y2[:, -2] = a * x[:, -1]
    for j in range(x.shape[1] - 3, -1, -1):
        y2[:, j] = a * x[:, j + 1] + b * y2[:, j + 1] - 0.2 * y2[:, j + 2]
    out = y1 + y2
    z = np.empty_like(x)
    z[0, :] = out[0, :]
    for i in range(1, x.shape[0]):
        z[i, :] = out[i, :] * a + b * z[i - 1, :]
    return z


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_column_and_row_recurrences(target, dtype):
    x = np.random.default_rng(0).random((37, 41)).astype(dtype)
    a, b = dtype(0.5), dtype(0.25)
    got = pa.jit(smooth, target=target)(x, a, b)
    assert_same(got, smooth(x, a, b))
    if target != "numpy":
        v = pa.asarray(x)
        prog = pa.compile(smooth(v, a, b), target=target)
        assert len(_recurrences(prog)) == 3
        assert len(prog.source) < 40_000, len(prog.source)
        assert_same(np.asarray(prog()), smooth(x, a, b))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_integer_recurrences_are_exact(target, dtype):
    """Wrapping arithmetic, row for row as NumPy's."""
    x = np.random.default_rng(1).integers(0, 100, (12, 30)).astype(dtype)

    def f(x):
        y = x.copy()
        for j in range(1, 30):
            y[:, j] = y[:, j - 1] * 3 + x[:, j]
        return y
    with np.errstate(over="ignore"):
        want = f(x)
    got = pa.jit(f, target=target)(x)
    assert got.dtype == want.dtype
    assert_same(got, want)
    if target != "numpy":
        assert len(_recurrences(pa.compile(f(pa.asarray(x)), target=target))) == 1


def test_a_recurrence_of_scalars(device_target):
    """``x[i] = x[i - 1] * c + b[i]``: rows of no element (0-d steps)."""
    b = np.random.default_rng(2).random(50)

    def f(b):
        x = np.zeros_like(b)
        x[0] = b[0]
        for i in range(1, 50):
            x[i] = x[i - 1] * 0.9 + b[i]
        return x
    got = pa.jit(f, target=device_target)(b)
    assert_same(got, f(b))
    assert len(_recurrences(pa.compile(f(pa.asarray(b)), target=device_target))) == 1


def test_steps_read_after_the_loop_and_strided_inputs(device_target):
    """Values of single steps read later (``y[:, 5]``), inputs read at a
    stride and offset affine in the step, and a recurrence that is a
    function argument updated in place."""
    rng = np.random.default_rng(3)
    x, y0 = rng.random((9, 80)), rng.random((9, 30))

    def f(x, y):
        for j in range(2, 30):
            y[:, j] = np.sin(y[:, j - 2]) * 0.5 + x[:, 2 * j + 3]
        return y[:, 5] * 2 + y[:, 29]
    ya, yb = y0.copy(), y0.copy()
    want = f(x, ya)
    got = pa.jit(f, target=device_target)(x, yb)
    assert_same(got, want)
    assert_same(yb, ya)


def test_loops_that_are_not_such_recurrences_stay_as_written(device_target):
    """A step reading the row before at another element (a work-item would
    read what another wrote), a short loop, and constants that are not
    affine in the step: computed as written, and right."""
    x = np.random.default_rng(4).random((10, 130))

    def shifted(x):
        y = x.copy()
        for j in range(1, 40):
            y[:, j] = y[::-1, j - 1] * 0.5 + x[:, j]
        return y

    def short(x):
        y = x.copy()
        for j in range(1, 6):
            y[:, j] = y[:, j - 1] * 0.5 + x[:, j]
        return y

    def squares(x):
        y = x.copy()
        for j in range(1, 11):
            y[:, j * j] = y[:, j * j - 1] * 0.5 + x[:, j]
        return y
    for f in (shifted, short, squares):
        v = pa.asarray(x)
        prog = pa.compile(f(v), target=device_target)
        assert not _recurrences(prog), f.__name__
        assert_same(np.asarray(prog()), f(x))


def test_the_numpy_target_runs_the_loop_as_written():
    x = np.random.default_rng(5).random((4, 20))
    v = pa.asarray(x)
    y = pa.zeros_like(v)
    for j in range(1, 20):
        y[:, j] = y[:, j - 1] + v[:, j]
    prog = pa.compile(y, target="numpy")
    assert not _recurrences(prog)
    want = np.zeros_like(x)
    for j in range(1, 20):
        want[:, j] = want[:, j - 1] + x[:, j]
    assert_same(np.asarray(prog()), want)


def test_a_recurrence_node_on_the_numpy_target():
    """The node itself evaluates row by row on the numpy target (what
    ``pa.show`` and the checked mode compute), as the kernel does."""
    from polyarray.codegen.plan.recurrence import roll_recurrences
    x = np.random.default_rng(6).random((6, 30))
    v = pa.asarray(x)
    y = pa.asarray(x.copy())
    for j in range(1, 30):
        y[:, j] = y[:, j - 1] * 0.5 + v[:, j]
    rolled, = roll_recurrences([y.node])
    assert any(isinstance(n, N.Recurrence) for n in N.topological_order([rolled]))
    got = pa.compile(pa.Array(rolled), target="numpy")()
    assert_same(np.asarray(got), np.asarray(pa.compile(y, target="numpy")()))
    shown = io.StringIO()
    pa.show(pa.Array(rolled), file=shown)
    assert "recurrence(" in shown.getvalue()


def test_rolling_is_deterministic():
    from polyarray.codegen.plan.recurrence import roll_recurrences
    x = pa.asarray(np.arange(120.0).reshape(4, 30))

    def build():
        y = pa.zeros_like(x)
        for j in range(2, 30):
            y[:, j] = y[:, j - 1] * 0.5 - y[:, j - 2] + x[:, j - 1]
        return y
    one, = roll_recurrences([build().node])
    two, = roll_recurrences([build().node])
    assert one is two and one.digest == two.digest


def test_a_loop_that_stays_unrolled_leaves_the_others_rolled(device_target):
    """``q`` reads the row before at another element (unrolled), and reads
    ``p``'s columns: ``p`` is still one recurrence, and both are right."""
    xv = np.random.default_rng(7).random((6, 40))

    def f(x):
        p = x.copy()
        q = x.copy()
        for j in range(1, 40):
            p[:, j] = p[:, j - 1] * 0.5 + np.sin(x[:, j])
        for j in range(1, 40):
            q[:, j] = q[::-1, j - 1] * 0.5 + p[:, j]
        return q
    assert_same(pa.jit(f, target=device_target)(xv), f(xv))
    assert len(_recurrences(pa.compile(f(pa.asarray(xv)), target=device_target))) == 1


def test_a_loop_reading_another_loops_columns(target):
    """``q[:, j]`` reads ``p[:, j]`` and ``p[:, j - 1]``: both loops are
    recurrences, the second reading the first's rows."""
    xv = np.random.default_rng(8).random((5, 60))

    def f(x):
        p = x.copy()
        q = np.zeros_like(x)
        for j in range(1, 60):
            p[:, j] = p[:, j - 1] * 0.5 + x[:, j]
        for j in range(1, 60):
            q[:, j] = q[:, j - 1] * 0.25 + p[:, j] - p[:, j - 1]
        return q
    assert_same(pa.jit(f, target=target)(xv), f(xv))
    if target != "numpy":
        assert len(_recurrences(pa.compile(f(pa.asarray(xv)), target=target))) == 2
