"""Graph breaks in ``pa.jit``: where a traced function needs a value (a
branch, ``int()``, a slice bound, a mask from the data), the work traced so
far runs and tracing goes on; results are NumPy's, the breaks are reported,
and a loop that breaks at every iteration compiles its body once."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import polyarray as pa
from helpers import assert_same


def halve_until_small(x, tol):
    steps = 0
    while x.sum() > tol:                  # a break per iteration
        x = x * 0.5
        steps += 1
    n = int(x.argmax())                   # a break: int()
    return x[:n + 1], x[x > 0.1], steps   # a slice bound (n is concrete now), a mask


def test_branches_conversions_and_masks_give_numpys_results(target):
    f = pa.jit(halve_until_small, target=target, static_argnames="tol")
    for data in (np.arange(5.0), np.arange(5.0) * 4, np.linspace(0, 1, 7)):
        got, want = f(data, tol=1.0), halve_until_small(data, 1.0)
        assert_same(got[0], want[0])
        assert_same(got[1], want[1])
        assert got[2] == want[2]


def test_a_loop_compiles_its_body_once(target):
    def relax(u, n_check):
        while True:
            new = 0.25 * (np.roll(u, 1) + np.roll(u, -1)) + 0.5 * u
            change = np.abs(new - u).max()
            u[:] = new
            if change < n_check:          # the same break every iteration
                return u
    f = pa.jit(relax, target=target)
    rng = np.random.default_rng(0)
    u1 = rng.random(64)
    want = relax(u1.copy(), 1e-3)
    got = f(u1, 1e-3)
    assert_same(got, want)
    compiled = len(f.segment_programs)
    u2 = rng.random(64) * 10              # more iterations, other values
    want2 = relax(u2.copy(), 1e-3)
    assert_same(f(u2, 1e-3), want2)
    assert len(f.segment_programs) == compiled       # nothing new to compile
    assert compiled <= 6


def _source(u, v):
    b = np.zeros_like(u)
    b[1:-1] = (u[2:] - u[:-2]) * 0.5 + v[1:-1]
    return b


def channel(u, v):
    """channel_flow's shape: a ``while`` on a traced value, copies made
    at the top of each iteration, a helper's temporary, arguments written in
    place."""
    udiff, steps = 1.0, 0
    while udiff > 1e-3:
        un = u.copy()
        vn = v.copy()
        b = _source(u, v)
        u[1:-1] = un[1:-1] * 0.9 + 0.05 * b[1:-1]
        v[1:-1] = vn[1:-1] * 0.8 + 0.1 * un[1:-1]
        udiff = np.abs(u - un).sum() / np.abs(u).sum()
        steps += 1
    return steps


def test_iterations_of_a_loop_after_the_first_are_one_program(target):
    """The arrays a loop updates keep their names from break to break, so
    the second and later iterations are one program, not two alternating
    ones (the values carried were named by their place among the live
    arrays, which changed as temporaries came and went)."""
    f = pa.jit(channel, target=target)
    rng = np.random.default_rng(5)
    u0, v0 = rng.random(40), rng.random(40)
    u1, v1 = u0.copy(), v0.copy()
    steps = channel(u1, v1)
    assert steps > 10
    u2, v2 = u0.copy(), v0.copy()
    assert f(u2, v2) == steps
    assert_same(u2, u1)
    assert_same(v2, v1)
    # the first iteration reads the arguments, the others the carried values,
    # and the last break's value is read alone
    assert len(f.segment_programs) <= 3, len(f.segment_programs)


def test_masked_writes_of_a_vector_and_python_scalar_loops(target):
    def f(x, data):
        mask = x > 0.5                    # from the data
        x[mask] = np.arange(10.0)[: int(mask.sum())]
        crc = 0xFFFF
        for b in data:                    # a byte loop with a branch per bit
            cur = 0xFF & b
            for _ in range(8):
                if (crc & 1) ^ (cur & 1):
                    crc = (crc >> 1) ^ 0x8408
                else:
                    crc >>= 1
                cur >>= 1
        return x, crc
    rng = np.random.default_rng(1)
    x, data = rng.random(12), rng.integers(0, 256, 4, dtype=np.uint8)
    want = f(x.copy(), data)
    got = pa.jit(f, target=target)(x.copy(), data)
    assert_same(got[0], want[0])
    assert int(got[1]) == int(want[1])


def test_masks_the_function_computes_without_its_arguments(target):
    def f(B, x):
        t = np.full((2,), 3)
        B[t <= 0] = B[t <= 0]             # an empty mask of created data
        even = np.arange(x.shape[0]) % 2 == 0
        x[even] = x[~even] * 2            # a value per selected element
        x[np.arange(x.shape[0]) > 1] += 1
        return x[even], B
    B, x = np.array([2, -2]), np.arange(6.0)
    B_np, x_np = B.copy(), x.copy()
    want = f(B_np, x_np)
    got = pa.jit(f, target=target)(B, x)
    for g, w in zip(got, want):
        assert_same(g, w)
    assert_same(x, x_np)                  # written back: [2, 1, 7, 4, 11, 6]
    assert_same(B, B_np)


def test_a_masked_write_reads_its_value_after_the_break(target):
    """``x[mask] = v`` with a mask from the data breaks inside the write: the
    value and the destination are read again after the break rebinds the
    function's arrays (they named the placeholders of the previous break)."""
    def f(x):
        a = x * 2
        b = x + 10
        if a.sum() > 0:                  # a break: a and b become seg0 and seg1
            pass
        del a
        c = x - 1
        x[x > 2] = b[:3]                 # b[:3] read before this break named seg1
        return c

    def g(u, w):
        k = int(w.max()) % 4
        w[k] += 1
        t = pa.while_loop(lambda v: v.sum() < 10.5, lambda v: v + 1, u)
        u[...] = t                       # the loop's result: bound outside any break
        w[t <= 1] = (w * 2)[-2:]         # u and w are one array

    def g_numpy(u, w):
        k = int(w.max()) % 4
        w[k] += 1
        t = u.copy()
        while t.sum() < 10.5:
            t = t + 1
        u[...] = t
        w[t <= 1] = (w * 2)[-2:]
    x, x_np = np.arange(1.0, 6.0), np.arange(1.0, 6.0)
    assert_same(pa.jit(f, target=target)(x), f(x_np))
    assert_same(x, x_np)                 # [1, 2, 11, 12, 13]
    u, u_np = np.array([4, -2, 4, 0]), np.array([4, -2, 4, 0])
    pa.jit(g, target=target)(u, u)
    g_numpy(u_np, u_np)
    assert_same(u, u_np)


