"""NumPy's mutation semantics on lazy arrays: in-place operators write into
the array (every name and view of it sees the change), views write back to
their base, scalars stay immutable, and NumPy's casting and broadcasting
errors.  Each case runs the same code on NumPy and on polyarray and
compares every array it touched."""
from __future__ import annotations

import operator

import numpy as np
import pytest

import polyarray as pa
from helpers import assert_same


def _both(fn, *arrays):
    """``fn(lib, *arrays)`` run with NumPy arrays and with polyarray arrays of
    the same data; returns (NumPy's arrays and result, polyarray's)."""
    mine = [pa.asarray(a.copy()) for a in arrays]
    ref = [a.copy() for a in arrays]
    return (ref, fn(np, *ref)), (mine, fn(pa, *mine))


def _check(target, ref, mine):
    (ref_arrays, ref_out), (my_arrays, my_out) = ref, mine
    outs = list(my_arrays) + ([my_out] if my_out is not None else [])
    got = pa.compile(outs, target=target)()
    want = list(ref_arrays) + ([ref_out] if ref_out is not None else [])
    for g, w in zip(got, want):
        assert_same(g, np.asarray(w))


_INT_OPS = ["iadd", "isub", "imul", "ifloordiv", "imod", "iand", "ior", "ixor",
            "ilshift", "irshift", "ipow"]
_FLOAT_OPS = ["iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow"]


@pytest.mark.parametrize("op,dtype", [(o, np.int32) for o in _INT_OPS]
                         + [(o, np.float64) for o in _FLOAT_OPS])
def test_every_in_place_operator_writes_the_array(target, op, dtype):
    x0 = np.arange(1, 13, dtype=dtype).reshape(3, 4)
    v0 = (np.arange(4, dtype=dtype) % 3 + 1)

    def fn(lib, x, v):
        alias = x
        y = getattr(operator, op)(x, v)        # broadcast along rows
        assert y is x                          # the same object, written
        return alias
    _check(target, *_both(fn, x0, v0))


def test_matmul_in_place(target):
    def fn(lib, a, b):
        keep = a
        a @= b
        return keep
    _check(target, *_both(fn, np.arange(9.0).reshape(3, 3), np.eye(3) * 2 + 1))


def test_reproducer_of_a_mutating_function(target):
    def kernel(x1, A, y):
        x1 += A @ y
    x = pa.asarray(np.zeros(2))
    kernel(x, pa.asarray(np.ones((2, 2))), pa.asarray(np.ones(2)))
    assert_same(pa.compile(x, target=target)(), np.array([2.0, 2.0]))


def test_casting_and_broadcasting_errors_are_numpys():
    x, ref = pa.arange(3), np.arange(3)
    for arr in (ref, x):
        with pytest.raises(TypeError, match="Cannot cast ufunc 'add' output from "
                                            "dtype\\('float64'\\) to dtype\\('int64'\\)"):
            arr += 0.5
        with pytest.raises(ValueError, match="non-broadcastable output operand"):
            arr += np.ones((2, 3), np.int64)
    assert_same(x.to_numpy(), np.arange(3))     # unchanged by the refused writes


def test_views_write_to_their_base_and_follow_it(target):
    def fn(lib, x):
        row, tail, t = x[1], x[:, 1:], x.T
        row += 100                  # a view of a row
        tail[::2] *= -1             # a view of a view, with steps
        t[0] = 7                    # through a transpose: x[:, 0]
        x[2, 3] = -5                # the base, seen by the views
        r = x.reshape(12)           # a view of a contiguous array
        r[-1] += 0.5
        s = x.squeeze()[None]       # squeeze, then a new axis: views
        s[0, 0, 0] = 42
        return lib.concatenate([row, t[3], tail[:, 0], r[:4], s.ravel()])
    _check(target, *_both(fn, np.arange(12.0).reshape(3, 4)))


