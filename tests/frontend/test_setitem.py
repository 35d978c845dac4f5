"""``x[key] = v`` on lazy arrays: NumPy's results, casts and errors
on every target, old handles unchanged, and the Hermite recurrence written
with ``out[:, i] = ...`` fused into the one kernel of its ``stack`` form."""
import math
import os
import sys

import numpy as np
import pytest

import polyarray as pa
from polyarray.ir import nodes as N
from helpers import assert_same

RNG = np.random.default_rng(17)
XV = RNG.standard_normal((5, 6)).astype(np.float32)
M1 = np.array([True, False, True, False, True])

# (key, value): each kind of index, NumPy's broadcasting of the value
CASES = [
    ((slice(None), 2), 7.0),
    (1, 3.0),
    (slice(1, 4), RNG.standard_normal(6)),                    # float64 into float32
    ((slice(None, None, 2), slice(1, None, 3)), 9.0),
    ((slice(None, None, -2), -1), [1, 2, 3]),
    ((Ellipsis, 0), np.arange(5)),
    ((None, 1, slice(2, 5)), [[4, 5, 6]]),
    ((slice(None), slice(5, 1, -1)), [1, 2, 3, 4]),
    ((-2, slice(-1, None, -2)), 4.0),
    (0, np.ones((1, 1, 6))),                                   # leading ones dropped
    ([0, 2, 0], RNG.standard_normal((3, 6))),                  # duplicates: the last wins
    (([0, 0], [1, 1]), [5, 6]),
    ((slice(1, 3), [4, 0, -2]), 2.5),
    (([4, 1], slice(0, 4, 3)), [[1], [2]]),
    (([1, 3], slice(None)), 1.0),
    (([[0], [3]], slice(1, 3)), np.arange(2.0)),
    ((np.repeat(np.arange(5), 4), np.tile([0, 2, 4, 5], 5)), np.arange(20)),   # > 16: a map
    ([0] * 10 + [1, 2, 3, 4, 0] + [4] * 5, RNG.standard_normal((20, 6))),    # ... duplicates
    (M1, -1.0),
    (XV > 0, 0.0),
    (XV > 0.5, np.arange(int((XV > 0.5).sum()))),
    ((M1, 2), [10, 20, 30]),
    (slice(2, 2), 5.0),
    ([], 1.0),
    (Ellipsis, 3.0),
    (None, 2.0),
    ((), RNG.standard_normal((5, 6))),
]


def test_each_index_kind_matches_numpy(target):
    x = pa.placeholder("x", XV.shape, np.float32)
    outs, wants = [], []
    for key, val in CASES:
        a = x + 0
        a[key] = val
        want = XV.copy()
        want[key] = val
        outs.append(a)
        wants.append(want)
    got = pa.compile(outs, target=target)(x=XV)
    for (key, _), g, w in zip(CASES, got, wants):
        assert_same(g, w, f"x[{key!r}] = v")


def test_lazy_values_masks_and_reads_through(target):
    xv = RNG.standard_normal((4, 5))
    x = pa.placeholder("x", (4, 5), np.float64)
    v = pa.placeholder("v", (5,), np.float64)
    a = pa.zeros((4, 5))
    a[1] = v
    a[:, 3] = x[:, 0] * 2                    # over the row just written
    a[x > 0.5] = -7.0                        # a lazy mask with a scalar: where()
    a[x[:, 0] < -1] = v                      # ... and a value per row
    b = x + 0
    b[::2, 1:4:2] = x[1::2, :2] + v[:2]      # lazy value, steps on both axes
    b[2:, -1] += 100                          # augmented
    b[[3, 0]] *= 2.0
    vv = RNG.standard_normal(5)
    wa = np.zeros((4, 5))
    wa[1] = vv
    wa[:, 3] = xv[:, 0] * 2
    wa[xv > 0.5] = -7.0
    wa[xv[:, 0] < -1] = vv
    wb = xv.copy()
    wb[::2, 1:4:2] = xv[1::2, :2] + vv[:2]
    wb[2:, -1] += 100
    wb[[3, 0]] *= 2.0
    c, wc = pa.zeros((3, 4, 5), np.int32), np.zeros((3, 4, 5), np.int32)
    for lib, arr in ((pa, c), (np, wc)):      # advanced indices apart: their axes first
        arr[[0, 2, 0], 1:3, [4, 1, 4]] = lib.arange(6).reshape(3, 2)
    prog = pa.compile([a, b, c], target=target)
    for g, w in zip(prog(x=xv, v=vv), (wa, wb, wc)):
        assert_same(g, w)


