"""Hypothesis properties: broadcasting and NEP 50 dtype promotion agree with
NumPy 2, for shapes, dtypes and values."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import polyarray as pa
from helpers import ALL_DTYPES, assert_same, random_array

dtypes = st.sampled_from(ALL_DTYPES)
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "less",
          "equal", "logical_and", "bitwise_or", "floor_divide", "arctan2"]


@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4))
def test_broadcast_shapes_match_numpy(shapes):
    a = pa.placeholder("a", shapes.input_shapes[0], np.float32)
    b = pa.placeholder("b", shapes.input_shapes[1], np.float32)
    assert (a + b).shape == shapes.result_shape


@given(s1=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
       s2=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
def test_broadcast_errors_iff_numpy_errors(s1, s2):
    try:
        expected = np.broadcast_shapes(s1, s2)
    except ValueError:
        with pytest.raises(ValueError, match="could not be broadcast"):
            pa.placeholder("a", s1) + pa.placeholder("b", s2)
        return
    assert (pa.placeholder("a", s1) + pa.placeholder("b", s2)).shape == expected


@given(d1=dtypes, d2=dtypes, op=st.sampled_from(BINARY), seed=st.integers(0, 2**16))
def test_array_array_promotion_and_values(d1, d2, op, seed):
    rng = np.random.default_rng(seed)
    x = random_array(rng, (5,), d1)
    y = random_array(rng, (5,), d2, nonzero=True)
    try:
        with np.errstate(all="ignore"):
            expected = getattr(np, op)(x, y)
    except TypeError:
        with pytest.raises(TypeError):
            getattr(pa, op)(pa.placeholder("x", (5,), d1), pa.placeholder("y", (5,), d2))
        return
    expr = getattr(pa, op)(pa.placeholder("x", (5,), d1), pa.placeholder("y", (5,), d2))
    assert expr.dtype == expected.dtype
    assert_same(expr.to_numpy(x=x, y=y), expected, f"{op}({d1}, {d2})")


scalars = st.one_of(st.booleans(), st.integers(-300, 300),
                    st.floats(-1e3, 1e3, allow_nan=False).filter(lambda v: abs(v) > 1e-3),
                    st.complex_numbers(max_magnitude=1e3, allow_nan=False,
                                       allow_infinity=False).filter(lambda v: abs(v) > 1e-3))


@given(d=dtypes, s=scalars, op=st.sampled_from(BINARY), reflected=st.booleans(),
       seed=st.integers(0, 2**16))
def test_python_scalars_are_weak(d, s, op, reflected, seed):
    x = random_array(np.random.default_rng(seed), (4,), d, nonzero=True)
    args_np = (s, x) if reflected else (x, s)
    ph = pa.placeholder("x", (4,), d)
    args_pa = (s, ph) if reflected else (ph, s)
    try:
        with np.errstate(all="ignore"):
            expected = getattr(np, op)(*args_np)
    except (TypeError, OverflowError) as e:
        with pytest.raises(type(e)):
            getattr(pa, op)(*args_pa)
        return
    expr = getattr(pa, op)(*args_pa)
    assert expr.dtype == expected.dtype, f"{op}({args_np}) dtype"
    assert_same(expr.to_numpy(x=x), expected, f"{op} with scalar {s!r}")


@given(d=dtypes)
def test_zero_d_arrays_are_strong(d):
    x = pa.placeholder("x", (3,), np.float32)
    s = pa.placeholder("s", (), d)
    assert (x + s).dtype == np.result_type(np.float32, d)
