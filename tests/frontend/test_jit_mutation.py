"""``pa.jit`` runs NumPy code that writes its arguments and creates arrays:
written arguments hold NumPy's result after the call (on the host, or on
their device), arguments not written are untouched, the function may return
None, aliases behave as NumPy's, and ``np.zeros``/``np.empty``/... inside the
function give lazy arrays.  Every case is compared with the same function
run by NumPy on copies of the inputs."""
from __future__ import annotations

import numpy as np
import pytest
from numpy import zeros as np_zeros          # a NumPy name imported into this module

import polyarray as pa
from helpers import assert_same


def _run_both(fn, target, *args, **jit_options):
    """``fn`` by NumPy and through ``pa.jit`` on copies of ``args``: (NumPy's
    args and result, ours)."""
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want = fn(*ref)
    got = pa.jit(fn, target=target, **jit_options)(*mine)
    return (ref, want), (mine, got)


def _assert_all_same(ref, mine):
    (ref_args, want), (my_args, got) = ref, mine
    for r, m in zip(ref_args, my_args):
        if isinstance(r, np.ndarray):
            assert_same(m, r)
    if want is None:
        assert got is None
    else:
        for w, g in zip(want if isinstance(want, tuple) else (want,),
                        got if isinstance(got, tuple) else (got,)):
            assert_same(g, w)


def gemm(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


def jacobi_1d(TSTEPS, A, B):
    for _ in range(1, TSTEPS):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x


def lu(A):
    for i in range(A.shape[0]):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, A.shape[0]):
            A[i, j] -= A[i, :i] @ A[:i, j]


@pytest.mark.parametrize("case", ["gemm", "jacobi_1d", "gemver", "lu"])
def test_kernels_that_write_their_arguments(target, case):
    rng = np.random.default_rng(3)
    r = lambda *s: rng.random(s)       # noqa: E731
    if case == "gemm":
        fn, args = gemm, (1.5, 1.2, r(6, 7), r(6, 5), r(5, 7))
    elif case == "jacobi_1d":
        fn, args = jacobi_1d, (6, r(20), r(20))
    elif case == "gemver":
        fn, args = gemver, (1.5, 1.2, r(8, 8), *(r(8) for _ in range(8)))
    else:
        a = r(6, 6)
        fn, args = lu, (a @ a.T + 6 * np.eye(6),)
    ref, mine = _run_both(fn, target, *args)
    _assert_all_same(ref, mine)
    prog = pa.jit(fn, target=target).lower(*args)
    written = {"gemm": 1, "jacobi_1d": 2, "gemver": 3, "lu": 1}[case]
    assert len(prog.outputs) == written             # only what is written comes back


def test_written_arguments_are_updated_in_place_and_others_untouched(target):
    def f(x, y, s):
        x[1:] += y[:-1] * s
        return None
    x, y = np.arange(5.0), np.ones(5)
    y.flags.writeable = False          # a write into y would raise
    x_before = x
    assert pa.jit(f, target=target)(x, y, 2.0) is None
    assert x is x_before and np.shares_memory(x, x_before)
    assert_same(x, np.array([0.0, 3.0, 4.0, 5.0, 6.0]))


def test_writing_a_read_only_argument_raises_at_the_users_line():
    def f(x):
        x[0] = 1.0
    x = np.zeros(3)
    x.flags.writeable = False
    with pytest.raises(ValueError, match="assignment destination is read-only"):
        pa.jit(f, target="numpy")(x)


def test_an_argument_returned_is_the_callers_array(target):
    def f(u, v):
        u *= 2
        return u, v, u + v
    u, v = np.arange(3.0), np.ones(3)
    a, b, c = pa.jit(f, target=target)(u, v)
    assert a is u and b is v
    assert_same(u, np.arange(3.0) * 2)
    assert_same(c, np.arange(3.0) * 2 + 1)


def test_the_same_array_passed_twice_is_one_array(target):
    def f(x, y):
        x += 1
        return y * 2                  # y is x: it sees the write, as in NumPy
    a = np.arange(4.0)
    want_a = a.copy()
    want = f(want_a, want_a)
    got = pa.jit(f, target=target)(a, a)
    assert_same(got, want)
    assert_same(a, want_a)
    b, c = np.arange(4.0), np.arange(4.0)     # equal values, other memory: not aliases
    assert_same(pa.jit(f, target=target)(b, c), np.arange(4.0) * 2)