def test_copies_are_not_views(target):
    def fn(lib, x):
        f = x.T.reshape(-1)         # NumPy copies: the memory is not C-ordered
        g = x.flatten()             # always a copy
        h = x[[1, 0]]               # advanced indexing copies
        k = x.copy()
        m = lib.array(x)
        for c in (f, g, h, k, m):
            c += 1000
        return lib.concatenate([f, g, h.ravel(), k.ravel(), m.ravel()])
    _check(target, *_both(fn, np.arange(6.0).reshape(2, 3)))


@pytest.mark.parametrize("make", [
    lambda lib, x: x[::2].ravel(),
    lambda lib, x: lib.ravel(x[:, ::2]),
    lambda lib, x: x.T.ravel(),
    lambda lib, x: x[1:].ravel(),           # contiguous: a view
    lambda lib, x: x.T.ravel(order="F"),
    lambda lib, x: x.ravel(order="F"),
    lambda lib, x: x[:, :1].ravel(),        # one column of a 2-D array: a copy
    lambda lib, x: x[:1].ravel(),
    lambda lib, x: x.reshape(-1)[::3].ravel(),     # 1-D, strided: a copy, where
    lambda lib, x: x.reshape(-1)[::3].reshape(-1),  # reshape gives a view
])
def test_ravel_is_a_view_only_where_the_memory_is_contiguous(target, make):
    def fn(lib, x):
        r = make(lib, x)
        r[...] += 100
        return r
    _check(target, *_both(fn, np.arange(12.0).reshape(3, 4)))


def test_function_spellings_of_views_are_views(target):
    def fn(lib, x, v):
        a = lib.atleast_2d(x)           # x itself
        a[0, 0] = -1
        b = lib.atleast_3d(x)           # x with a unit axis added: a view
        b[1, 1, 0] = -2
        c = lib.atleast_2d(v)           # (1, N): a view
        c[0, 1] = -3
        rows = lib.unstack(x)           # the rows: views
        rows[2][3] += 100
        cols = lib.unstack(x, axis=1)
        cols[0][1] *= 10
        return lib.concatenate([a.ravel(), b.ravel(), c.ravel()])
    _check(target, *_both(fn, np.arange(12.0).reshape(3, 4), np.arange(5.0)))


@pytest.mark.parametrize("make", [lambda lib, x: lib.diagonal(x),
                                  lambda lib, x: lib.linalg.diagonal(x),
                                  lambda lib, x: lib.diagonal(x, 1, 1, 0)])
def test_function_spellings_of_diagonal_are_read_only_views(make):
    for lib, x in ((np, np.arange(9.0).reshape(3, 3)),
                   (pa, pa.asarray(np.arange(9.0).reshape(3, 3)))):
        d = make(lib, x)
        x[0, 0] = x[1, 1] = x[0, 1] = x[1, 0] = -5     # the view follows its base
        assert_same(np.asarray(d), make(np, np.asarray(x)))
        with pytest.raises(ValueError, match="assignment destination is read-only"):
            d[0] = 1


def test_scalars_are_immutable_and_0d_arrays_are_not(target):
    def fn(lib, x):
        s = x.sum()                 # a scalar: += rebinds s
        t = s
        s += 1
        e = x[0, 1]                 # every axis indexed: a scalar too
        e *= 10
        z = lib.zeros(())           # a 0-d array: += writes it
        w = z
        z += 3
        v = x[0, ...]               # a view (of a row)
        v[1] = e
        return lib.stack([t, s, e, w, x[0, 1]])
    _check(target, *_both(fn, np.arange(6.0).reshape(2, 3)))


def test_a_negative_integer_power_of_no_elements_is_no_error(target):
    def fn(lib, x):
        v = x[1:]                   # empty: NumPy checks the values, and there are none
        v **= -1
        return x[:, :0] ** -2
    _check(target, *_both(fn, np.ones((1, 4), np.int32)))
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        pa.asarray(np.ones((1, 4), np.int32))[:, :1] ** -1


