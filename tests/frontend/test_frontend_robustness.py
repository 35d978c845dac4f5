"""The frontend gives the right answer or a clear error that names the input:
exact sizes, ndarray subclasses, ``arange``, byte order, integer
axes, index-array dtypes, a placeholder named ``self`` and float16 on every
target."""
import inspect

import numpy as np
import pytest

import polyarray as pa

from helpers import assert_same, evaluate

TOO_BIG = "array is too big"


def _numpy_error(fn):
    try:
        fn()
    except Exception as e:      # noqa: BLE001
        return e
    return None


# --- 1. sizes are Python ints; impossible shapes are refused at build time ---

def test_size_is_exact_python_int():
    x = pa.placeholder("x", (2**32, 2**31 - 1), np.int8)      # 2**63 - 2**32 bytes: valid
    assert type(x.size) is int and x.size == 2**32 * (2**31 - 1)
    assert x.nbytes == x.size
    big = pa.ones((2**30, 2**29), np.float64)             # 2**62 bytes: valid
    assert big.sum().node.array.size == 2**59
    assert pa.ones((2**31, 2**31), np.int8).size == 2**62
    assert pa.zeros((0, 2**20, 2**20)).size == 0


BUILDERS = {
    "placeholder": lambda: pa.placeholder("x", (2**32, 2**32), np.float32),
    "ones": lambda: pa.ones((2**32, 2**32), np.float32),
    "zeros": lambda: pa.zeros((2**32, 2**32)),
    "full": lambda: pa.full((2**40, 2**40), 1, np.int8),
    "empty": lambda: pa.empty((2**62,), np.int16),
    "zero_dim_skipped": lambda: pa.zeros((0, 2**40, 2**40)),
    "eye": lambda: pa.eye(2**32),
    "broadcast": lambda: (pa.placeholder("a", (2**32, 1), np.float32)
                          + pa.placeholder("b", (1, 2**32), np.float32)),
    "broadcast_to": lambda: pa.broadcast_to(pa.zeros(1, np.float32), (2**32, 2**32)),
    "reshape": lambda: pa.zeros(0).reshape(0, 2**40, 2**40),
    "einsum": lambda: pa.einsum("i,j->ij", pa.placeholder("a", (2**32,), np.float32),
                                pa.placeholder("b", (2**32,), np.float32)),
    "outer": lambda: pa.outer(pa.placeholder("a", (2**32,), np.float32),
                              pa.placeholder("b", (2**32,), np.float32)),
    "arange": lambda: pa.arange(0, 2**62, dtype=np.float64),
}


@pytest.mark.parametrize("name", list(BUILDERS))
def test_impossible_shapes_raise_numpys_error(name):
    with pytest.raises(ValueError, match=TOO_BIG):
        BUILDERS[name]()


def test_numpy_refuses_the_same_shapes():
    for shape, dtype in [((2**32, 2**32), np.float32), ((0, 2**40, 2**40), np.float64),
                         ((2**62,), np.int16)]:
        for fn in (np.empty, pa.zeros):
            with pytest.raises(ValueError, match=TOO_BIG):
                fn(shape, dtype)
    for fn in (np.empty, lambda s: pa.placeholder("x", s)):
        with pytest.raises(ValueError, match="Maximum allowed dimension exceeded"):
            fn((2**63, 0))


def test_huge_valid_program_still_has_a_kernel(device_target):
    x = pa.placeholder("x", (2**32, 2**30), np.int8)
    prog = pa.compile(x + 1, target=device_target)
    assert len(prog.kernels) == 1


# --- 2. ndarray subclasses ----------------------------------------------------

class _Plain(np.ndarray):
    """A subclass that adds nothing to the values' meaning."""