def test_copies_keep_their_values_and_views_follow(target):
    x = pa.arange(12).reshape(3, 4)
    view, copy, alias = x[:, 0], x.copy(), x
    copies = [np.copy(x), pa.array(x), x + 0]
    old = x.node
    x[0, 0] = 50
    x[1] += 1
    assert alias is x and x.node is not old and pa.asarray(x) is x
    assert all(c.node is old for c in [copy] + copies[:2])
    want = np.arange(12).reshape(3, 4)
    got = pa.compile([x, view, copy, alias, copies[2]], target=target)()
    w = want.copy()
    w[0, 0] = 50
    w[1] += 1
    assert_same(got[0], w)
    assert_same(got[1], w[:, 0])               # a view of x, as NumPy's
    assert_same(got[2], want)
    assert_same(got[3], w)                      # the same handle
    assert_same(got[4], want)


def test_reads_of_updated_regions_are_the_values_written():
    x = pa.placeholder("x", (8, 3), np.float32)
    v = pa.placeholder("v", (8,), np.float32)
    out = pa.zeros((8, 3), np.float32)
    out[:, 1] = v
    assert out[:, 1].node is v.node            # the value itself, no select
    assert out[:, 0].node is pa.zeros(8, np.float32).node
    y = x + 0
    y[2:5, 0] = v[:3]
    assert y[2:5, 0].node is v[:3].node
    assert y[:, 1:].node is (x + 0)[:, 1:].node
    y[6] = 1.0
    assert y[0:2].node is (x + 0)[0:2].node    # disjoint from both updates


def test_rewriting_a_region_replaces_the_last_write_of_it(target):
    """``C[i, :i+1] += v`` in a loop over ``k``: each write covers the last
    one's region whole, so it selects over the array before them: one select
    per region, however many writes (what reads C, and its kernel, stay
    the size of one write)."""
    data = np.arange(16.0).reshape(4, 4)
    c = pa.asarray(data)
    before = c.node
    for k in range(5):
        c[1, :2] += float(k)
    c[1, :2] *= 2.0
    assert dict(c.node.bindings)["_in0"] is before
    c[::2, 1:] = -1.0                   # another region: the last write kept below
    assert dict(c.node.bindings)["_in0"] is not before
    want = data.copy()
    for k in range(5):
        want[1, :2] += float(k)
    want[1, :2] *= 2.0
    want[::2, 1:] = -1.0
    assert_same(pa.compile(c, target=target)(), want)


def test_casting_follows_numpy(target):
    ints = pa.zeros(4, np.int32)
    ints[0] = 1.7                              # Python float: truncated
    ints[1] = -1.7
    ints[2:] = np.array([2.9, 300.5])          # array: unsafe cast
    u8 = pa.zeros(3, np.uint8)
    u8[:] = np.array([300, 1, 2])              # wraps, as NumPy
    flag = pa.zeros(3, bool)
    flag[0] = 2
    f = pa.zeros(3, np.float32)
    f[1] = pa.arange(3)[2]                      # lazy int64 into float32
    i = pa.arange(3)
    i[0] /= 2                                  # 0-d: NumPy's scalar, cast back unsafely
    got = pa.compile([ints, u8, flag, f, i], target=target)()
    for g, w in zip(got, (np.array([1, -1, 2, 300], np.int32),
                          np.array([44, 1, 2], np.uint8), np.array([True, False, False]),
                          np.array([0, 2, 0], np.float32), np.array([0, 1, 2]))):
        assert_same(g, w)


def _raises_like_numpy(fn_np, fn_pa):
    with pytest.raises(Exception) as want:
        fn_np()
    with pytest.raises(type(want.value)) as got:
        fn_pa()
    assert str(got.value) == str(want.value)


M4 = np.array([True, False, True, False])


