"""The errors of the NumPy names polyarray gained (NumPy's types
and words, raised when the node is built, naming what is wrong), eager
functions refusing placeholders, and every name (NumPy's, the array API's,
``pa.linalg``'s) present with NumPy's parameter order.  Nothing compiles."""
import math

import numpy as np
import pytest

import polyarray as pa


def test_eager_functions_refuse_placeholders_naming_them():
    x = pa.placeholder("x", (3,), np.float32)
    w = pa.placeholder("weights", (3,), np.float32)
    for fn in (pa.unique, pa.nonzero, pa.argwhere, pa.flatnonzero, pa.where,
               lambda a: a.nonzero(), pa.unique_counts, pa.bincount):
        with pytest.raises(pa.ConcretizationError, match=r"eager.*'weights', 'x'"):
            fn(x * w)
    assert issubclass(pa.ConcretizationError, TypeError)


def _raises(exc, match, fn):
    with pytest.raises(exc, match=match):
        fn()


def test_errors_are_numpys_and_clear():
    a = pa.placeholder("a", (3, 4), np.float32)
    i = pa.placeholder("i", (3, 4), np.int32)
    AxisError = np.exceptions.AxisError
    for exc, match, fn in [
        (ValueError, "wrong number of dimensions", lambda: pa.sum(a, out=a)),
        (TypeError, "out= must be a polyarray array",
         lambda: pa.exp(a, np.empty((3, 4), np.float32))),
        (ValueError, "wrong number of dimensions", lambda: a.max(out=a)),
        (ValueError, "non-broadcastable output operand", lambda: pa.hypot(a, a, out=a[0])),
        (NotImplementedError, "where= is not supported", lambda: pa.exp(a, where=a > 0)),
        (NotImplementedError, "where= is not supported", lambda: pa.cbrt(a, where=a > 0)),
        (ValueError, "'maximum' does not have an identity.*initial",
         lambda: pa.max(a, where=a > 0)),
        (ValueError, "zero-size array to reduction operation minimum", lambda: pa.min(a[:, :0], 1)),
        (ValueError, "where mask.*does not broadcast",
         lambda: pa.sum(a, where=np.ones((2, 3, 4), bool))),
        (ValueError, "either both or neither", lambda: pa.where(a > 0, a)),
        (ValueError, "`min` or `max` keyword", lambda: pa.clip(a, 0, 1, min=0)),
        (ValueError, "ddof and correction", lambda: pa.var(a, ddof=1, correction=1)),
        (AxisError, "axis 2 is out of bounds", lambda: pa.argmax(a, axis=2, keepdims=True)),
        (AxisError, "axis1: axis 2", lambda: pa.diagonal(a, 0, 2, 0)),
        (ValueError, "axis1 and axis2 cannot be the same", lambda: pa.trace(a, 0, 1, -1)),
        (ValueError, "at least two dimensions", lambda: pa.diagonal(a[0])),
        (ValueError, "1- or 2-d", lambda: pa.diag(a[None])),
        (ValueError, "at least 1-d", lambda: pa.tril(a[0, 0])),
        (ValueError, "incompatible dimensions for cross product", lambda: pa.cross(a, a)),
        (ValueError, "3-dimensional vectors", lambda: pa.linalg.cross(a[:, :2], a[:, :3])),
        (ValueError, "must be \\(arrays of\\) 3-dimensional vectors, but they are 2 and 2",
         lambda: pa.cross(a[:, :2], a[:, :2])),
        (ValueError, "one-dimensional", lambda: pa.linalg.outer(a, a)),
        (ValueError, "core dimension", lambda: pa.vecdot(a, a[:, :3])),
        (NotImplementedError, "mode='raw'", lambda: pa.linalg.qr(a, mode="raw")),
        (ValueError, "Invalid norm order 'fro' for vectors", lambda: pa.linalg.norm(a[0], "fro")),
        (ValueError, "Invalid norm order", lambda: pa.linalg.norm(a, "abc")),
        (ValueError, "Improper number of dimensions", lambda: pa.linalg.norm(a[None], 1)),
        (ValueError, "Duplicate axes", lambda: pa.linalg.norm(a, axis=(1, -1))),
        (ValueError, "order must be non-negative", lambda: pa.diff(a, -1)),
        (ValueError, "at least one dimensional", lambda: pa.diff(a[0, 0])),
        (ValueError, "index can't contain negative values", lambda: pa.pad(a, -1)),
        (TypeError, "must be of integral type", lambda: pa.pad(a, 1.5)),
        (ValueError, "could not be broadcast", lambda: pa.pad(a, ((1, 2),) * 3)),
        (ValueError, "mode 'bogus' is not supported", lambda: pa.pad(a, 1, "bogus")),
        (NotImplementedError, "mode 'median' is not supported", lambda: pa.pad(a, 1, "median")),
        (NotImplementedError, "reflect_type='odd'", lambda: pa.pad(a, 1, "reflect",
                                                                   reflect_type="odd")),
        (ValueError, "unsupported keyword arguments", lambda: pa.pad(a, 1, "edge",
                                                                      constant_values=1)),
        (ValueError, "can't extend empty axis 1", lambda: pa.pad(a[:, :0], 1, "wrap")),
        (ValueError, "could not be broadcast", lambda: pa.repeat(a, [1, 2])),
        (ValueError, "negative", lambda: pa.repeat(a, -1)),
        (pa.LazyValueError, "repeat is eager.*placeholder 'i'", lambda: pa.repeat(a, i)),
        (ValueError, "negative dimensions", lambda: pa.tile(a, (-1, 2))),
        (ValueError, "'shift' and 'axis' should be scalars or 1D", lambda: pa.roll(a, [[1]], 0)),
        (AxisError, "axis 2 is out of bounds", lambda: pa.roll(a, 1, axis=2)),
        (ValueError, "same number of dimensions", lambda: pa.take_along_axis(a, i[0], 1)),
        (ValueError, "single dimension", lambda: pa.take_along_axis(a, i, None)),
        (IndexError, "must be an integer array", lambda: pa.take_along_axis(a, a, 1)),
        (IndexError, "index 4 is out of bounds for axis 1 with size 4",
         lambda: pa.take_along_axis(a, np.array([[4]]), 1)),
        (ValueError, "Input array must be at least 1-d", lambda: pa.unstack(a[0, 0])),
        (ValueError, "Valid values for `indexing`", lambda: pa.meshgrid(a, indexing="xx")),
        (TypeError, "Axis must be specified", lambda: pa.average(a, weights=np.ones(4))),
        (ValueError, "consistent with shape of a", lambda: pa.average(a, 1, np.ones(3))),
        (ZeroDivisionError, "Weights sum to zero", lambda: pa.average(a, 1, np.zeros(4))),
        (TypeError, "dtype must be inexact", lambda: pa.nanmean(a, dtype=np.int32)),
        (TypeError, "boolean subtract", lambda: pa.ptp(a > 0)),
        (TypeError, "ufunc 'left_shift' not supported", lambda: pa.left_shift(a, 1)),
        (OverflowError, "200 out of bounds for int8",
         lambda: pa.left_shift(i.astype(np.int8), 200)),
        (ValueError, "no '...' ellipsis", lambda: pa.einsum("...i->i", a)),
        (ValueError, "index 'i' has size 3 in one operand and 4",
         lambda: pa.einsum("ij,ij", a, a.T)),
        (TypeError, "cannot cast an operand of dtype float32 to int32",
         lambda: pa.einsum("ij", a, dtype=np.int32)),
        (TypeError, "Cannot cast array data.*'same_kind'",
         lambda: pa.concatenate([a, a], dtype=np.int32)),
        (TypeError, "Cannot cast array data.*'safe'", lambda: a.astype(np.int32, casting="safe")),
        (TypeError, "'newshape' and 'shape'", lambda: pa.reshape(a, (4, 3), newshape=(3, 4))),
        (ValueError, "order must be one of", lambda: pa.ravel(a, "X")),
    ]:
        _raises(exc, match, fn)