def test_a_write_whose_value_takes_a_break_writes_where_the_break_left_it(target):
    """A write whose value takes a graph break (a selection by a mask from
    the data) writes into the destination as the break left it: here a
    ``pa.fori_loop`` result, bound outside any program."""
    def f(a, b):
        t = pa.fori_loop(0, 3, lambda i, v: v * 0.5 + 1, a)
        s = b[b > 0.5]                   # a selection: its mask needs a value
        t.ravel()[:3] = s * 3            # the break comes while writing into t
        return t * 2

    def f_numpy(a, b):
        t = a.copy()
        for _ in range(3):
            t = t * 0.5 + 1
        s = b[b > 0.5]
        t.ravel()[:3] = s * 3
        return t * 2
    a = np.arange(6.0).reshape(2, 3)
    b = np.array([0.25, 0.75, 1.0, 0.0, 2.0])
    assert_same(np.asarray(pa.jit(f, target=target)(a, b)), f_numpy(a, b))


def test_an_argument_written_with_another_arguments_old_value(target):
    def f(B, y):
        y[:] = B                  # y's new value is B's argument, unchanged...
        B[0] = 100                # ...while B is written back first
        if y.sum() < 0:           # a break, not taken: y's result is B's binding
            y[1] = 5
    B, y = np.arange(4), np.zeros(4, np.int64)
    pa.jit(f, target=target)(B, y)
    assert_same(B, np.array([100, 1, 2, 3]))
    assert_same(y, np.arange(4))


def test_breaks_are_reported_and_logged(caplog):
    f = pa.jit(halve_until_small, target="numpy", static_argnames="tol")
    with caplog.at_level(logging.INFO, logger="polyarray.jit"):
        f(np.arange(5.0), tol=1.0)
    assert "graph break" in caplog.text and "while x.sum() > tol:" in caplog.text
    report = f.report()
    assert "graph break" in report
    assert "while x.sum() > tol:" in report and "n = int(x.argmax())" in report
    assert len(f.last_breaks) == 7      # 5 loop tests, int(), the mask


def test_written_arguments_and_breaks(target):
    def f(a, b):
        a += 1
        if a.sum() > 10:                  # a break after a write
            b[:2] = a[:2] * 2
        a[0] = -1
    a, b = np.arange(6.0), np.zeros(6)
    wa, wb = a.copy(), b.copy()
    f(wa, wb)
    assert pa.jit(f, target=target)(a, b) is None
    assert_same(a, wa)
    assert_same(b, wb)