@pytest.mark.parametrize("dtype, shape, key, value", [
    (np.float64, 4, slice(None), np.ones(2)),
    (np.float64, (4, 3), 0, np.ones((2, 3))),
    (np.int8, 4, 0, 300),
    (np.uint8, 4, 0, -1),
    (np.int64, 4, 0, np.nan),
    (np.int64, 4, 0, float("inf")),
    (np.float64, 4, 0, 1j),
    (np.float64, 4, 0, "one"),
    (np.float64, 4, 5, 1.0),
    (np.float64, 4, [0, 4], 1.0),
    (np.float64, 4, (0, 0, 0), 1.0),
    (np.float64, 4, np.array([True, False]), 1.0),
    (np.float64, 4, M4, [1, 2, 3]),
    (np.float64, 4, M4, np.ones((1, 2))),
    (np.float64, 4, M4, np.ones(4)),
    (np.float64, 4, [], [1, 2]),
    (np.float64, 4, slice(None), np.ones((1, 2))),
    (np.float64, 4, [0, 1], np.ones((1, 3))),
    (np.float64, (4, 3), [[0], [1]], np.ones((2, 3))),
], ids=repr)
def test_errors_are_numpys(dtype, shape, key, value):
    def run(lib):
        a = lib.zeros(shape, dtype)
        a[key] = value
    _raises_like_numpy(lambda: run(np), lambda: run(pa))


def test_augmented_assignment_refuses_what_numpy_refuses():
    for lib in (np, pa):
        a = lib.arange(4)
        with pytest.raises(TypeError, match="Cannot cast ufunc 'divide' output"):
            a[:2] /= 2
    a = pa.arange(4)
    a[:2] //= 2                                 # same kind: fine
    assert a.dtype == np.int64


def test_lazy_index_arrays_last_write_wins_and_are_checked(target):
    xv = np.arange(20.0).reshape(4, 5)
    x = pa.placeholder("x", (4, 5), np.float64)
    i = pa.placeholder("i", (3,), np.int32)
    j = pa.placeholder("j", (3,), np.int64)
    outs = [x + 0 for _ in range(5)]
    outs[0][i] = -1.0
    outs[1][i, j] = pa.arange(3.0)             # duplicates (0, 4): the last value
    outs[2][1:, j] = 7.0
    outs[3][i, 2:4] += 100
    outs[4][1, pa.argmax(x[0])] = 0.5          # a 0-d lazy index
    prog = pa.compile(outs, target=target)
    iv, jv = np.array([0, -1, 0], np.int32), np.array([4, 0, 4])
    wants = [xv.copy() for _ in range(5)]
    wants[0][iv] = -1.0
    wants[1][iv, jv] = np.arange(3.0)
    wants[2][1:, jv] = 7.0
    wants[3][iv, 2:4] += 100
    wants[4][1, np.argmax(xv[0])] = 0.5
    for g, w in zip(prog(x=xv, i=iv, j=jv), wants):
        assert_same(g, w)
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        prog(x=xv, i=np.array([0, 4, 1], np.int32), j=jv)


def test_lazy_mask_needs_one_value_per_selected_element():
    x = pa.placeholder("x", (4,), np.float64)
    a = pa.zeros(4)
    with pytest.raises(IndexError, match="lazily computed mask"):
        a[x > 0] = pa.arange(2.0)


# the example's own functions: the test checks the code users read
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "examples"))
from hermite_setitem import hermite as hermite_setitem, hermite_stack  # noqa: E402


def test_hermite_setitem_is_the_stack_form_in_one_kernel(target):
    xv = RNG.uniform(-1, 1, 1000)
    X = pa.placeholder("X", (1000,), np.float64)
    out = hermite_setitem(X, 8, pa)
    prog = pa.compile(out, target=target)
    assert prog.outputs.node is hermite_stack(X, 8).node    # the same DAG: the same kernel
    if target != "numpy":
        assert len(prog.kernels) == 1
        assert prog.source == pa.compile(hermite_stack(X, 8), target=target).source
    assert_same(prog(X=xv), hermite_setitem(xv, 8, np))


def _makes(fn):
    """How many nodes ``fn`` asks for (interned hits included)."""
    calls = [0]
    make = N.Node.make.__func__

    def counting(cls, *args, **kwargs):
        calls[0] += 1
        return make(cls, *args, **kwargs)
    N.Node.make = classmethod(counting)
    try:
        fn()
    finally:
        N.Node.make = classmethod(make)
    return calls[0]


