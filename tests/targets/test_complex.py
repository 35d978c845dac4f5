"""complex64 and complex128 on every target against NumPy: every elementwise
operation on values that include zeros of both signs, infinities, NaN in
either part and magnitudes near overflow (C99's special values, as NumPy's
loops and glibc give them), reductions (NaN propagation, argmax's first
index), products (matmul's forms, vdot's conjugate, mixed real and complex
operands), casts both ways, indexing and writes, sorting.  Part by part, each
within its float dtype's tolerance (``pa.testing``), a NaN part where NumPy
has one."""
import warnings

import numpy as np
import pytest

import polyarray as pa
from helpers import COMPLEX, assert_same

SPECIALS = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-30, 1e30, 100.0, -100.0, 0.5, 3.0]
UNARY = ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "expm1", "log1p",
         "square", "reciprocal", "sign", "negative", "positive", "conjugate", "absolute",
         "isnan", "isinf", "isfinite", "log2", "log10", "exp2", "rint", "real", "imag",
         "logical_not", "angle", "iscomplex", "isreal", "arcsin", "arccos", "arctan",
         "arcsinh", "arccosh", "arctanh"]
BINARY = ["add", "subtract", "multiply", "divide", "power", "equal", "not_equal", "less",
          "less_equal", "greater", "greater_equal", "maximum", "minimum", "logical_and",
          "logical_or", "logical_xor", "fmax", "fmin"]
# float32's sin and cos of a huge argument (the angle of ``(1e30 + 1e30j) ** 1e30``) are
# the device library's; NumPy's glibc reduces the argument exactly
ILL_CONDITIONED = {"power"}


def _values(dtype, n_random=150, seed=0):
    rng = np.random.default_rng(seed)
    grid = np.array([complex(a, b) for a in SPECIALS for b in SPECIALS])
    rand = rng.normal(size=n_random) * 3 + 1j * rng.normal(size=n_random) * 3
    return np.concatenate([grid, rand]).astype(dtype)


def _same(got, want, what):
    """Equal part by part: NaN where NumPy has NaN, within the tolerance."""
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy {want.dtype}"
    if want.dtype.kind == "c":
        for part in ("real", "imag"):
            g, w = getattr(got, part), getattr(want, part)
            np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"{what}.{part} NaN")
    assert_same(got, want, what)


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
def test_unary_special_values(target, dtype):
    x = _values(dtype)
    X = pa.placeholder("x", x.shape, dtype)
    got = pa.compile([getattr(pa, n)(X) for n in UNARY], target=target)(x=x)
    with np.errstate(all="ignore"):
        for name, g in zip(UNARY, got):
            _same(g, np.asarray(getattr(np, name)(x)), f"{name}[{dtype}] on {target}")


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
def test_binary_special_values(target, dtype):
    x = _values(dtype)
    y = np.roll(x, 7)
    X, Y = pa.placeholder("x", x.shape, dtype), pa.placeholder("y", y.shape, dtype)
    got = pa.compile([getattr(pa, n)(X, Y) for n in BINARY], target=target)(x=x, y=y)
    huge_angle = (np.abs(x) > 1e29) & (np.abs(y) > 1e29)
    with np.errstate(all="ignore"):
        for name, g in zip(BINARY, got):
            want = getattr(np, name)(x, y)
            if name in ILL_CONDITIONED and dtype == np.complex64:
                g, want = g[~huge_angle], want[~huge_angle]
            _same(g, want, f"{name}[{dtype}] on {target}")


def test_power_operator_fast_paths(target):
    """``ndarray.__pow__`` computes ``z ** 0.5`` as ``sqrt`` and ``z ** -1`` as
    ``reciprocal`` on complex arrays (exact where ``power`` rounds, other
    special values), ``np.power`` does not."""
    z = np.array([-4 + 0j, complex(-np.inf, 0), complex(0, np.inf), 0j, 2 - 2j, -1j])
    Z = pa.placeholder("z", z.shape, z.dtype)
    got = pa.compile([Z ** 0.5, Z ** -1, Z ** 2, pa.power(Z, 0.5), pa.power(Z, -1)],
                     target=target)(z=z)
    with np.errstate(all="ignore"):
        want = [z ** 0.5, z ** -1, z ** 2, np.power(z, 0.5), np.power(z, -1)]
    for k, (g, w) in enumerate(zip(got, want)):
        _same(g, w, f"power {k} on {target}")
    assert got[0][0] == 2j