def test_read_only_views_refuse_writes():
    x = pa.asarray(np.arange(9.0).reshape(3, 3))
    d = x.diagonal()
    x[1, 1] = -1                     # the diagonal follows, as NumPy's view does
    assert_same(d.to_numpy(), np.array([0.0, -1.0, 8.0]))
    for view in (d, pa.broadcast_to(x[0], (2, 3))):
        with pytest.raises(ValueError, match="assignment destination is read-only"):
            view[0] = 1
    with pytest.raises(TypeError, match="does not support item assignment"):
        x.sum()[()] = 1


def test_shared_variables_refuse_in_place_writes():
    w = pa.shared(np.zeros(3), name="w_inplace")
    with pytest.raises(TypeError, match="cannot be assigned to in place"):
        w += 1
    with pytest.raises(TypeError, match="cannot be assigned to in place"):
        w[1:] *= 2
    assert_same(w.get_value(), np.zeros(3))


def test_ufunc_out_writes_into_the_array(target):
    def fn(lib, a, b):
        keep = a
        lib.add(a, b, out=a)
        lib.multiply(a[1:], 2, out=a[1:])
        np.subtract(a, 1, out=a)     # NumPy's own ufunc, dispatched on polyarray arrays
        return keep
    _check(target, *_both(fn, np.arange(4.0), np.ones(4)))


def test_setitem_then_read_is_one_write():
    x = pa.zeros((4, 4))
    x[1:3] += 1
    before = x.node
    x[1:3] = x[1:3]                  # the second half of ``x[1:3] += 1``: nothing to do
    assert x.node is before


def test_asarray_copy_true_is_a_copy():
    """``asarray(x, copy=True)`` is a new array: an in-place operator on it
    leaves ``x`` alone (the array API suite's in-place tests rely on it);
    without ``copy`` it is ``x`` itself, as NumPy's."""
    x = pa.asarray(np.arange(3.0))
    y = pa.asarray(x, copy=True)
    y += 1
    y[0] = 7
    np.testing.assert_array_equal(x.to_numpy(), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(y.to_numpy(), [7.0, 2.0, 3.0])
    assert pa.asarray(x) is x and pa.asarray(x, copy=None) is x


def test_shape_assignment_reshapes_in_place_as_numpy():
    """``x.shape = s``: the same memory in another shape (views made before
    keep theirs, and writes through either reach both); refused as NumPy
    refuses it where the memory does not take the shape without a copy."""
    for xp in (np, pa):
        a = xp.asarray(np.arange(6.0))
        v = a[1:3]
        a.shape = (2, 3)
        a[1] = 7
        v[0] = -1
        w = xp.asarray(np.arange(12.0)).reshape(3, 4).T[::2]
        got = [np.asarray(a), np.asarray(v)]
        if xp is np:
            want = got
        else:
            for g, e in zip(got, want):
                assert_same(g, e)
        with pytest.raises(AttributeError, match="Incompatible shape for in-place"):
            w.shape = 6
        with pytest.raises(ValueError, match="cannot reshape array of size 6 into shape"):
            a.shape = 5
    x = pa.asarray(np.arange(6, dtype=np.int32))
    t = x.reshape(2, 3).T
    with pytest.raises(AttributeError, match="Incompatible shape"):
        t.shape = (6,)                          # a transposed view: NumPy copies for that
    t.shape = (3, 1, 2)                         # adding a unit axis moves no memory
    assert t.shape == (3, 1, 2)
    y = x[::2]
    y.shape = (3, 1)
    y[2, 0] = 40
    assert_same(x.to_numpy(), np.array([0, 1, 2, 3, 40, 5], np.int32))
    with pytest.raises(AttributeError, match="cannot be reshaped in place"):
        pa.shared(np.zeros(4), name="s").shape = (2, 2)