NUMPY_NAMES = """allclose isclose atleast_1d atleast_2d atleast_3d cross diag diagonal diff hstack
    vstack dstack column_stack hypot kron meshgrid nan_to_num nanmax nanmin nansum nanmean
    nanprod pad repeat roll take_along_axis tile trace tril triu unique nonzero argwhere
    flatnonzero count_nonzero copysign signbit logaddexp fmax fmin deg2rad rad2deg degrees
    radians reciprocal cbrt exp2 heaviside float_power left_shift right_shift ptp average
    unique_values unique_counts unique_inverse unique_all argmax argmin clip where amax amin
    sum prod any all mean var std ravel reshape astype squeeze expand_dims einsum take
    split array_split hsplit vsplit dsplit append insert delete ediff1d fliplr flipud rot90
    indices tril_indices triu_indices fabs fmod modf frexp ldexp gcd lcm logaddexp2 sinc
    array_equal array_equiv select piecewise logspace geomspace vander polyval convolve
    correlate trapezoid interp gradient unwrap cov corrcoef median quantile percentile
    nanmedian nanquantile nanpercentile partition argpartition lexsort digitize histogram
    histogram2d bincount""".split()
ARRAY_API_NAMES = """acos acosh asin asinh atan atan2 atanh concat pow bitwise_invert
    bitwise_left_shift bitwise_right_shift permute_dims matrix_transpose unstack vecdot
    expand_dims isdtype result_type can_cast finfo iinfo astype bool e pi inf nan
    newaxis""".split()
