"""NumPy code unchanged: NumPy's functions, ufuncs and operators
build lazy nodes on polyarray arrays; concrete expressions evaluate eagerly
as one program; nothing ever becomes an object array."""
from __future__ import annotations

import numpy as np
import pytest

import polyarray as pa
from helpers import assert_same, random_array


def _check(target, build, *inputs):
    """``build`` run on NumPy arrays and on placeholders (compiled for
    ``target``) gives the same results."""
    rng = np.random.default_rng(0)
    values = [random_array(rng, shape, dtype) for shape, dtype in inputs]
    names = [f"in{k}" for k in range(len(inputs))]
    lazy = [pa.placeholder(n, v.shape, v.dtype) for n, v in zip(names, values)]
    outs = build(*lazy)
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    assert all(isinstance(o, pa.Array) for o in outs), [type(o) for o in outs]
    got = pa.compile(outs, target=target)(**dict(zip(names, values)))
    expect = build(*values)
    expect = list(expect) if isinstance(expect, (tuple, list)) else [expect]
    for g, e in zip(got, expect):
        assert_same(g, np.asarray(e))


F32 = ((5, 3), np.float32)


def test_numpy_functions_and_ufuncs_build_nodes(target):
    _check(target, lambda x, y: (
        np.exp(x), np.sum(x, axis=0), np.mean(x), np.where(x > 0, x, 0), np.dot(x, y.T),
        np.concatenate([x, y]), np.maximum(x, 0.5), np.add.reduce(x, axis=1),
        np.multiply.outer(x[:, 0], y[0]), np.transpose(x), np.reshape(x, (15,)),
        np.stack([x, y], axis=1), np.clip(x, -1, 1), np.sqrt(np.abs(x)), np.var(x, axis=1),
        np.argmax(x, axis=0), np.einsum("ij,kj->ik", x, y), np.matmul(x, y.T),
        np.exp(x, dtype=np.float64), np.tensordot(x, y, axes=([0], [0]))),
        F32, F32)


def test_mixed_ndarray_operands_build_nodes(target):
    c = np.linspace(-1, 1, 3).astype(np.float32)
    _check(target, lambda x: (c + x, c * x, c @ x.T, c > x, np.float32(2) * x, x ** 2,
                              2.0 ** x, c - x, x == c), F32)


def test_int_and_bool_dtypes_follow_numpy(target):
    _check(target, lambda a, m: (np.sum(a, axis=0), np.bitwise_and(a, 6), a // 3,
                                 np.logical_not(m), np.any(m, axis=1), np.where(m, a, -a),
                                 np.left_shift(a, 1) if hasattr(pa, "left_shift") else a),
           ((4, 6), np.int8), ((4, 6), np.bool_))


def test_unsupported_numpy_functions_raise_naming_them():
    x = pa.placeholder("x", (4,), np.float32)
    with pytest.raises(TypeError, match=r"numpy.trim_zeros is not supported"):
        np.trim_zeros(x)
    # np.emath.sqrt shares pa.sqrt's name, not its rule (complex where x < 0): refused
    for f in (np.emath.sqrt, np.emath.log, np.emath.arcsin):
        with pytest.raises(TypeError, match=rf"numpy.emath.{f.__name__} is not supported.*"
                                            "depends on the values"):
            f(x)
    with pytest.raises(TypeError, match=r"numpy.nextafter is not supported by polyarray"):
        np.nextafter(x, 3)
    with pytest.raises(pa.LazyValueError, match="unbound placeholder 'x'"):
        np.exp(x, out=np.empty(4, np.float32))        # a NumPy out= needs the values now


def test_out_arguments_are_written_as_numpy_writes_them():
    data = np.arange(4, dtype=np.float32)
    host = np.empty(4, np.float32)
    assert np.exp(pa.asarray(data), out=host) is host
    assert_same(host, np.exp(data))
    y = pa.zeros((), np.float32)
    assert np.sum(pa.asarray(data), out=y) is y
    assert_same(y.to_numpy(), np.float32(6))
    i = pa.zeros((), np.int32)              # a reduction casts with NumPy's "unsafe" rule
    assert np.sum(pa.asarray(data) * 0.75, out=i) is i
    assert_same(i.to_numpy(), np.sum(data * 0.75, out=np.zeros((), np.int32)))
    with pytest.raises(TypeError, match="same_kind"):   # a ufunc with "same_kind"
        np.exp(pa.asarray(data), out=pa.zeros(4, np.int32))
    z = pa.asarray(np.array([3.0, 1.0, 2.0]))
    alias = z
    z.sort()
    assert_same(alias.to_numpy(), np.array([1.0, 2.0, 3.0]))


def test_no_object_arrays_ever():
    x = pa.placeholder("x", (5, 3), np.float32)
    for fn in (lambda: np.asarray(x), lambda: np.array([x, x]), lambda: float(x[0, 0]),
               lambda: int(x.sum()), lambda: x.tolist(), lambda: x.item(0)):
        with pytest.raises(pa.LazyValueError, match=r"unbound placeholder 'x' \(at "):
            fn()
    with pytest.raises(ValueError, match="copy"):
        np.asarray(pa.asarray(np.ones(3)), copy=False)