def test_division_without_overflow(target):
    """Smith's method, as NumPy's loop: the naive formula overflows (inf / inf
    is NaN) where the quotient is plain."""
    z = np.array([1e300 + 1e300j, 3e307 - 1e307j, 1e-300 + 1e-300j, 4 + 2j])
    w = np.array([1e300 + 1e300j, 1e307 + 2e307j, 1e-300 - 1e-300j, 0j])
    Z, W = pa.placeholder("z", (4,), np.complex128), pa.placeholder("w", (4,), np.complex128)
    got = pa.compile(Z / W, target=target)(z=z, w=w)
    with np.errstate(all="ignore"):
        _same(got, z / w, f"division on {target}")
    assert got[0] == 1 and np.isfinite(got[1]) and np.isfinite(got[2])


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
def test_python_and_real_operands(target, dtype):
    """NEP 50: a Python complex stays weak (float32 array * 1j is complex64),
    real arrays promote, results are NumPy's in value and dtype."""
    rng = np.random.default_rng(1)
    z = (rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))).astype(dtype)
    f32 = rng.normal(size=(4,)).astype(np.float32)
    f64 = rng.normal(size=(4,))
    i8 = rng.integers(-5, 5, size=(3, 1)).astype(np.int8)
    fns = [lambda xp, z, a, b, c: z * 2.5 - 1j, lambda xp, z, a, b, c: a * 1j,
           lambda xp, z, a, b, c: (1 + 2j) / (z + 3), lambda xp, z, a, b, c: z + b,
           lambda xp, z, a, b, c: z * c, lambda xp, z, a, b, c: a + 2j * c,
           lambda xp, z, a, b, c: z ** 2, lambda xp, z, a, b, c: z ** 0.5,
           lambda xp, z, a, b, c: z ** -3, lambda xp, z, a, b, c: 2.0 ** z,
           lambda xp, z, a, b, c: z ** a, lambda xp, z, a, b, c: xp.where(c > 0, z, 1j),
           lambda xp, z, a, b, c: xp.where(c > 0, a, z), lambda xp, z, a, b, c: z == a,
           lambda xp, z, a, b, c: xp.abs(z) + a, lambda xp, z, a, b, c: -z.conj(),
           lambda xp, z, a, b, c: z.real * z.imag, lambda xp, z, a, b, c: xp.round(z, 1),
           lambda xp, z, a, b, c: xp.clip(z, -1, 1 + 1j), lambda xp, z, a, b, c: xp.isclose(z, z + 1e-9)]
    names = {"z": z, "a": f32, "b": f64, "c": i8}
    ph = {k: pa.placeholder(k, v.shape, v.dtype) for k, v in names.items()}
    exprs = [f(pa, *ph.values()) for f in fns]
    got = pa.compile(exprs, target=target)(**names)
    for k, (f, g) in enumerate(zip(fns, got)):
        with np.errstate(all="ignore"):
            _same(g, np.asarray(f(np, *names.values())), f"expression {k} on {target}")


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
def test_casts(target, dtype):
    """To and from every dtype; complex to a real type drops the imaginary
    part with NumPy's ComplexWarning, to bool tests both parts."""
    x = np.array([0, -0.0, 1.5, -2.25, 3j, -1 + 1j, 1e-30j, 7 - 0j, 100 + 3j], dtype)
    X = pa.placeholder("x", x.shape, dtype)
    others = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.uint32, np.float32,
              np.float64, np.complex64, np.complex128]
    reals = [np.array([True, False, True]), np.array([-3, 0, 7], np.int8),
             np.array([250, 0, 3], np.uint8), np.array([-2**31, 5, 2**31 - 1], np.int32),
             np.array([-2**40, 0, 2**40], np.int64), np.array([0, 5, 2**32 - 1], np.uint32),
             np.array([np.inf, -0.0, 1.5], np.float32), np.array([np.nan, -np.inf, 1e300])]
    R = [pa.placeholder(f"r{k}", r.shape, r.dtype) for k, r in enumerate(reals)]
    with pytest.warns(np.exceptions.ComplexWarning) as record:
        down = [X.astype(t) for t in others]
    assert record[0].filename == __file__       # the user's line
    up = [r.astype(dtype) for r in R]
    got = pa.compile(down + up, target=target)(x=x, **{f"r{k}": r for k, r in enumerate(reals)})
    with warnings.catch_warnings(), np.errstate(over="ignore"):
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        want = [x[2:].astype(t) if np.dtype(t).kind in "iu" else x.astype(t) for t in others]
        want += [r.astype(dtype) for r in reals]
    for k, (g, w) in enumerate(zip(got, want)):
        if k < len(others) and np.dtype(others[k]).kind in "iu":
            g = g[2:]                   # -0.0 and 0 are 0 however cast; no overflow below
            if np.dtype(others[k]).kind == "u":     # negative reals to unsigned: the float
                keep = x[2:].real >= 0              # casts' (numpy_differences.md)
                g, w = g[keep], w[keep]
        _same(g, w, f"cast {k} on {target}")


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2)], ids=str)
def test_reductions(target, dtype, axis):
    rng = np.random.default_rng(2)
    x = (rng.normal(size=(5, 6, 7)) + 1j * rng.normal(size=(5, 6, 7))).astype(dtype)
    x[1, 2, 3] = complex(np.nan, 1)
    x[3, 1, 2] = complex(2, np.nan)
    x[0, 4, :] = 1 + 1j                 # ties: argmax's first index
    X = pa.placeholder("x", x.shape, dtype)
    names = ["sum", "prod", "mean", "var", "std", "max", "min", "any", "all"]
    exprs = [getattr(pa, n)(X, axis=axis) for n in names]
    if not isinstance(axis, tuple):
        names += ["argmax", "argmin"]
        exprs += [pa.argmax(X, axis=axis), pa.argmin(X, axis=axis)]
    clean = np.where(np.isnan(x), 0.5 - 2j, x)
    names += ["sum_clean", "prod_clean", "max_clean", "cumsum"]
    exprs += [pa.sum(X * 0 + clean, axis=axis), pa.prod(pa.asarray(clean) * 0.5, axis=axis),
              pa.max(pa.asarray(clean), axis=axis),
              pa.cumsum(X, axis=None if axis is None else (axis if isinstance(axis, int) else 0))]
    got = pa.compile(exprs, target=target)(x=x)
    with np.errstate(all="ignore"):
        want = [getattr(np, n)(x, axis=axis) for n in names[:len(exprs) - 4]]
        want += [np.sum(x * 0 + clean, axis=axis), np.prod(clean * 0.5, axis=axis),
                 np.max(clean, axis=axis),
                 np.cumsum(x, axis=None if axis is None else
                           (axis if isinstance(axis, int) else 0))]
    for n, g, w in zip(names, got, want):
        _same(np.asarray(g), np.asarray(w), f"{n}(axis={axis})[{dtype}] on {target}")


