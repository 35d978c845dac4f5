"""The Python array API standard (2023.12): the namespace against
``array-api-strict``'s list of names, and its functions against
``array-api-strict`` (NumPy underneath) on arrays Hypothesis draws from the
standard's own strategies (``hypothesis.extra.array_api``).

This stands in for data-apis' array-api-tests, which cannot be installed
here (it is not on the package index and GitHub is unreachable); the run
recipe for it is in tests/README.md."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.array_api import make_strategies_namespace

import array_api_strict as xs
import polyarray as pa
from helpers import assert_same

xs.set_array_api_strict_flags(api_version="2023.12")
xps = make_strategies_namespace(xs, api_version="2023.12")

# what polyarray leaves out of the standard, and why
NOT_PROVIDED = {
    "nextafter": "2024.12, which array-api-strict also lists at 2023.12",
    "ArrayAPIStrictFlags": "array-api-strict's own", "ModuleType": "array-api-strict's own",
    "get_array_api_strict_flags": "array-api-strict's own",
    "set_array_api_strict_flags": "array-api-strict's own",
    "reset_array_api_strict_flags": "array-api-strict's own",
}
ARRAY_NOT_PROVIDED = {"__buffer__": "a lazy array has no memory to expose"}


def test_the_namespace_has_every_name_of_the_standard():
    missing = [n for n in dir(xs) if not n.startswith("_") and n not in NOT_PROVIDED
               and not hasattr(pa, n)]
    assert missing == []
    arr = type(xs.asarray([1.0]))
    missing = [n for n in dir(arr) if (n.startswith("__") or not n.startswith("_"))
               and n not in ARRAY_NOT_PROVIDED and not hasattr(pa.Array, n)]
    assert missing == []
    x = pa.placeholder("x", (2, 3), np.float32)
    assert x.__array_namespace__() is pa and pa.__array_api_version__ == "2023.12"
    assert pa.isdtype(pa.float32, "real floating") and pa.bool is np.bool_


def _np(a):
    return np.from_dlpack(a)


def _ours(fn, arrays, target, **kw):
    names = [f"a{k}" for k in range(len(arrays))]
    phs = [pa.placeholder(n, a.shape, a.dtype) for n, a in zip(names, arrays)]
    prog = pa.compile(fn(*phs, **kw), target=target)
    return prog(**{n: a for n, a in zip(names, arrays) if n in prog.placeholders})


UNARY = """abs acos acosh asin asinh atan atanh bitwise_invert ceil cos cosh exp expm1
    floor isfinite isinf isnan log log1p log2 log10 logical_not negative positive round
    sign signbit sin sinh sqrt square tan tanh trunc""".split()
BINARY = """add atan2 bitwise_and bitwise_left_shift bitwise_or bitwise_right_shift
    bitwise_xor copysign divide equal floor_divide greater greater_equal hypot less
    less_equal logaddexp logical_and logical_or logical_xor maximum minimum multiply
    not_equal pow remainder subtract""".split()


def _real():
    """The standard's real numeric dtypes (complex ones: test_complex.py)."""
    return xps.real_dtypes()


def _dtypes_for(name):
    """The dtypes the standard defines ``name`` for."""
    if name.startswith("bitwise"):
        return xps.integer_dtypes() | xps.unsigned_integer_dtypes() | \
            (st.just(xs.bool) if "shift" not in name else st.nothing())
    if name.startswith("logical"):
        return st.just(xs.bool)
    if name in ("abs", "negative", "positive", "sign", "square", "add", "subtract",
                "multiply", "floor_divide", "remainder", "maximum", "minimum", "pow",
                "ceil", "floor", "trunc", "round", "equal", "not_equal", "greater",
                "greater_equal", "less", "less_equal"):
        return _real() if name != "pow" else xps.floating_dtypes()
    return xps.floating_dtypes()


def _check(name, arrays, target):
    ours = _ours(getattr(pa, name), [_np(a) for a in arrays], target)
    ref = _np(getattr(xs, name)(*arrays))
    if ref.dtype.kind in "iub" or not ref.size:
        np.testing.assert_array_equal(ours, ref, err_msg=name)
        assert ours.dtype == ref.dtype, name
    else:
        assert_same(ours, ref, context=name)