LINALG_NAMES = """norm vector_norm matrix_norm vecdot matrix_transpose diagonal trace outer
    tensordot matmul cross""".split()


def test_every_name_exists():
    missing = [n for n in NUMPY_NAMES + ARRAY_API_NAMES if n not in dir(pa)]
    assert not missing, missing
    import polyarray.linalg
    assert pa.linalg is polyarray.linalg and pa.linalg.__name__ == "polyarray.linalg"
    assert not hasattr(pa.linalg, "np"), "pa.linalg is the public namespace"
    missing = [n for n in LINALG_NAMES if not callable(getattr(pa.linalg, n, None))]
    assert not missing, missing
    assert pa.bool is np.bool_ and pa.e == math.e and pa.newaxis is None
    assert (pa.acos, pa.pow, pa.concat) != (None, None, None)
    assert pa.isdtype(pa.float32, "real floating") and not pa.isdtype(pa.bool, "integral")
    x = pa.placeholder("x", (2,), np.float32)
    assert pa.result_type(x, 1.0) == np.float32 and pa.result_type(x, np.int64) == np.float64
    assert pa.can_cast(x, np.float64) and not pa.can_cast(x, np.int8)
    assert pa.finfo(x).eps == np.finfo(np.float32).eps and pa.iinfo(np.int8).max == 127


def test_signatures_follow_numpys_parameter_order():
    """Where NumPy's function of the same name has a Python signature, every
    parameter that polyarray's takes positionally sits where NumPy's does,
    under NumPy's name (so NumPy's arguments pass through unchanged).
    ``arange`` keeps the documented ``start`` (NumPy 2.4 says ``start_or_stop``)."""
    import inspect
    pos = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    bad = []
    for name in sorted(set(dir(pa)) - {"arange"}):
        if name.startswith("_") or not callable(getattr(pa, name)) \
                or isinstance(getattr(pa, name), type) or not callable(getattr(np, name, None)):
            continue
        try:
            want = [p.name for p in inspect.signature(getattr(np, name)).parameters.values()
                    if p.kind in pos]
        except (TypeError, ValueError):
            continue                    # a ufunc, or a C function
        have = inspect.signature(getattr(pa, name)).parameters.values()
        for k, p in enumerate(q for q in have if q.kind in pos):
            if p.kind != inspect.Parameter.POSITIONAL_ONLY and \
                    (k >= len(want) or want[k] != p.name):
                bad.append(f"{name}: parameter {k} is {p.name!r}, NumPy's is "
                           f"{want[k] if k < len(want) else None!r}")
    assert not bad, "\n".join(bad)