def test_argmax_nan_first_index(target):
    """The first NaN (in either part) wins, else the first of equal maxima."""
    x = np.array([[1 + 1j, 2 + 0j, 2 + 0j, complex(0, np.nan), complex(np.nan, 0)],
                  [3 + 1j, 3 + 2j, 3 + 2j, -1j, 3 + 2j]], np.complex64)
    X = pa.placeholder("x", x.shape, np.complex64)
    got = pa.compile([pa.argmax(X, axis=1), pa.argmin(X, axis=1), pa.argmax(X)],
                     target=target)(x=x)
    for g, w in zip(got, [np.argmax(x, axis=1), np.argmin(x, axis=1), np.argmax(x)]):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
@pytest.mark.parametrize("shapes", [((17, 33), (33, 9)), ((2, 5, 70), (70, 3)),
                                    ((130, 64), (64, 129)), ((40,), (40, 6))], ids=str)
def test_matmul(target, dtype, shapes):
    """Every matmul form a shape reaches, complex products accumulated by the
    complex add; mixed with a real operand too."""
    rng = np.random.default_rng(3)
    a = (rng.normal(size=shapes[0]) + 1j * rng.normal(size=shapes[0])).astype(dtype)
    b = (rng.normal(size=shapes[1]) + 1j * rng.normal(size=shapes[1])).astype(dtype)
    r = rng.normal(size=shapes[1]).astype(np.float32)
    A, B = pa.placeholder("a", a.shape, dtype), pa.placeholder("b", b.shape, dtype)
    Rr = pa.placeholder("r", r.shape, np.float32)
    got = pa.compile([A @ B, A @ Rr, pa.matmul(A.conj(), B)], target=target)(a=a, b=b, r=r)
    for g, w in zip(got, [a @ b, a @ r, a.conj() @ b]):
        _same(g, w, f"matmul {shapes}[{dtype}] on {target}")