def test_overlapping_arguments_written_are_refused():
    def f(x, y):
        x += y
    a = np.arange(6.0)
    with pytest.raises(ValueError, match="share memory"):
        pa.jit(f, target="numpy")(a[1:], a[:-1])
    g = pa.jit(lambda x, y: x + y, target="numpy")       # reading overlaps is fine
    assert_same(g(a[1:], a[:-1]), a[1:] + a[:-1])


def _helper_that_creates(n):
    return np.zeros((n, n)) + np_zeros(n)      # both NumPy spellings, from a helper


def creating(A, x):
    n = A.shape[0]
    out = np.empty((n, n), dtype=A.dtype)
    out[:] = A * 2                             # every element written before it is read
    acc = np.zeros_like(x)
    for i in range(n):
        acc[i] = A[i] @ x
    col = np.ndarray((n,), dtype=A.dtype)      # NumPy's low-level constructor
    col[:] = x
    parts = [np.ones(n), np.full(n, 2.5), np.arange(n) * 1.0, np.linspace(0, 1, n),
             np.eye(n)[1], np.identity(n)[2], np.ones_like(x), np.full_like(x, 3),
             np.copy(x), col]
    stacked = np.array([x, acc])               # a list of traced arrays
    return out, acc, np.stack(parts), stacked, _helper_that_creates(n) + A


def test_arrays_created_inside_are_lazy(target):
    rng = np.random.default_rng(4)
    A, x = rng.random((5, 5)), rng.random(5)
    ref, mine = _run_both(creating, target, A, x)
    _assert_all_same(ref, mine)


def test_empty_reads_as_zeros(target):
    def f(x):
        e = np.empty(x.shape)
        e[1:] = x[1:]
        return e
    got = pa.jit(f, target=target)(np.arange(1.0, 5.0))
    assert_same(got, np.array([0.0, 2.0, 3.0, 4.0]))   # the unwritten element is 0


def test_device_arguments_are_written_on_the_device(device_target):
    def f(x, y):
        x[::2] += y[::2]
    x = pa.compile(pa.placeholder("v", (6,), np.float32), target=device_target,
                   out="device")(v=np.arange(6, dtype=np.float32))
    y = pa.compile(pa.placeholder("v", (6,), np.float32), target=device_target,
                   out="device")(v=np.ones(6, np.float32))
    assert pa.jit(f)(x, y) is None
    assert_same(x.get(), np.array([1, 1, 3, 3, 5, 5], np.float32))
    assert_same(y.get(), np.ones(6, np.float32))


def test_arrays_of_the_callers_own_queue_are_read_and_written_in_order():
    """pyopencl arrays made on the caller's own queue: the program waits for
    what that queue has to do first, and the write-back on that queue waits
    for the program (a race there read and wrote stale memory)."""
    from polyarray import targets
    ok, reason = targets.availability("opencl")
    if not ok:
        pytest.skip(f"opencl: {reason}")
    import pyopencl as cl
    import pyopencl.array as cla
    from polyarray.targets.opencl import select_device
    queue = cl.CommandQueue(select_device()[0])

    def bump(u, v):
        u += v
        u[2] += 1

    f = pa.jit(bump, target="opencl")
    for k in range(20):
        u0, v0 = np.arange(4096, dtype=np.float64) + k, np.full(4096, 0.5)
        u, v = cla.to_device(queue, u0), cla.to_device(queue, v0)
        u *= 2.0                        # pending on the caller's queue
        f(u, v)
        want = u0 * 2 + v0
        want[2] += 1
        assert_same(u.get(), want)
        assert_same(v.get(), v0)
    # two buffers of a megabyte each: their handles are bytes apart, their memory is not
    big_u, big_v = (cla.to_device(queue, np.full(2**17, x)) for x in (1.0, 2.0))
    f(big_u, big_v)
    want = np.full(2**17, 3.0)
    want[2] += 1
    assert_same(big_u.get(), want)


