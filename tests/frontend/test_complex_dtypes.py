"""complex64 and complex128 in the frontend, as NumPy 2 has them: the names,
creation, NEP 50 promotion (a Python complex is weak), ``result_type`` and
``can_cast``, the parts and tests (``real``, ``imag``, ``conj``, ``angle``,
``iscomplex``...), NumPy's errors for functions with no complex loop, the
ComplexWarning of a cast that drops an imaginary part (at the user's line),
and ``.real``/``.imag`` as views that write back.  Values on the NumPy
target (every target: ``tests/targets/test_complex.py``)."""
import warnings

import numpy as np
import pytest

import polyarray as pa
from helpers import COMPLEX, assert_same


def test_names_are_numpys():
    assert pa.complex64 is np.complex64 and pa.complex128 is np.complex128
    assert pa.csingle is np.csingle and pa.cdouble is np.cdouble
    for name in ("complex64", "complex128", "csingle", "cdouble", "angle", "iscomplex",
                 "isreal", "iscomplexobj", "isrealobj"):
        assert name in pa.__all__


@pytest.mark.parametrize("value", [1j, 2 - 3.5j, [1 + 1j, 2], np.complex64(1 - 1j),
                                   np.array([[1j, 0], [3, 4j]], np.complex64)], ids=repr)
def test_asarray(value):
    x = pa.asarray(value)
    want = np.asarray(value)
    assert x.dtype == want.dtype and x.shape == want.shape
    np.testing.assert_array_equal(x.to_numpy(), want)
    y = pa.asarray(value, dtype=pa.complex128)
    assert y.dtype == np.complex128


@pytest.mark.parametrize("a,b", [(np.complex64, np.float64), (np.complex64, np.int32),
                                 (np.complex64, np.float16), (np.complex128, np.float32),
                                 (np.complex64, np.uint64), (np.float32, np.complex64),
                                 (np.bool_, np.complex64), (np.complex64, np.complex128)])
def test_array_promotion(a, b):
    x, y = pa.placeholder("x", (2,), a), pa.placeholder("y", (2,), b)
    want = np.result_type(a, b)
    assert (x + y).dtype == want and (x * y).dtype == want and (y / x).dtype == want
    assert pa.result_type(x, y) == want and pa.result_type(a, b) == want


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int64, np.bool_,
                                   np.complex64, np.float16], ids=lambda d: np.dtype(d).name)
def test_python_complex_is_weak(dtype):
    """NEP 50: ``float32_array * 1j`` is complex64; with an integer array the
    default complex."""
    x = pa.placeholder("x", (3,), dtype)
    with np.errstate(all="ignore"):
        want = np.ones(3, dtype) * 1j
    assert (x * 1j).dtype == want.dtype and (1j + x).dtype == want.dtype
    assert pa.result_type(x, 1j) == np.result_type(np.ones(3, dtype), 1j)


def test_can_cast():
    z = pa.placeholder("z", (2,), np.complex64)
    assert pa.can_cast(z, np.complex128) and not pa.can_cast(z, np.float64)
    assert pa.can_cast(np.float32, pa.complex64)
    assert pa.can_cast(z, np.float32, "unsafe") and not pa.can_cast(z, np.float32, "same_kind")
    assert pa.iscomplexobj(z) and not pa.isrealobj(z)
    assert not pa.iscomplexobj(pa.zeros(2)) and pa.isrealobj(pa.zeros(2))
    assert pa.iscomplexobj(1j) and pa.isrealobj([1.0]) and np.iscomplexobj(z)
    assert pa.isdtype(z.dtype, "complex floating") and pa.finfo(z.dtype) == np.finfo(np.float32)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.float32, np.float64,
                                   np.complex64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_parts_and_tests(dtype):
    """On real input too, every function answers as NumPy's (dtypes included:
    ``conj`` of bool is int8, ``angle`` of int8 is float16)."""
    x = (np.array([[1.5, -2, 0], [3, 0, -1]]) + (1j * np.array([[1, 0, -0.0], [2, 5, -4]])
         if np.dtype(dtype).kind == "c" else 0)).astype(dtype)
    X = pa.placeholder("x", x.shape, dtype)
    fns = [np.real, np.imag, np.conj, np.conjugate, np.angle, lambda v: np.angle(v, deg=True),
           np.iscomplex, np.isreal, lambda v: v.real, lambda v: v.imag, lambda v: v.conj(),
           lambda v: v.conjugate()]
    pas = [pa.real, pa.imag, pa.conj, pa.conjugate, pa.angle, lambda v: pa.angle(v, deg=True),
           pa.iscomplex, pa.isreal, lambda v: v.real, lambda v: v.imag, lambda v: v.conj(),
           lambda v: v.conjugate()]
    exprs = [g(X) for g in pas]
    got = pa.compile(exprs + [X], target="numpy")(x=x)      # X: some ignore their input
    for k, (f, e, g) in enumerate(zip(fns, exprs, got)):
        want = np.asarray(f(x))
        assert e.dtype == want.dtype, f"{k}: {e.dtype} != {want.dtype}"
        assert_same(g, want, f"part/test {k} of {np.dtype(dtype).name}")
    assert pa.real(X) is X or np.dtype(dtype).kind == "c"


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "floor_divide", "remainder",
                                  "arctan2", "hypot", "copysign", "logaddexp", "heaviside",
                                  "bitwise_and", "signbit", "cbrt", "fmod", "left_shift",
                                  "deg2rad"])