def test_products(target):
    """vdot and vecdot conjugate their first argument; dot, inner, einsum,
    tensordot, outer do not."""
    rng = np.random.default_rng(4)
    a = rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))
    b = (rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))).astype(np.complex64)
    v = rng.normal(size=(4,))
    A, B = pa.placeholder("a", a.shape, a.dtype), pa.placeholder("b", b.shape, b.dtype)
    V = pa.placeholder("v", v.shape, v.dtype)
    fns = [lambda xp, a, b, v: xp.vdot(a, b), lambda xp, a, b, v: xp.vecdot(a, b),
           lambda xp, a, b, v: xp.dot(a, b.T), lambda xp, a, b, v: xp.inner(a, b),
           lambda xp, a, b, v: xp.einsum("ij,kj->ik", a, b),
           lambda xp, a, b, v: xp.einsum("ij,j->i", a, v),
           lambda xp, a, b, v: xp.tensordot(a, b, axes=2), lambda xp, a, b, v: xp.outer(v, a),
           lambda xp, a, b, v: xp.linalg.norm(a), lambda xp, a, b, v: xp.linalg.norm(b, axis=1),
           lambda xp, a, b, v: xp.trace(a[:, :3] @ b[:, :3].T)]
    got = pa.compile([f(pa, A, B, V) for f in fns], target=target)(a=a, b=b, v=v)
    for k, (f, g) in enumerate(zip(fns, got)):
        _same(np.asarray(g), np.asarray(f(np, a, b, v)), f"product {k} on {target}")


def test_indexing_and_writes(target):
    """Gathers, slices, writes (a real value into a complex array, ``.real`` and
    ``.imag`` written through), concatenation, one-element sums."""
    z = (np.arange(12) + 1j * np.arange(12)[::-1]).reshape(3, 4).astype(np.complex128)
    idx = np.array([2, 0, 1])

    def f(xp, z, idx):
        t = xp.array(z[...])
        t[:, 1] = 7.5
        t[idx[0]] = t[idx[0]] * 1j
        t.imag[0, :] = -1.0
        t.real[1, 2:] += 10
        u = xp.concatenate([t, z[::-1, ::2].T.reshape(2, 3)], axis=None)
        return t, u, z[idx][:, ::-1], z[z.real > 4.0] if xp is np else None
    Z, I = pa.placeholder("z", z.shape, z.dtype), pa.placeholder("i", idx.shape, idx.dtype)
    got = pa.compile(list(f(pa, Z, I)[:3]), target=target)(z=z, i=idx)
    for k, (g, w) in enumerate(zip(got, f(np, z, idx)[:3])):
        _same(g, w, f"write/gather {k} on {target}")


@pytest.mark.parametrize("dtype", COMPLEX, ids=lambda d: d.name)
def test_sort_order(target, dtype):
    """NumPy's complex order: real parts, then imaginary parts, NaN parts
    last (``R+Rj < R+nanj < nan+Rj < nan+nanj``); stable argsort, searchsorted."""
    vals = [0.0, 1.0, -1.0, np.nan, 2.0]
    z = np.array([complex(a, b) for a in vals for b in vals] * 2, dtype)
    np.random.default_rng(5).shuffle(z)
    Z = pa.placeholder("z", z.shape, dtype)
    got = pa.compile([pa.sort(Z), pa.argsort(Z), pa.searchsorted(pa.sort(Z), Z),
                      pa.sort(Z, descending=True)], target=target)(z=z)
    want = [np.sort(z), np.argsort(z, kind="stable"), np.searchsorted(np.sort(z), z)]
    _same(got[0], want[0], f"sort on {target}")
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[2], want[2])
    _same(got[3][::-1][np.argsort(np.argsort(got[3][::-1], kind="stable"))], want[0],
          f"descending sort on {target}")


def test_creation(target):
    outs = [pa.zeros((2, 3), pa.complex64), pa.ones(3, pa.cdouble), pa.full((2,), 1 - 2j),
            pa.full(3, complex(np.inf, np.nan), pa.complex64), pa.arange(0, 5 + 2j),
            pa.arange(0.5, 4, 0.75, dtype=pa.csingle), pa.eye(3, dtype=pa.complex128),
            pa.linspace(0, 1, 4, dtype=pa.complex64), pa.asarray(1j),
            pa.zeros_like(pa.asarray([1.0, 2.0]), dtype=pa.complex64),
            pa.linspace(0, 1 + 1j, 5), pa.linspace(1j, 2, 4, endpoint=False)]
    want = [np.zeros((2, 3), np.complex64), np.ones(3, np.cdouble), np.full((2,), 1 - 2j),
            np.full(3, complex(np.inf, np.nan), np.complex64), np.arange(0, 5 + 2j),
            np.arange(0.5, 4, 0.75, dtype=np.csingle), np.eye(3, dtype=np.complex128),
            np.linspace(0, 1, 4, dtype=np.complex64), np.asarray(1j),
            np.zeros(2, np.complex64), np.linspace(0, 1 + 1j, 5),
            np.linspace(1j, 2, 4, endpoint=False)]
    got = pa.compile(outs, target=target)()
    for k, (g, w) in enumerate(zip(got, want)):
        _same(g, w, f"creation {k} on {target}")