def test_out_of_reductions_casts_unsafely_and_functions_take_out(target):
    """Reductions write ``out=`` with NumPy's "unsafe" cast (floats into
    integers truncate), through ``np.<name>`` and the methods; the other
    functions that NumPy gives ``out=`` (clip, matmul, cumsum, round, dot)
    take it inside pa.jit as through NumPy's dispatch."""
    def f(A, B, i, k):
        np.sum(A, axis=1, out=i)                 # float64 sums into int64: truncated
        A.max(axis=0, out=k)
        np.min(A * 0.5, axis=0, out=k[::-1])
        np.clip(A, -1, 2, out=A)
        np.cumsum(B, axis=0, out=B)
        np.matmul(A, np.eye(3), out=A)
        t = np.zeros(3)
        np.round(A[0] * 1.5, out=t)
        d = np.zeros((2, 2))
        A[:, :2].T.dot(A[:, :2], out=d)
        return t, d, A.sum(out=np.zeros((), np.int32))
    rng = np.random.default_rng(5)
    args = (rng.integers(-6, 7, (2, 3)) / 4, rng.integers(-3, 4, (4, 3)).astype(np.int32),
            np.zeros(2, np.int64), np.zeros(3, np.int32))
    _assert_all_same(*_run_both(f, target, *args))


def test_a_reductions_out_must_have_its_shape():
    x = pa.asarray(np.ones((3, 4)))
    for out in (pa.zeros((2, 4)), pa.zeros(())):
        with pytest.raises(ValueError, match="output parameter for reduction operation sum"):
            np.sum(x, axis=0, out=out)             # NumPy's dispatch: not broadcast into it
        with pytest.raises(ValueError, match="output parameter for reduction operation sum"):
            x.sum(axis=0, out=out)


@pytest.mark.parametrize("body,error", [
    ("r[1.5] = 0", ValueError),                    # read-only, before the bad index
    ("r[5] = 1", ValueError),                      # read-only, before the index range
    ("r += 1.5", ValueError),                      # read-only, before the cast
    ("np.add(x, np.ones(4), out=r)", ValueError),  # read-only, before the shapes
    ("np.diagonal(m)[1.5] = 0", ValueError),       # a read-only view
    ("i += np.ones(4)", TypeError),                # the cast, before the shapes
    ("i[...] -= np.ones(4)", TypeError),
    ("np.add(x, np.ones(4), out=i)", TypeError),
    ("np.add(np.ones(4), 1.5, out=i)", TypeError),
    ("np.multiply(x, 0.5, out=i[:2])", TypeError),
    ("i += np.ones(4, np.int64)", ValueError),     # castable: the shapes
])
def test_errors_come_in_numpys_order(body, error):
    ns = {"np": np}
    exec(f"def f(r, i, x, m):\n    {body}\n", ns)      # noqa: S102  (a NumPy module's function)
    r = np.zeros(3, np.int64)
    r.flags.writeable = False

    def args():
        return r, np.zeros(3, np.int64), np.ones(3), np.eye(3)
    with pytest.raises(error) as want:
        ns["f"](*args())
    with pytest.raises(error) as got:
        pa.jit(ns["f"], target="numpy")(*args())
    assert type(got.value) is not pa.LazyValueError, (want.value, got.value)


@pytest.mark.parametrize("make", [
    "np.zeros(()).astype(np.float32)", "np.zeros(()).copy()", "np.copy(x.sum())",
    "np.where(x.sum() > 0, 1.0, x.sum())", "np.asarray(x.sum())", "x[0, ...].astype(int)",
])
def test_0d_results_numpy_gives_as_arrays_are_written_in_place(target, make):
    ns = {"np": np}
    exec(f"def f(x):\n    t = {make}\n    u = t\n    t += 2\n    u[...] *= 3\n"   # noqa: S102
         f"    return t\n", ns)
    _assert_all_same(*_run_both(ns["f"], target, np.arange(3.0)))


def test_0d_results_of_operations_stay_scalars(target):
    def f(x):
        s = x.sum()
        t = s
        s += 1                      # rebinds s: t keeps the sum
        c = x[1].copy()             # a copy of a scalar is a scalar
        d = c
        c *= 10
        return s, t, c, d
    _assert_all_same(*_run_both(f, target, np.arange(3.0)))