def test_strict_mode_keeps_the_error_naming_the_line():
    def f(x):
        if x.sum() > 0:
            return x
        return -x
    with pytest.raises(pa.LazyValueError, match=r"test_graph_breaks.py:\d+: if x.sum\(\) > 0:"):
        pa.jit(f, target="numpy", graph_breaks=False)(np.ones(3))
    assert_same(pa.jit(f, target="numpy")(np.ones(3)), np.ones(3))


def nussinov_like(seq, n):
    table = np.zeros((n, n), np.int32)
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            table[i, j] = max(table[i, j], table[i + 1, j] if i + 1 < n else 0)
            if seq[i] + seq[j] == 3:            # a break on every pair: new programs
                table[i, j] = max(table[i, j], table[i + 1, j - 1] + 1)
    return table


def test_code_that_breaks_on_every_element_runs_on_the_host(target, caplog):
    f = pa.jit(nussinov_like, target=target, static_argnames="n", max_break_programs=8)
    seq = np.random.default_rng(2).integers(0, 4, 9).astype(np.int32)
    with caplog.at_level(logging.WARNING, logger="polyarray.jit"):
        got = f(seq, n=9)
    assert_same(got, nussinov_like(seq, 9))
    assert "runs with NumPy on the host" in caplog.text
    assert "NumPy on the host" in f.report()
    seq2 = seq[::-1].copy()
    assert_same(f(seq2, n=9), nussinov_like(seq2, 9))        # the signature stays there


def shrinking(A):
    for i in range(A.shape[0] - 1):
        A[i + 1:, i] -= A[i + 1:, :i + 1].sum(axis=1) * 0.5    # a kernel per step
    return A.sum()


def test_a_program_of_too_many_kernels_runs_on_the_host(target, caplog):
    A = np.random.default_rng(4).random((12, 12))
    want_A = A.copy()
    want = shrinking(want_A)
    f = pa.jit(shrinking, target=target, max_kernels=4)
    with caplog.at_level(logging.WARNING, logger="polyarray.jit"):
        got = f(A)
    assert_same(np.asarray(got), np.asarray(want))
    assert_same(A, want_A)
    if target != "numpy":           # the NumPy target generates no kernels
        assert "more than 4 new kernels" in caplog.text
        assert "NumPy on the host" in f.report()


def test_a_host_fallback_writes_back_only_what_the_trace_wrote(monkeypatch):
    """Device arguments of a program run on the host: host copies, the
    argument the trace wrote written back (NumPy's values), the other one
    not compared with a copy of itself nor written."""
    from polyarray import targets
    ok, reason = targets.availability("opencl")
    if not ok:
        pytest.skip(f"opencl: {reason}")
    import pyopencl as cl
    import pyopencl.array as cla
    import sys
    from polyarray.targets.opencl import select_device
    jit_module = sys.modules["polyarray.jit"]       # (pa.jit is the function)
    queue = cl.CommandQueue(select_device()[0])

    def shrinking_with(A, B):
        for i in range(A.shape[0] - 1):
            A[i + 1:, i] -= A[i + 1:, :i + 1].sum(axis=1) * B[i, 0]
        return A.sum()
    A, B = np.random.default_rng(4).random((12, 12)), np.full((12, 2), 0.5)
    want_A = A.copy()
    want = shrinking_with(want_A, B)
    dA, dB = cla.to_device(queue, A), cla.to_device(queue, B)
    written = []
    real = jit_module._write_back
    monkeypatch.setattr(jit_module, "_write_back",
                        lambda dest, value: written.append(dest) or real(dest, value))
    f = pa.jit(shrinking_with, target="opencl", max_kernels=4)
    got = f(dA, dB)
    assert "NumPy on the host" in f.report()
    assert_same(np.asarray(got.get() if hasattr(got, "get") else got), np.asarray(want))
    assert_same(dA.get(), want_A)
    assert_same(dB.get(), B)
    assert written == [dA], written
    got = f(dA, dB)                 # a second call: the host path alone
    assert written == [dA, dA]


def triangular_solve(L, b):
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]      # one element per write
    return x


def test_element_by_element_code_runs_on_the_host(caplog):
    n = 1100                        # past the 1024 single-element writes traced
    rng = np.random.default_rng(5)
    L = np.tril(rng.random((n, n))) + n * np.eye(n)
    b = rng.random(n)
    f = pa.jit(triangular_solve, target="numpy")
    with caplog.at_level(logging.WARNING, logger="polyarray.jit"):
        got = f(L, b)
    assert_same(got, triangular_solve(L, b))
    assert "single-element writes" in caplog.text