class _Units(np.ndarray):
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):   # e.g. a units library
        return NotImplemented


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_masked_binding_refused(target):
    x = pa.placeholder("x", (3,))
    prog = pa.compile(x + 1, target=target)
    m = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    with pytest.raises(TypeError, match=r"placeholder 'x' is a numpy\.ma\.MaskedArray"):
        prog(x=m)
    with pytest.raises(TypeError, match=r"placeholder 'x' is a numpy\.matrix"):
        pa.compile(pa.placeholder("x", (1, 3)) * 2, target=target)(x=np.matrix([[1.0, 2, 3]]))
    with pytest.raises(TypeError, match=r"placeholder 'x' .*overrides"):
        prog(x=np.arange(3.0).view(_Units))


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_masked_and_matrix_refused_as_data():
    with pytest.raises(TypeError, match=r"pa\.array input is a numpy\.ma\.MaskedArray"):
        pa.array(np.ma.array([1.0, 2.0], mask=[0, 1]))
    with pytest.raises(TypeError, match="MaskedArray"):
        pa.asarray(np.ma.masked)
    with pytest.raises(TypeError, match=r"numpy\.matrix"):
        pa.array(np.matrix([[1, 2]]))
    x = pa.placeholder("x", (2,))
    with pytest.raises(TypeError, match="MaskedArray"):
        x + np.ma.array([1.0, 2.0], mask=[0, 1])
    with pytest.raises(TypeError, match="MaskedArray"):
        np.ma.array([1.0, 2.0], mask=[0, 1]) + x


def test_plain_subclasses_are_their_data(target, tmp_path):
    mm = np.memmap(tmp_path / "m.dat", dtype=np.int32, mode="w+", shape=(4,))
    mm[:] = [1, 2, 3, 4]
    sub = np.array([5, 6, 7, 8], np.int32).view(_Plain)
    x = pa.placeholder("x", (4,), np.int32)
    y = pa.placeholder("y", (4,), np.int32)
    out = evaluate(x * 3 + y + pa.array(sub), target, x=mm, y=sub)
    assert_same(out, np.asarray(mm) * 3 + np.asarray(sub) * 2)
    assert type(out) is np.ndarray


# --- 3. arange matches NumPy ----------------------------------------------------

ARANGE = [
    ((5,), {}), ((5.0,), {}), ((1.5,), {}), ((-3,), {}), ((True,), {}),
    ((np.float32(3),), {}), ((np.int8(4),), {}), ((np.uint64(3),), {}),
    ((2, 11, 3), {}), ((10, 0, -3), {}), ((0, -5, -1.5), {}), ((0.5, 3.0, 0.25), {}),
    ((0.1, 7.3, 0.37), {}), ((-3.3, 5, 0.13), {}), ((1, 2, 0.3), {}),
    ((0, 1, 0.1), {"dtype": np.float32}), ((5,), {"dtype": np.float32}),
    ((1e7, 1e7 + 100, 0.7), {"dtype": np.float32}),
    ((0.5, 5), {"dtype": np.int64}), ((5, 0, -1), {"dtype": np.uint8}),
    ((0, 300, 100), {"dtype": np.int8}), ((250, 0, -7), {"dtype": np.uint8}),
    ((2**63, 2**63 + 5), {"dtype": np.uint64}), ((10, 0, -1), {"dtype": np.uint64}),
    ((0, 10, 3), {"dtype": np.int16}), ((2.5, 9.1, 1.3), {"dtype": np.int32}),
    ((2,), {"dtype": bool}), ((1,), {"dtype": bool}), ((0, 1, np.inf), {}),
    ((5, 5), {}), ((5, 0), {}), ((0, 1, -np.inf), {}),
    ((np.uint8(5), np.uint8(0), np.int8(-1)), {}),
]


def _case_id(c):
    return ",".join(map(repr, c[0])) + ("," + c[1]["dtype"].__name__ if c[1] else "")


@pytest.mark.parametrize("args,kw", ARANGE, ids=[_case_id(c) for c in ARANGE])
def test_arange_matches_numpy(args, kw, target):
    with np.errstate(all="ignore"):
        want = np.arange(*args, **kw)
        got_expr = pa.arange(*args, **kw)
    assert got_expr.dtype == want.dtype and got_expr.shape == want.shape
    got = evaluate(got_expr + pa.zeros((), want.dtype), target)
    if want.dtype.kind == "f" and target == "numpy":
        np.testing.assert_array_equal(got, want)       # the same formula, exactly
    assert_same(got, want)