def test_inverse_functions_near_branch_points_and_cuts(target):
    """Kahan's formulas: within a few ulp of NumPy's (glibc's) near +-1 and
    +-i, on the cuts with either zero, and at tiny and huge magnitudes."""
    rng = np.random.default_rng(6)
    pts = []
    for c in (1, -1, 1j, -1j, 0):
        for s in (1e-1, 1e-4, 1e-9, 1e-15, 1e-30):
            pts += list(c + s * np.exp(1j * rng.uniform(0, 2 * np.pi, 4)))
    for x in (1.5, 10, 1e20, 1e300, -2, -1e300, 0.5, 1 - 1e-10, 1 + 1e-10):
        for y in (0.0, -0.0, 1e-300, 1e-8):
            pts += [complex(x, y), complex(y, x), complex(-x, -y)]
    for dtype in COMPLEX:
        with np.errstate(all="ignore"):
            z = np.array(pts).astype(dtype)
        Z = pa.placeholder("z", z.shape, dtype)
        names = ["arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh"]
        got = pa.compile([getattr(pa, n)(Z) for n in names], target=target)(z=z)
        eps = np.finfo(z.real.dtype).eps
        for name, g in zip(names, got):
            with np.errstate(all="ignore"):
                w = getattr(np, name)(z)
            err = np.maximum(np.abs(g.real - w.real), np.abs(g.imag - w.imag)) / np.abs(w)
            assert np.nanmax(err) < 16 * eps, f"{name}[{dtype}] on {target}: {np.nanmax(err)}"
            np.testing.assert_array_equal(np.isnan(g), np.isnan(w))


def test_running_products_never_multiply_by_the_identity(target):
    """``(1 + 0j) * (inf + 0j)`` is ``inf + nan j``: NumPy's ``cumprod`` never
    multiplies by the identity (its first element is the input's), while its
    ``prod`` starts from it (``np.prod([inf + 0j])`` is ``inf + nan j``)."""
    z = np.array([[complex(np.inf, 0), 2 + 0j, 3 + 0j], [complex(2, np.nan), 1 + 0j, 0.5 + 0j],
                  [1 + 1j, 2 - 1j, -1j]] + [[0.5 + 0.5j, 1 + 0j, -1 + 0j]] * 40)
    Z = pa.placeholder("z", z.shape, z.dtype)
    got = pa.compile([pa.prod(Z[:, :1], axis=1), pa.prod(Z[:3], axis=1), pa.cumprod(Z, axis=1),
                      pa.cumprod(Z[2:, 0]), pa.prod(Z[2:, 0])], target=target)(z=z)
    with np.errstate(all="ignore"):
        want = [np.prod(z[:, :1], axis=1), np.prod(z[:3], axis=1), np.cumprod(z, axis=1),
                np.cumprod(z[2:, 0]), np.prod(z[2:, 0])]
    # a running product of non-finite values puts NaN in the part its order gives
    # (numpy_differences.md): compare the first column, and the finite rows
    got[2], want[2] = got[2][:, 0], want[2][:, 0]
    for k, (g, w) in enumerate(zip(got, want)):
        _same(np.asarray(g), np.asarray(w), f"product {k} on {target}")
    assert got[2][0] == complex(np.inf, 0) and np.isnan(got[0][0].imag)
    _same(pa.compile(pa.cumprod(Z[2:], axis=1), target=target)(z=z), np.cumprod(z[2:], axis=1),
          f"finite running products on {target}")


def test_nan_reductions(target):
    """NaN in either part is a NaN: skipped by the nan* reductions; an all-NaN
    slice's ``nanmax`` is its first NaN (``np.fmax.reduce``)."""
    z = np.array([[1 + 2j, complex(np.nan, 1), 3 - 1j, complex(-np.inf, -5)],
                  [complex(2, np.nan), -1j, 4 + 0j, complex(-np.inf, 5)],
                  [complex(np.nan, 3), complex(1, np.nan), complex(np.nan, np.nan),
                   complex(np.nan, 0)]])
    Z = pa.placeholder("z", z.shape, z.dtype)
    names = ["nansum", "nanprod", "nanmax", "nanmin", "nanmean"]
    got = pa.compile([getattr(pa, n)(Z, axis=1) for n in names] +
                     [pa.nansum(Z), pa.nanmax(Z[:2])], target=target)(z=z)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = [getattr(np, n)(z, axis=1) for n in names] + [np.nansum(z), np.nanmax(z[:2])]
    for n, g, w in zip(names + ["nansum all", "nanmax all"], got, want):
        _same(np.asarray(g), np.asarray(w), f"{n} on {target}")