_A = np.arange(24.0).reshape(4, 6)
SAME_ERRORS = [
    lambda xp, a: xp.split(a, 5, axis=1), lambda xp, a: xp.array_split(a, 0),
    lambda xp, a: xp.dsplit(a, 2), lambda xp, a: xp.vsplit(a[0], 2),
    lambda xp, a: xp.hsplit(a[0, 0], 2),
    lambda xp, a: xp.delete(a, 7, axis=1), lambda xp, a: xp.delete(a, 1.0),
    lambda xp, a: xp.insert(a, 1, [7, 8], axis=0), lambda xp, a: xp.insert(a, [1, 9], 1, axis=1),
    lambda xp, a: xp.insert(a, 5, 1, axis=0), lambda xp, a: xp.insert(a, [[1]], 1),
    lambda xp, a: xp.insert(a.astype(np.uint8), 1, 300),
    lambda xp, a: xp.fliplr(a[0]), lambda xp, a: xp.flipud(a[0, 0]),
    lambda xp, a: xp.rot90(a, 1, (0, 0)), lambda xp, a: xp.rot90(a, 1, (0, 3)),
    lambda xp, a: xp.rot90(a, 1, (0,)),
    lambda xp, a: xp.ediff1d(a.astype(int), to_end=[1.5]),
    lambda xp, a: xp.gcd(a, a), lambda xp, a: xp.ldexp(a, 2.0),
    lambda xp, a: xp.select([a], [a]), lambda xp, a: xp.select([a > 0], [a, a]),
    lambda xp, a: xp.select([], []),
    lambda xp, a: xp.piecewise(a[0], [a[0] > 0, a[0] > 1], [1]),
    lambda xp, a: xp.geomspace(0, 1), lambda xp, a: xp.vander(a),
    lambda xp, a: xp.convolve(a[0, :0], a[0]), lambda xp, a: xp.convolve(a[0], a[0, :0]),
    lambda xp, a: xp.convolve(a[0], a[0], "bad"), lambda xp, a: xp.convolve(a, a[0]),
    lambda xp, a: xp.interp(a[0], [1, 2], [1, 2, 3]), lambda xp, a: xp.interp(a[0], [], []),
    lambda xp, a: xp.interp(a[0], [1, 2], [1, 2], period=0),
    lambda xp, a: xp.interp(a[0], a, a),
    lambda xp, a: xp.gradient(a[:, :2], edge_order=2, axis=1),
    lambda xp, a: xp.gradient(a, 1, 2, 3), lambda xp, a: xp.gradient(a, edge_order=3),
    lambda xp, a: xp.gradient(a, np.ones((2, 2)), 1), lambda xp, a: xp.gradient(a, [1, 2], 1),
    lambda xp, a: xp.cov(a, fweights=[1.5] * 6), lambda xp, a: xp.cov(a[None]),
    lambda xp, a: xp.cov(a, fweights=[-1] * 6), lambda xp, a: xp.cov(a, aweights=[1] * 5),
    lambda xp, a: xp.cov(a, ddof=1.5), lambda xp, a: xp.cov(a, a[None]),
    lambda xp, a: xp.quantile(a, 1.5), lambda xp, a: xp.percentile(a, -1),
    lambda xp, a: xp.quantile(a, 0.5, method="bad"),
    lambda xp, a: xp.quantile(a, np.ones((2, 2, 2)) * 0.5),
    lambda xp, a: xp.quantile(a[:, :0], 0.5), lambda xp, a: xp.quantile(a, 0.5, weights=a),
    lambda xp, a: xp.partition(a, 10), lambda xp, a: xp.partition(a, 1.5),
    lambda xp, a: xp.partition(a, 2, kind="bad"), lambda xp, a: xp.argpartition(a, -7),
    lambda xp, a: xp.lexsort([]), lambda xp, a: xp.lexsort([a, a[:3]]),
    lambda xp, a: xp.digitize(a[0], [1, 3, 2]), lambda xp, a: xp.histogram(a, 5, (2, 1)),
    lambda xp, a: xp.histogram(a, [1, 0, 2]), lambda xp, a: xp.histogram(a, 0),
    lambda xp, a: xp.histogram(a, 5, (0, np.inf)), lambda xp, a: xp.histogram(a, 5, weights=a[0]),
    lambda xp, a: xp.histogram2d(a[0], a[0, :3]),
    lambda xp, a: xp.histogram2d(a[0], a[0], 3, [(0, 1)]),
]