def test_hermite_build_is_linear_in_the_number_of_updates():
    """Each update looks at a few records, never the whole chain: the work per
    update (nodes asked for) stays flat from N = 32 to N = 64."""
    X = pa.placeholder("X", (100,), np.float64)
    per = {n: _makes(lambda: hermite_setitem(X, n, pa)) / n for n in (32, 64)}
    assert per[64] <= 1.25 * per[32], per


def test_stacked_recurrence_gets_a_row_per_work_item_on_gpus():
    """The policy's row "gpu: stacked recurrence": columns that share their
    work (the Hermite recurrence, normalized or not) are computed a row per
    work-item (columns unrolled, stores through local memory), not an
    element per work-item redoing the recurrence; independent columns are
    not.  (CUDA source generation needs no GPU.)"""
    X = pa.placeholder("X", (1000,), np.float32)
    out = pa.ones((1000, 12), np.float32)
    out[:, 1] = X
    for i in range(2, 12):
        out[:, i] = X * out[:, i - 1] - (i - 1) * out[:, i - 2]
    c = 1.0
    for i in range(2, 12):
        c *= i
        out[:, i] /= math.sqrt(c)
    (k,) = pa.compile(out, target="cuda").kernels.values()
    assert k.rule == "gpu: stacked recurrence, a row per work-item", k
    assert [type(s).__name__ for s in k.schedule] == ["WorkGroup", "Unroll", "StoreThroughLocal"]
    plain = pa.concatenate([X[:, None] * j for j in range(1, 12)], axis=1)
    (k,) = pa.compile(plain, target="cuda").kernels.values()
    assert "stacked" not in k.rule, k


@pytest.mark.parametrize("columns, dtype, rows", [(16, np.float32, 256), (16, np.float64, 256),
                                                  (48, np.float64, 128), (64, np.float64, 64)])
def test_stacked_recurrence_tile_fits_local_memory(columns, dtype, rows):
    """Rows per work-group shrink so that the stored tile fits in 48 KB."""
    X = pa.placeholder("X", (1000,), dtype)
    cols = [pa.ones_like(X), X]
    for i in range(2, columns):
        cols.append(X * cols[i - 1] - (i - 1) * cols[i - 2])
    (k,) = [k for k in pa.compile(pa.stack(cols, axis=1), target="cuda").kernels.values()
            if "stacked" in k.rule]
    assert k.schedule[0].size == rows, k
    assert rows * columns * np.dtype(dtype).itemsize <= 48 * 1024


def test_unit_axis_reads_add_no_copies_hermite_is_one_kernel():
    """The materialization pass counted ``e[:, None]`` (a read of ``e`` where
    the reader is, up to a unit axis) as another copy of ``e``, so a
    recurrence of 1-D columns written with ``out[:, i] = ...`` stored two
    of its columns in a kernel of their own; now it is one kernel."""
    X = pa.placeholder("X", (1000,), np.float32)
    out = pa.ones((1000, 16), np.float32)
    out[:, 1] = X
    for i in range(2, 16):
        out[:, i] = X * out[:, i - 1] - (i - 1) * out[:, i - 2]
    assert len(pa.compile(out, target="cuda").kernels) == 1


@pytest.mark.parametrize("key", [True, False, np.True_, (True,), (0, True), (Ellipsis, True),
                                 (True, Ellipsis, 1), (slice(None), False, 2), (True, [0, 2]),
                                 (None, True, 1), np.array(True),
                                 (np.array([0, 1]), True, np.array([1, 2]))], ids=repr)
def test_zero_d_boolean_index_adds_an_axis_as_numpy(key):
    """A 0-d boolean index is a new axis of length 1 (True) or 0 (False),
    read and written as NumPy does, a lazy 0-d mask from data included."""
    a = np.arange(12.0).reshape(3, 4)
    assert_same(np.asarray(pa.asarray(a)[key]), a[key])
    if not isinstance(key, tuple):
        for v in (5.0, np.ones((1, 3, 4))):
            want, got = a.copy(), pa.asarray(a.copy())
            want[key] = v
            got[key] = v
            assert_same(np.asarray(got), want)
    x = pa.reshape(pa.asarray([False]), ())
    assert x[pa.reshape(pa.asarray([True]), ())].shape == (1,)