@st.composite
def _operands(draw, name, n):
    dtype = draw(_dtypes_for(name))
    shape = draw(xps.array_shapes(min_dims=0, max_dims=3, max_side=5))
    elements = {"allow_nan": True} if dtype in (xs.float32, xs.float64) else None
    if name in ("bitwise_left_shift", "bitwise_right_shift"):
        first = draw(xps.arrays(dtype, shape))
        bits = np.iinfo(_np(first).dtype).bits
        return [first, draw(xps.arrays(dtype, shape, elements={"min_value": 0,
                                                                "max_value": bits - 1}))]
    if name in ("floor_divide", "remainder") and dtype not in (xs.float32, xs.float64):
        # integer division by zero is undefined behaviour in the standard
        return [draw(xps.arrays(dtype, shape)),
                draw(xps.arrays(dtype, shape, elements={"min_value": 1}))]
    return [draw(xps.arrays(dtype, shape, elements=elements)) for _ in range(n)]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", UNARY + BINARY)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_elementwise_functions_agree_with_the_standard(name, data):
    arrays = data.draw(_operands(name, 1 if name in UNARY else 2), label="operands")
    _check(name, arrays, "numpy")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("target", ["opencl", "cuda"])
@pytest.mark.parametrize("name", ["exp", "sign", "round", "add", "floor_divide",
                                  "bitwise_left_shift", "atan2", "maximum"])
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_elementwise_functions_on_a_device_target(target, name, data):
    ok, why = pa.targets.availability(target)
    if not ok:
        pytest.skip(f"{target}: {why}")
    arrays = data.draw(_operands(name, 1 if name in UNARY else 2), label="operands")
    _check(name, arrays, target)


STATISTICS = ["sum", "prod", "max", "min", "mean", "var", "std"]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", STATISTICS)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_statistical_functions_agree_with_the_standard(name, data):
    float_only = name in ("mean", "var", "std")
    dtype = data.draw(xps.floating_dtypes() if float_only else _real())
    shape = data.draw(xps.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    x = data.draw(xps.arrays(dtype, shape))
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    keepdims = data.draw(st.booleans())
    ref = _np(getattr(xs, name)(x, axis=axis, keepdims=keepdims))
    ours = _ours(lambda a: getattr(pa, name)(a, axis=axis, keepdims=keepdims), [_np(x)],
                 "numpy")
    assert ours.dtype == ref.dtype and ours.shape == ref.shape
    assert_same(ours, ref, context=name)


@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_manipulation_and_searching_agree_with_the_standard(data):
    dtype = data.draw(_real() | st.just(xs.bool))
    shape = data.draw(xps.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = data.draw(xps.arrays(dtype, shape))
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    perm = tuple(data.draw(st.permutations(range(nd))))
    shift = data.draw(st.integers(-5, 5))
    cases = {
        "flip": (lambda m: m.flip(x_, axis=axis)),
        "permute_dims": (lambda m: m.permute_dims(x_, perm)),
        "expand_dims": (lambda m: m.expand_dims(x_, axis=axis)),
        "roll": (lambda m: m.roll(x_, shift, axis=axis)),
        "concat": (lambda m: m.concat([x_, x_], axis=axis)),
        "stack": (lambda m: m.stack([x_, x_], axis=axis)),
        "reshape": (lambda m: m.reshape(x_, (-1,))),
        "tile": (lambda m: m.tile(x_, (2,) * nd)),
        "repeat": (lambda m: m.repeat(x_, 2, axis=axis)),
        "moveaxis": (lambda m: m.moveaxis(x_, 0, -1)),
    }
    if dtype != xs.bool:
        cases["argmax"] = lambda m: m.argmax(x_, axis=axis)
        cases["sort"] = lambda m: m.sort(x_, axis=axis)
        cases["argsort"] = lambda m: m.argsort(x_, axis=axis, descending=True)
        cases["cumulative_sum"] = lambda m: m.cumulative_sum(x_, axis=axis,
                                                              include_initial=True)
    for label, fn in cases.items():
        x_ = x
        ref = _np(fn(xs))
        x_ = pa.placeholder("x", shape, _np(x).dtype)
        prog = pa.compile(fn(pa), target="numpy")
        ours = prog(x=_np(x)) if prog.placeholders else prog()   # argsort of 1: zeros
        assert ours.shape == ref.shape and ours.dtype == ref.dtype, label
        assert_same(ours, ref, context=label)


def test_inspection_and_info():
    info = pa.__array_namespace_info__()
    assert set(info.dtypes()) == {"bool", "int8", "int16", "int32", "int64", "uint8",
                                  "uint16", "uint32", "uint64", "float32", "float64",
                                  "complex64", "complex128"}
    assert set(info.dtypes(kind="complex floating")) == {"complex64", "complex128"}
    assert info.default_dtypes()["complex floating"] == np.complex128
    assert info.capabilities()["boolean indexing"] is False
    assert pa.finfo(pa.float32).eps == np.finfo(np.float32).eps
    assert pa.iinfo(pa.int8).min == -128
    assert pa.result_type(pa.placeholder("x", (), np.int8), pa.float32) == np.float32
    assert pa.can_cast(pa.int8, pa.int16) and not pa.can_cast(pa.float64, pa.int8)
    assert math.isclose(float(pa.sum(pa.asarray(np.arange(4.0)))), 6.0)