def test_no_complex_loop_is_numpys_error(name):
    z = np.array([1 + 1j, 2j])
    fn = getattr(np, name)
    args = (z,) * fn.nin
    with pytest.raises(TypeError):
        fn(*args)
    if not hasattr(pa, name):
        pytest.skip(f"pa.{name} does not exist")
    with pytest.raises(TypeError):
        getattr(pa, name)(*[pa.asarray(a) for a in args])


def test_ordering_comparisons_follow_numpy():
    """NumPy 2 orders complex values lexicographically (``<``, ``maximum``,
    ``sort``); the array API leaves them undefined, NumPy defines them."""
    z = np.array([1 + 2j, 1 + 3j, 2 + 0j, complex(np.nan, 0)])
    w = np.array([1 + 3j, 1 + 2j, 1 + 9j, 0j])
    Z, W = pa.asarray(z), pa.asarray(w)
    with np.errstate(invalid="ignore"):
        for op in ("less", "less_equal", "greater", "greater_equal", "maximum", "minimum"):
            assert_same(getattr(pa, op)(Z, W).to_numpy(), getattr(np, op)(z, w), op)
        assert_same((Z < W).to_numpy(), z < w, "<")


def test_cast_to_real_warns_at_the_users_line():
    z = pa.placeholder("z", (2,), np.complex64)
    with pytest.warns(np.exceptions.ComplexWarning,
                      match="Casting complex values to real discards the imaginary part") as w:
        f = z.astype(np.float32)
    assert w[0].filename == __file__
    assert f.dtype == np.float32
    with pytest.warns(np.exceptions.ComplexWarning) as w:
        pa.astype(z, np.int16)
    assert w[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = z.astype(bool)          # both parts' truth: no warning, as NumPy
        c = z.astype(np.complex128)
    np.testing.assert_array_equal(b.to_numpy(z=np.array([1j, 0], np.complex64)), [True, False])
    assert c.dtype == np.complex128
    np.testing.assert_array_equal(f.to_numpy(z=np.array([1 + 5j, -2j], np.complex64)), [1, 0])


def test_real_and_imag_are_views_that_write_back():
    z = pa.asarray(np.array([1 + 2j, 3 - 4j, 5j], np.complex128))
    re, im = z.real, z.imag
    z.real = np.array([10.0, 20.0, 30.0])
    im[1] = 7
    z.imag[2] += 1
    want = np.array([10 + 2j, 20 + 7j, 30 + 6j])
    np.testing.assert_array_equal(z.to_numpy(), want)
    np.testing.assert_array_equal(re.to_numpy(), want.real)     # the views follow
    np.testing.assert_array_equal(im.to_numpy(), want.imag)
    x = pa.asarray(np.array([1.0, 2.0]))
    assert x.real is x
    with pytest.raises(ValueError, match="read-only"):
        x.imag[0] = 1.0
    z.real[...] = np.inf                                       # joined exactly: no NaN
    np.testing.assert_array_equal(z.to_numpy(), np.array([np.inf + 2j, np.inf + 7j,
                                                          np.inf + 6j]))


def test_inplace_operators():
    z = pa.asarray(np.array([1 + 1j, 2 - 1j], np.complex64))
    z *= 1j
    z += 1
    z /= 2 - 1j
    want = np.array([1 + 1j, 2 - 1j], np.complex64)
    want *= 1j
    want += 1
    want /= 2 - 1j
    assert_same(z.to_numpy(), want, "in place")
    x = pa.asarray(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="same_kind"):
        x += 1j             # NumPy: complex128 cannot be written into float64 (same_kind)


def test_bindings_and_scalars():
    z = pa.placeholder("z", (2,), np.complex64)
    prog = pa.compile(z * 2, target="numpy")
    np.testing.assert_array_equal(prog(z=[1 + 1j, 2]), np.array([2 + 2j, 4], np.complex64))
    np.testing.assert_array_equal(prog(z=[1.5, 2]), np.array([3, 4], np.complex64))
    with pytest.raises(TypeError, match="'x'.*expected float64, got complex128"):
        pa.compile(pa.placeholder("x", (2,), np.float64) * 2, target="numpy")(x=[1j, 2])
    s = pa.asarray(np.complex64(3 - 4j))
    assert complex(s) == 3 - 4j and abs(s).item() == 5.0
    assert pa.sum(pa.asarray([1j, 2j])).item() == 3j


def test_jit_and_array_function():
    """NumPy's functions on polyarray arrays dispatch (``np.real``,
    ``np.angle``, ``np.vdot``...), and ``pa.jit`` traces complex code."""
    z = np.array([1 + 2j, -3 + 0.5j, 2j])

    def f(a, b):
        c = np.conj(a) * b + 1j
        return np.abs(c).sum() + np.real(np.vdot(a, b)), np.angle(c), c.imag

    got = pa.jit(f)(z, z[::-1].copy())
    want = f(z, z[::-1].copy())
    for g, w in zip(got, want):
        assert_same(np.asarray(g), np.asarray(w), "jit")


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
def test_complex_arange_and_fill(dtype):
    for args in [(5,), (0.5, 3.0, 0.25), (1 + 1j, 4 + 3j), (0, 5 + 2j), (0, 3, 1 + 1j)]:
        want = np.arange(*args, dtype=dtype)
        got = pa.arange(*args, dtype=dtype)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.to_numpy(), want)
    np.testing.assert_array_equal(pa.arange(1j).to_numpy(), np.arange(1j))
    with pytest.raises(TypeError):
        np.arange(0, 5 + 1j, dtype=float)
    with pytest.raises(TypeError):
        pa.arange(0, 5 + 1j, dtype=float)