ARANGE_ERRORS = [
    ((3,), {"dtype": bool}), ((0, np.nan), {}), ((0, np.inf), {}), ((0, 10, 0), {}),
    ((0.0, 1.0, 0.0), {}), ((0, 10, np.float64(0)), {}), ((-1.5, 3), {"dtype": np.uint8}),
    ((np.float64(-1.5), 3), {"dtype": np.uint8}), ((0, 2**62), {"dtype": np.float64}),
    ((np.uint8(5), 2.5, -1), {}),
]


@pytest.mark.parametrize("args,kw", ARANGE_ERRORS, ids=[_case_id(c) for c in ARANGE_ERRORS])
def test_arange_errors_match_numpy(args, kw):
    with np.errstate(all="ignore"):
        want = _numpy_error(lambda: np.arange(*args, **kw))
        assert want is not None
        with pytest.raises(type(want)) as got:
            pa.arange(*args, **kw)
    assert str(got.value).startswith(str(want))     # ours may add the shape


# dtype=None (what generic array-API code passes) means NumPy's default dtype
_I32 = np.arange(3, dtype=np.int32)
DTYPE_NONE = [
    ("zeros", (3,), {}), ("ones", (3,), {}), ("empty", (3,), {}),
    ("full", (3, 2), {}), ("full", (3, True), {}), ("full", (3, np.float32(1.5)), {}),
    ("eye", (3,), {}), ("eye", (2, 3), {"k": 1}), ("identity", (3,), {}),
    ("tri", (3,), {}), ("tri", (2, 4), {"k": 1}), ("tri", (4, 3), {"k": -2}),
    ("tri", (-1,), {}), ("arange", (3,), {}),
    ("arange", (0.5, 3), {}), ("linspace", (0, 1, 5), {}),
    ("linspace", (np.float32(0), np.float32(1), 5), {}),
    ("zeros_like", (_I32,), {}), ("ones_like", (_I32,), {}), ("empty_like", (_I32,), {}),
    ("full_like", (_I32, 2.5), {}), ("array", ([1, 2],), {}), ("asarray", ([1.5],), {}),
]


@pytest.mark.parametrize("name,args,kw", DTYPE_NONE,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(DTYPE_NONE)])
def test_dtype_none_is_numpys_default(name, args, kw, target):
    want = getattr(np, name)(*args, dtype=None, **kw)
    got = getattr(pa, name)(*args, dtype=None, **kw)
    assert got.dtype == want.dtype and got.shape == want.shape
    if not name.startswith("empty"):        # NumPy's values are not defined there
        assert_same(evaluate(got + pa.zeros((), want.dtype), target), want)
    if name in ("eye", "identity", "tri") and not kw:     # and with a dtype
        want = getattr(np, name)(*args, dtype=np.int32)
        assert_same(evaluate(getattr(pa, name)(*args, dtype=np.int32), target), want)


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_dtype_none_keeps_a_float_written_into_it(name, target):
    want = np.zeros(3) if name == "empty" else getattr(np, name)(3, dtype=None)
    got = getattr(pa, name)(3, dtype=None)
    want[0] = 0.7
    got[0] = 0.7
    assert_same(evaluate(got, target), want)       # not 0 in an int64 array


# --- 4. byte order ------------------------------------------------------------

def test_big_endian_bindings_are_converted(target):
    x = pa.placeholder("x", (4,), np.float32)
    i = pa.placeholder("i", (4,), np.int32)
    xv = np.array([1.5, -2.0, 3.25, 1e30], ">f4")
    iv = np.array([1, -2, 2**30, 7], ">i4")
    got = evaluate([x * 2, i + 1, pa.array(xv) + pa.array(iv)], target, x=xv, i=iv)
    assert_same(got[0], xv.astype(np.float32) * 2)
    assert_same(got[1], iv.astype(np.int32) + 1)
    assert_same(got[2], xv.astype(np.float32) + iv.astype(np.int32))


