"""Bad input: clear errors of NumPy's types, raised when the node is built or
before anything runs, naming the operands; a failed call changes nothing."""
import numpy as np
import pytest

import polyarray as pa
from helpers import assert_same


def test_incompatible_shapes_name_both():
    a = pa.placeholder("a", (3, 4), np.float32)
    b = pa.placeholder("b", (2, 4), np.float32)
    with pytest.raises(ValueError, match=r"\(3, 4\).*\(2, 4\)"):
        a + b


def test_axis_out_of_range():
    a = pa.placeholder("a", (3, 4), np.float32)
    with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds"):
        a.sum(axis=2)
    with pytest.raises(np.exceptions.AxisError):
        pa.expand_dims(a, 5)
    with pytest.raises(ValueError, match="repeated axis"):
        pa.transpose(a, (0, 0))


def test_reshape_wrong_size():
    a = pa.placeholder("a", (3, 4), np.float32)
    with pytest.raises(ValueError, match=r"cannot reshape array of size 12 into shape \(5, 2\)"):
        a.reshape(5, 2)


def test_unsupported_dtypes():
    with pytest.raises(TypeError, match="unsupported dtype"):
        pa.placeholder("s", (3,), np.dtype("U3"))
    with pytest.raises(TypeError, match=r"unsupported dtype.*complex64/128"):
        pa.placeholder("c", (3,), np.clongdouble)
    with pytest.raises(TypeError, match="unsupported dtype"):
        pa.array(np.ones(3, "M8[s]"))
    a = pa.placeholder("a", (3,), np.float32)
    with pytest.raises(TypeError, match="unsupported dtype"):
        a.astype(np.clongdouble)


def test_no_ufunc_loop_is_numpys_type_error():
    a = pa.placeholder("a", (3,), np.float32)
    with pytest.raises(TypeError, match="invert"):
        ~a


def test_weak_int_overflow_like_numpy():
    a = pa.placeholder("a", (3,), np.uint8)
    with pytest.raises(OverflowError, match="300"):
        a + 300


def test_lazy_boolean_mask_points_to_where():
    a = pa.placeholder("a", (4,), np.float32)
    with pytest.raises(pa.NonConcreteBooleanIndexError, match="pa.where"):
        a[a > 0]
    assert issubclass(pa.NonConcreteBooleanIndexError, IndexError)


def test_lazy_truth_value_refused():
    a = pa.placeholder("a", (4,), np.float32)
    with pytest.raises(pa.LazyValueError, match=r"bool\(\) needs the value of a lazy array "
                       r"that depends on the unbound placeholder 'a' \(at .*test_errors.py:\d+: "
                       r"bool\(a.sum\(\) > 0\)"):
        bool(a.sum() > 0)
    with pytest.raises(ValueError, match="more than one element is ambiguous"):
        bool(a > 0)
    with pytest.raises(ValueError, match="could not convert string to float"):
        a[0] = "one"                # x[i] = v is a functional update


@pytest.fixture
def prog(target):
    x = pa.placeholder("x", (2, 3), np.float32)
    n = pa.placeholder("n", (), np.int64)
    return pa.compile({"y": x * 2.0 + n}, target=target)


def test_missing_binding_names_placeholder(prog):
    with pytest.raises(TypeError, match=r"missing binding for placeholder 'n' "
                                        r"\(expected shape \(\), dtype int64\)"):
        prog(x=np.ones((2, 3), np.float32))


def test_unknown_binding(prog):
    with pytest.raises(TypeError, match=r"unexpected binding 'z'.*placeholders are: n, x"):
        prog(x=np.ones((2, 3), np.float32), n=np.int64(1), z=np.ones(3))


def test_wrong_shape_states_expected_and_got(prog):
    with pytest.raises(ValueError, match=r"'x'.*expected \(2, 3\), got \(3, 2\)"):
        prog(x=np.ones((3, 2), np.float32), n=np.int64(1))


def test_wrong_dtype_states_expected_and_got(prog):
    with pytest.raises(TypeError, match=r"'x'.*expected float32, got float64"):
        prog(x=np.ones((2, 3)), n=np.int64(1))


def test_non_array_binding(prog):
    with pytest.raises(TypeError, match=r"'x' must be an array.*got str"):
        prog(x="abc", n=np.int64(1))
    with pytest.raises(TypeError, match=r"'n' must be an array.*got dict"):
        prog(x=np.ones((2, 3), np.float32), n={})
    # lists and Python scalars bind when their values fit the placeholder's dtype
    assert_same(prog(x=[[1.0] * 3] * 2, n=1)["y"], np.ones((2, 3), np.float32) * 2.0 + np.int64(1))
    with pytest.raises(ValueError, match="inhomogeneous"):
        prog(x=[[1.0] * 3, [1.0]], n=1)


def test_failed_call_changes_nothing(prog):
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    before = xv.copy()
    good = prog(x=xv, n=np.int64(1))
    with pytest.raises(TypeError):
        prog(x=xv, n=np.float32(1))          # wrong dtype on the second binding
    np.testing.assert_array_equal(xv, before)
    again = prog(x=xv, n=np.int64(1))
    np.testing.assert_array_equal(again["y"], good["y"])


def test_duplicate_placeholder_names():
    a = pa.placeholder("x", (3,), np.float32)
    b = pa.placeholder("x", (4,), np.float32)
    with pytest.raises(ValueError, match="two different placeholders are named 'x'"):
        pa.compile([a, b], target="numpy")


def test_bad_placeholder_names():
    with pytest.raises(ValueError, match="identifier"):
        pa.placeholder("not a name", (3,))
    with pytest.raises(ValueError, match="reserved"):
        pa.placeholder("out", (3,))


def test_unknown_target():
    a = pa.placeholder("a", (3,), np.float32)
    with pytest.raises(ValueError, match="unknown target 'tpu'; known targets: cuda, numpy, opencl"):
        a.evaluate("tpu", a=np.ones(3, np.float32))


def test_bad_outputs():
    with pytest.raises(TypeError, match="not a polyarray array"):
        pa.compile([np.ones(3)], target="numpy")