def test_concrete_expressions_evaluate_as_one_program():
    data = np.arange(300 * 300, dtype=np.float64).reshape(300, 300)
    a = pa.array(data)
    got = np.asarray(a * 2)
    assert got.dtype == np.float64 and got.shape == (300, 300)
    np.testing.assert_array_equal(got, data * 2)
    assert float(a.sum()) == data.sum() and int(a[1, 2]) == 302
    assert bool((a > -1).all()) is True
    assert a[0, :3].tolist() == [0.0, 1.0, 2.0] and a.item(5) == 5.0
    assert list(range(10))[pa.array(np.int64(3))] == 3
    with pytest.raises(TypeError, match="integer"):
        [0][pa.array(1.5)]
    with pytest.raises(ValueError, match="ambiguous"):
        bool(a > 0)


def test_metadata_functions_do_not_evaluate():
    x = pa.placeholder("x", (5, 3), np.float32)
    assert np.shape(x) == (5, 3) and np.ndim(x) == 2 and np.size(x) == 15
    assert np.result_type(x, np.float64) == np.float64
    c = np.copy(x)           # a new handle (x[i] = v rebinds one), the same node
    assert c is not x and c.node is x.node


def test_array_api_attributes(target):
    x = pa.placeholder("x", (2, 3, 4), np.float32)
    assert x.mT.shape == (2, 4, 3)
    assert x.__array_namespace__() is pa
    with pytest.raises(ValueError, match="2023.12"):
        x.__array_namespace__(api_version="2099.01")
    with pa.target(target):
        assert x.device == pa.Device(target) and x.to_device(x.device) is x
    assert pa.__array_api_version__ == "2023.12"
    info = pa.__array_namespace_info__()
    assert info.default_dtypes()["real floating"] == np.float64
    assert "float32" in info.dtypes() and "uint8" in info.dtypes(kind="integral")
    assert pa.get_array_module(x, np.ones(2)) is pa and pa.get_array_module(np.ones(2)) is np
    assert pa.array_namespace(np.ones(2), x) is pa


def test_dlpack_of_a_concrete_expression_on_the_host():
    with pa.target("numpy"):
        got = np.from_dlpack(pa.array(np.arange(4.0)) * 3)
    np.testing.assert_array_equal(got, np.arange(4.0) * 3)


def test_repr_reads_as_written():
    x = pa.placeholder("x", (3,), np.float32)
    assert repr(pa.arange(5) + 1).endswith("expr=(arange(0, 5, 1) + 1))")
    assert repr(x + 0.1).endswith("expr=(x + 0.1))")           # float32 digits
    assert repr(pa.full(2, np.float32(0.1))).endswith("expr=full(0.1))")


def test_small_numpy_conveniences(target):
    fill = np.array([1, 2, 3], np.int16)
    got = pa.compile([pa.full((2, 3), fill), pa.full((2, 3), fill, dtype=np.float32)],
                     target=target)()
    assert_same(got[0], np.full((2, 3), fill))
    assert_same(got[1], np.full((2, 3), fill, dtype=np.float32))
    with pytest.raises(TypeError, match="rtol must be a scalar"):
        pa.isclose(pa.asarray(np.ones(2)), 1.0, rtol=pa.asarray(np.ones(2)))
    with pytest.raises(TypeError, match="object dtype"):
        pa.array([{}, 1])
    with pytest.raises(NotImplementedError, match="out="):
        pa.cumsum(pa.asarray(np.ones(3)), out=np.empty(3))
    host = np.empty(3)
    assert np.cumsum(pa.asarray(np.ones(3)), out=host) is host   # NumPy's dispatch writes it
    assert_same(host, np.arange(1.0, 4.0))


def test_import_polyarray_as_np_runs_numpy_code(target):
    import polyarray as xp                      # what `import polyarray as np` gives

    def floyd_warshall(path):                   # NPBench's, with xp for np
        for k in range(path.shape[0]):
            path[:] = xp.minimum(path[:], xp.add.outer(path[:, k], path[k, :]))

    rng = np.random.default_rng(3)
    w = rng.integers(1, 20, (6, 6)).astype(np.int32)
    ref = w.copy()
    for k in range(6):
        ref[:] = np.minimum(ref, np.add.outer(ref[:, k], ref[k, :]))
    path = xp.asarray(w)
    floyd_warshall(path)
    assert_same(pa.compile(path, target=target)(), ref)
    buf = xp.ndarray((2, 3), dtype=xp.float32)   # NumPy's constructor: uninitialized -> zeros
    assert isinstance(buf, xp.ndarray) and isinstance(np.zeros(2), xp.ndarray)
    assert buf.shape == (2, 3) and buf.dtype == np.float32
    assert xp.intp is np.intp and xp.newaxis is None and xp.float64 is np.float64
    assert_same(xp.mgrid[0:2, 0:3], np.mgrid[0:2, 0:3])      # NumPy's own, on the host
    with pytest.raises(AttributeError, match="no attribute 'not_a_numpy_name'"):
        xp.not_a_numpy_name
    with pytest.raises(TypeError, match="numpy.histogramdd is not supported"):
        xp.histogramdd(xp.asarray(np.ones((3, 2))))