def test_big_endian_data_and_dtypes():
    data = pa.array(np.arange(3, dtype=">i8"))
    assert data.dtype == np.dtype(np.int64) and data.dtype.isnative
    np.testing.assert_array_equal(data.to_numpy(), [0, 1, 2])
    assert pa.placeholder("x", 3, ">f4").dtype == np.dtype(np.float32)
    assert pa.arange(3, dtype=">f8").dtype == np.dtype(np.float64)


def test_wrong_dtype_names_byte_order():
    x = pa.placeholder("x", (3,), np.float32)
    with pytest.raises(TypeError, match=r"expected float32, got float64 \(big-endian >f8\)"):
        (x + 1).to_numpy(x=np.zeros(3, ">f8"))


# --- 5. axes are integers -----------------------------------------------------

INT_MSG = "'float' object cannot be interpreted as an integer"
_X = pa.placeholder("x", (1, 3, 4))
_V = pa.placeholder("v", (3, 4))
AXIS_CALLS = {
    "sum": lambda: _X.sum(axis=1.0), "sum_tuple": lambda: pa.sum(_X, axis=(0, 1.0)),
    "prod": lambda: pa.prod(_X, axis=1.0), "mean": lambda: _X.mean(axis=1.0),
    "var": lambda: pa.var(_X, axis=1.0), "std": lambda: _X.std(axis=1.0),
    "max": lambda: _X.max(axis=1.0), "min": lambda: pa.min(_X, axis=1.0),
    "any": lambda: pa.any(_X, axis=1.0), "all": lambda: _X.all(axis=1.0),
    "argmax": lambda: _X.argmax(axis=1.0), "argmin": lambda: pa.argmin(_X, 1.0),
    "squeeze": lambda: _X.squeeze(0.0), "squeeze_fn": lambda: pa.squeeze(_X, (0.0,)),
    "expand_dims": lambda: pa.expand_dims(_X, 1.0),
    "expand_dims_tuple": lambda: pa.expand_dims(_X, (0, 1.0)),
    "moveaxis_src": lambda: pa.moveaxis(_X, 1.0, 0),
    "moveaxis_dst": lambda: pa.moveaxis(_X, 1, 0.0),
    "swapaxes": lambda: _X.swapaxes(1.0, 0), "swapaxes_fn": lambda: pa.swapaxes(_X, 0, 2.0),
    "transpose": lambda: pa.transpose(_X, (1.0, 0, 2)),
    "transpose_method": lambda: _X.transpose(1.0, 0, 2),
    "permute_dims": lambda: pa.permute_dims(_X, [0, 2.0, 1]),
    "concatenate": lambda: pa.concatenate([_V, _V], 1.0),
    "stack": lambda: pa.stack([_V, _V], 1.0), "flip": lambda: pa.flip(_X, 1.0),
    "flip_tuple": lambda: pa.flip(_X, (1.0,)),
    "tensordot_pairs": lambda: pa.tensordot(_V, _V, axes=([1.0], [1])),
    "tensordot_int": lambda: pa.tensordot(_V, _V, axes=1.0),
}


@pytest.mark.parametrize("name", list(AXIS_CALLS))
def test_float_axis_is_a_type_error(name):
    with pytest.raises(TypeError, match=INT_MSG):
        AXIS_CALLS[name]()


def test_bool_axis_refused():
    with pytest.raises(TypeError, match="an integer is required"):
        _X.sum(axis=True)
    with pytest.raises(TypeError, match="an integer is required"):
        pa.argmax(_X, np.True_)


def test_other_integer_like_args():
    with pytest.raises(TypeError, match=INT_MSG):
        pa.linspace(0, 1, 2.5)
    with pytest.raises(TypeError, match=INT_MSG):
        pa.eye(3, k=1.5)
    with pytest.raises(TypeError, match=INT_MSG):
        pa.round(_V, 1.5)


def test_numpy_integer_axes_still_work(target):
    xv = np.arange(12.0).reshape(1, 3, 4)
    got = evaluate([_X.sum(axis=np.int64(1)), pa.flip(_X, np.array([1, 2])),
                    pa.moveaxis(_X, np.int32(2), 0), _X.argmax(axis=np.uint8(2))],
                   target, x=xv)
    assert_same(got[0], xv.sum(axis=1))
    assert_same(got[1], np.flip(xv, (1, 2)))
    assert_same(got[2], np.moveaxis(xv, 2, 0))
    assert_same(got[3], xv.argmax(axis=2))