def test_bincount_is_eager():
    """``bincount``'s length is the largest value: its input is evaluated
    when it is called (data, or lazy arrays without placeholders)."""
    x = np.array([0, 3, 3, 7, 1])
    for got, want in ((pa.bincount(x), np.bincount(x)),
                      (pa.bincount(pa.asarray(x) * 2, minlength=20), np.bincount(x * 2, minlength=20)),
                      (pa.bincount(x, weights=pa.asarray(x) * 0.5), np.bincount(x, x * 0.5))):
        assert isinstance(got, pa.Array)
        np.testing.assert_array_equal(np.asarray(got), want)
        assert np.asarray(got).dtype == want.dtype


def test_repeat_evaluates_lazy_repeats():
    """``repeat``'s result shape is its repeats: a lazy array of them (no
    placeholders) is evaluated when it is called, an empty one included
    (the array API suite draws ``repeat(zeros((0, 3)), zeros(0, int32))``);
    the repeated array stays lazy, also inside ``pa.jit``; the method
    ``x.repeat`` is the same function."""
    x = np.arange(12.0).reshape(4, 3)
    r = np.array([1, 0, 3, 2])
    cases = [(pa.repeat(pa.asarray(x), pa.asarray(r) + 0, axis=0), np.repeat(x, r, axis=0)),
             (pa.repeat(pa.zeros((0, 3), pa.complex64), pa.zeros((0,), pa.int32), axis=0),
              np.repeat(np.zeros((0, 3), np.complex64), np.zeros(0, np.int32), axis=0)),
             (pa.jit(lambda a, k: pa.repeat(a * 2, k, axis=0))(x, r), np.repeat(x * 2, r, axis=0)),
             (pa.asarray(x).repeat(pa.asarray(r) * 1, axis=0), x.repeat(r, axis=0))]
    for got, want in cases:
        got = np.asarray(got)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("call", SAME_ERRORS)
def test_new_functions_raise_numpys_errors(call):
    """The errors of the functions added for everyday NumPy code: NumPy's
    type and words, raised when the node is built."""
    with pytest.raises(Exception) as want:
        call(np, _A)
    with pytest.raises(want.type) as got:
        call(pa, pa.placeholder("a", _A.shape, _A.dtype))
    assert str(got.value) == str(want.value)


def test_split_pieces_are_views():
    """As NumPy's, the pieces of ``split`` are views: writing one writes the
    array, and a write to the array is seen by the pieces."""
    base = np.arange(12.0).reshape(3, 4)
    x = pa.asarray(base.copy())
    left, right = pa.hsplit(x, 2)
    left[...] = -1.0
    want = base.copy()
    want[:, :2] = -1.0
    np.testing.assert_array_equal(np.asarray(x), want)
    x[:, 3] = 9.0
    want[:, 3] = 9.0
    np.testing.assert_array_equal(np.asarray(right), want[:, 2:])