def test_element_by_element_code_on_device_arrays_writes_them_back(target):
    """The host path of code that works element by element, called with
    device arrays: the arguments it writes hold NumPy's values after the
    call, on their device, the first call and the next."""
    if target == "numpy":
        pytest.skip("device arrays: the numpy target has none")
    from polyarray import targets
    ok, reason = targets.availability("opencl")
    if not ok:
        pytest.skip(f"opencl: {reason}")
    import pyopencl as cl
    import pyopencl.array as cla
    from polyarray.targets.opencl import select_device
    queue = cl.CommandQueue(select_device()[0])

    def solve_in_place(L, x):           # NPBench's trisolv: writes x, returns None
        for i in range(x.shape[0]):
            x[i] = (x[i] - L[i, :i] @ x[:i]) / L[i, i]
    n = 1100                            # past the 1024 single-element writes traced
    rng = np.random.default_rng(6)
    L = np.tril(rng.random((n, n))) + n * np.eye(n)
    b = rng.random(n)
    want = b.copy()
    solve_in_place(L, want)
    f = pa.jit(solve_in_place, target="opencl")
    for _ in range(2):
        dL, dx = cla.to_device(queue, L), cla.to_device(queue, b)
        assert f(dL, dx) is None
        assert "NumPy on the host" in f.report()
        np.testing.assert_allclose(dx.get(), want, rtol=1e-12)
        assert_same(dL.get(), L)


def _rescale(r, w):
    """NPBench's nbody idiom: the selected values transformed and written
    back under the same mask, twice, and a selection read as NumPy has it."""
    r[r > 0] = r[r > 0] ** (-1.5)
    w[w > 0.5] = 1.0 / w[w > 0.5] + 2 * np.sqrt(w[w > 0.5])
    r[r > 1] = r[r > 1] * w[r > 1]          # another array's values under r's mask
    return r, w, w[w > 0.7].sum()


def test_a_selection_written_back_under_its_mask_needs_no_break(target):
    """``x[m] = f(x[m])`` with a lazily computed mask is ``where(m, f(x), x)``
    (``polyarray.masked``): no graph break, NumPy's values; a selection that
    is read (its sum) takes the break as before."""
    rng = np.random.default_rng(4)
    r0, w0 = rng.random((6, 7)) - 0.3, rng.random((6, 7))
    want = _rescale(r0.copy(), w0.copy())
    f = pa.jit(_rescale, target=target)
    got = f(r0.copy(), w0.copy())
    for g, w in zip(got, want):
        assert_same(np.asarray(g), w)
    assert len(f.last_breaks) == 1 and "w[w > 0.7].sum()" in f.last_breaks[0], f.last_breaks

    def only_writes(r):
        r[r > 0] = r[r > 0] ** (-1.5)
        r[r > 2] = -r[r > 2]
        return r
    g = pa.jit(only_writes, target=target)
    assert_same(np.asarray(g(r0.copy())), only_writes(r0.copy()))
    assert g.last_breaks == [] and "one program" in g.report(), g.report()


def test_an_integer_selection_and_other_masks_take_the_break(target):
    """Integer selections, and a selection written under another mask,
    are NumPy's through the graph break."""
    def f(a, x):
        a[a > 2] = a[a > 2] * 3
        x[x > 0.5] = x[x > 0.2][: int((x > 0.5).sum())]
        return a, x
    rng = np.random.default_rng(8)
    a0, x0 = rng.integers(0, 6, 9), np.sort(rng.random(9))
    want = f(a0.copy(), x0.copy())
    got = pa.jit(f, target=target)(a0.copy(), x0.copy())
    for g, w in zip(got, want):
        assert_same(np.asarray(g), w)


def _energy_per_step(x, v, steps):
    """A time loop that stores one value per step (NPBench's nbody stores
    two energies): array work with a single-element write at its end."""
    e = np.empty(steps)
    for k in range(steps):
        v = v - 0.01 * np.sin(x) * np.cos(x) + 0.001 * np.tanh(v)
        x = x + 0.01 * v - 0.0001 * x * x + 0.0002 * np.exp(-x * x)
        e[k] = 0.5 * np.sum(v * v) + np.sum(x * x)
    return x, e


def test_a_loop_storing_a_value_per_step_stays_traced(target, caplog):
    """More single-element writes than the limit (1024 by default; 64 here,
    so the program stays small to build), but each step is array work (16 or
    more arrays made per element written): traced, not run with NumPy."""
    steps = 70
    rng = np.random.default_rng(6)
    x0, v0 = rng.random(5), rng.random(5)
    f = pa.jit(_energy_per_step, static_argnums=2, target=target)
    f.max_element_writes = 64
    with caplog.at_level(logging.WARNING, logger="polyarray.jit"):
        got = f(x0, v0, steps)
    for g, w in zip(got, _energy_per_step(x0, v0, steps)):
        assert_same(g, w)
    assert "single-element writes" not in caplog.text
    assert "NumPy on the host" not in f.report()