# --- 6. index arrays ----------------------------------------------------------

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64]


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_lazy_index_arrays_of_every_integer_dtype(dtype, target):
    dtype = np.dtype(dtype)
    info = np.iinfo(dtype)
    # 200 elements: ``i + 200`` would overflow int8, NumPy converts to intp first
    xv = np.arange(200 * 3, dtype=np.int64).reshape(200, 3)
    iv = np.array([0, 5, min(199, info.max), 3], dtype)
    if dtype.kind == "i":
        iv[1], iv[3] = -1, max(info.min, -200)
    if dtype == np.uint64:
        iv[3] = 2**64 - 1               # NumPy's intp conversion wraps it to -1
    x = pa.placeholder("x", xv.shape, xv.dtype)
    i = pa.placeholder("i", iv.shape, dtype)
    got = evaluate([x[i], x[:, i[:2] % 3], x[i, 1]], target, x=xv, i=iv)
    assert_same(got[0], xv[iv])
    assert_same(got[1], xv[:, iv[:2] % 3])
    assert_same(got[2], xv[iv, 1])


def test_gather_index_is_int64_in_the_expression():
    x = pa.placeholder("x", (10,))
    for dt in INT_DTYPES:
        expr = repr(x[pa.placeholder("i", (2,), dt)].node.expr)
        assert ("cast_int64" in expr) == (np.dtype(dt) != np.int64), (dt, expr)


@pytest.mark.parametrize("bad,dtype", [(-1000, np.int64), (10, np.int32), (-11, np.int8),
                                       (200, np.uint8)])
def test_out_of_bounds_names_the_users_index(bad, dtype):
    xv = np.arange(10.0)
    iv = np.array([1, bad], dtype)
    want = _numpy_error(lambda: xv[iv])
    assert isinstance(want, IndexError)
    x = pa.placeholder("x", (10,))
    i = pa.placeholder("i", (2,), dtype)
    with pytest.raises(IndexError) as got:
        x[i].to_numpy(x=xv, i=iv)
    assert str(got.value) == str(want) == \
        f"index {bad} is out of bounds for axis 0 with size 10"


def test_out_of_bounds_names_the_axis():
    x = pa.placeholder("x", (4, 6))
    i = pa.placeholder("i", (2,), np.int16)
    with pytest.raises(IndexError, match="index -7 is out of bounds for axis 1 with size 6"):
        x[:, i].to_numpy(x=np.zeros((4, 6)), i=np.array([0, -7], np.int16))


def test_lazy_bool_index_keeps_its_error():
    x = pa.placeholder("x", (3,))
    with pytest.raises(pa.NonConcreteBooleanIndexError):
        x[x > 0]


# --- 7. a placeholder named self ----------------------------------------------

def test_placeholder_named_self(target):
    s = pa.placeholder("self", (3,), np.int32)
    sv = np.array([1, -2, 3], np.int32)
    prog = pa.compile(s * 2 + 1, target=target)
    assert_same(prog(self=sv), sv * 2 + 1)
    assert_same((s + 1).evaluate(target, self=sv), sv + 1)
    assert_same((s - 1).to_numpy(self=sv), sv - 1)


def test_binding_methods_take_self_positionally():
    for fn in (pa.Program.__call__, pa.Array.to_numpy, pa.Array.evaluate):
        first = next(iter(inspect.signature(fn).parameters.values()))
        assert first.name == "self" and first.kind is inspect.Parameter.POSITIONAL_ONLY


# --- 8. float16 on every target ------------------------------------------------

F16_PROGRAMS = {
    "sum": lambda xp, h, y: h.sum(),
    "mean": lambda xp, h, y: h.mean(axis=0),
    "mixed": lambda xp, h, y: h * y,
    "passthrough": lambda xp, h, y: h,
    "chain": lambda xp, h, y: (h * h - h) / np.float16(3) + 1,
    "intermediate": lambda xp, h, y: y.astype(np.float16).astype(np.float32),
    "reduce_dtype": lambda xp, h, y: y.sum(dtype=np.float16),
    "constant": lambda xp, h, y: xp.ones(3, np.float16) + h,
    "data": lambda xp, h, y: xp.asarray(np.full(3, 0.1, np.float16)) * h,
    "compare": lambda xp, h, y: h > 0,
    "functions": lambda xp, h, y: xp.exp(h) + xp.sqrt(xp.abs(h)),
    "matmul": lambda xp, h, y: xp.outer(h, h) @ h,
    "to_int": lambda xp, h, y: (h * 2).astype(np.int32),
}


@pytest.mark.parametrize("name", list(F16_PROGRAMS))
def test_float16_computes_as_numpy(name, target):
    """float16 stored as half, each operation computed in float32 and
    rounded to half, as NumPy's loops do; sums and products accumulate in
    float32 and round once."""
    fn = F16_PROGRAMS[name]
    hv = np.array([1.5, -2.0009766, 3.0e4], np.float16)
    yv = np.array([1 / 3, 2.0004883, 70000.0])
    h, y = pa.placeholder("h", (3,), np.float16), pa.placeholder("y", (3,), np.float64)
    with np.errstate(all="ignore"):
        want = np.asarray(fn(np, hv, yv))
        prog = pa.compile(fn(pa, h, y), target=target)
        got = prog(**{k: v for k, v in (("h", hv), ("y", yv)) if k in prog.placeholders})
    assert_same(got, want, name)


def test_float16_device_results_are_half_and_read_back(device_target):
    """A float16 result left on the device is a float16 device array over the
    halves' bits; passed to a program again it is read as it is."""
    x = pa.placeholder("x", (4,), np.float16)
    prog = pa.compile(x * 2 + 1, target=device_target, out="device")
    v = np.array([0.5, 1.25, -3, 1000], np.float16)
    first = prog(x=v)
    assert first.dtype == np.float16
    assert_same(first.get(), v * 2 + 1)
    assert_same(prog(x=first).get(), (v * 2 + 1) * 2 + 1)


def test_float16_conversions_are_numpys_bit_for_bit(target):
    """Every half to float32 and back, float32 and float64 values at and
    beside the midpoints between halves (no double rounding from float64),
    overflow to inf, underflow to zero and subnormals: NumPy's bits."""
    h = np.arange(65536, dtype=np.uint16).view(np.float16)
    finite = np.sort(h[np.isfinite(h)].astype(np.float64))
    mids = (finite[1:] + finite[:-1]) / 2
    f32 = np.concatenate([mids.astype(np.float32), np.nextafter(mids.astype(np.float32), 0),
                          np.array([65519.99, 65520, 7e4, 2 ** -25, 3 * 2 ** -26, 1e-9],
                                   np.float32)])
    f64 = np.concatenate([np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf), mids])
    x, a, b = (pa.placeholder(n, v.shape, v.dtype) for n, v in (("h", h), ("a", f32),
                                                              ("b", f64)))
    got = pa.compile([x.astype(np.float32), x * 1, a.astype(np.float16), b.astype(np.float16)],
                     target=target)(h=h, a=f32, b=f64)
    with np.errstate(all="ignore"):
        want = [h.astype(np.float32), h, f32.astype(np.float16), f64.astype(np.float16)]
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        nan = np.isnan(w)
        assert g.dtype == w.dtype and np.isnan(g[nan]).all()
        np.testing.assert_array_equal(g[~nan].view(f"u{w.itemsize}"),
                                      w[~nan].view(f"u{w.itemsize}"))


@pytest.mark.parametrize("axes", [np.array([[1], [0]]), np.array([1, 0]), np.int64(1), 1,
                                  ([1], [0])], ids=repr)
def test_tensordot_axes_as_numpy_accepts(target, axes):
    a, b = np.arange(6.).reshape(2, 3), np.arange(12.).reshape(3, 4)
    got = pa.compile(pa.tensordot(pa.array(a), pa.array(b), axes=axes), target=target)()
    assert_same(got, np.tensordot(a, b, axes=axes))
