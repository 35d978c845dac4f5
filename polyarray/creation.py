"""Array creation: data leaves, placeholders and lazy constants.

Constants (``zeros``, ``full``, ``arange``, ``eye``...) are IndexLambdas with
no bindings, so a target computes them in registers inside whatever kernel
uses them instead of copying a buffer to the device.
"""
from __future__ import annotations

import hashlib
import math
import numbers

import numpy as np
import pymbolic.primitives as p

from . import nodes as N
from ._dtypes import check_dtype, INDEX_DTYPE
from ._expr import call, cast, index_var
from .array import Array

RESERVED_NAMES = frozenset({"out"})


def _normalize_shape(shape, what="shape") -> tuple:
    if isinstance(shape, (numbers.Integral, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(shape)
    except TypeError:
        raise TypeError(f"{what} must be an int or a sequence of ints, "
                        f"got {shape!r}") from None
    for n in shape:
        if not isinstance(n, (numbers.Integral, np.integer)) or isinstance(n, bool):
            raise TypeError(f"{what} must contain ints, got {shape!r}")
        if n < 0:
            raise ValueError(f"negative dimensions are not allowed: {shape!r}")
    return tuple(int(n) for n in shape)


def _wrap_data(data: np.ndarray) -> N.DataWrapper:
    check_dtype(data.dtype, "pa.array")
    data = np.array(data, copy=True, order="C")
    data.flags.writeable = False
    h = hashlib.sha256(data.dtype.str.encode() + repr(data.shape).encode())
    h.update(data.tobytes())
    return N.DataWrapper.make(data.shape, data.dtype, data, h.hexdigest())


def array(obj, dtype=None) -> Array:
    """A leaf holding a copy of ``obj``'s data (like ``np.array``)."""
    if isinstance(obj, Array):
        return obj if dtype is None else obj.astype(dtype)
    if dtype is not None:
        dtype = check_dtype(dtype, "pa.array")
    data = np.asarray(obj, dtype=dtype)
    return Array(_wrap_data(data))


def asarray(obj, dtype=None) -> Array:
    """Like ``array``, but returns polyarray arrays unchanged."""
    return array(obj, dtype)


def placeholder(name: str, shape, dtype=np.float64) -> Array:
    """A named input whose value is bound when the program is called."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"placeholder name must be a Python identifier, got {name!r}")
    if name in RESERVED_NAMES:
        raise ValueError(f"placeholder name {name!r} is reserved for an option")
    shape = _normalize_shape(shape)
    return Array(N.Placeholder.make(shape, check_dtype(dtype, f"placeholder {name!r}"), name))


def as_node(x) -> N.Node:
    """Any array-like (Array, ndarray, NumPy/Python scalar, list) as a node."""
    if isinstance(x, Array):
        return x.node
    if isinstance(x, N.Node):
        return x
    if isinstance(x, (np.ndarray, np.generic, list, tuple, bool, int, float)):
        return array(x).node
    raise TypeError(f"cannot use an object of type {type(x).__name__} as a "
                    "polyarray array")


def constant(shape, dtype, expr, op) -> Array:
    """An IndexLambda with no inputs."""
    return Array(N.IndexLambda.make(tuple(shape), dtype, expr, (), op))


def full(shape, fill_value, dtype=None) -> Array:
    shape = _normalize_shape(shape)
    if isinstance(fill_value, Array):
        raise TypeError("full: fill_value must be a scalar, not a lazy array")
    if dtype is None:
        dtype = np.asarray(fill_value).dtype
    dtype = check_dtype(dtype, "full")
    with np.errstate(all="ignore"):
        value = np.asarray(fill_value).astype(dtype)[()]
    return constant(shape, dtype, value, f"full({value!r})")


def zeros(shape, dtype=np.float64) -> Array:
    return full(shape, 0, dtype)


def ones(shape, dtype=np.float64) -> Array:
    return full(shape, 1, dtype)


def empty(shape, dtype=np.float64) -> Array:
    """Lazy arrays are never uninitialized: ``empty`` is ``zeros``."""
    return zeros(shape, dtype)


def _like(a, dtype, shape):
    a = asarray(a) if not isinstance(a, Array) else a
    return (a.shape if shape is None else shape), (a.dtype if dtype is None else dtype)


def zeros_like(a, dtype=None, shape=None) -> Array:
    return zeros(*_like(a, dtype, shape))


def ones_like(a, dtype=None, shape=None) -> Array:
    return ones(*_like(a, dtype, shape))


def full_like(a, fill_value, dtype=None, shape=None) -> Array:
    shape, dtype = _like(a, dtype, shape)
    return full(shape, fill_value, dtype)


def empty_like(a, dtype=None, shape=None) -> Array:
    return zeros_like(a, dtype, shape)


def arange(start, stop=None, step=1, dtype=None) -> Array:
    """``np.arange``: element i is ``start + i * step``."""
    if stop is None:
        start, stop = 0, start
    for v in (start, stop, step):
        if isinstance(v, Array):
            raise TypeError("arange: bounds must be scalars, not lazy arrays")
    if step == 0:
        raise ZeroDivisionError("arange: step must not be zero")
    n = max(0, math.ceil((stop - start) / step))
    if dtype is None:
        dtype = np.arange(start, start + step, step).dtype if n else \
            np.result_type(np.asarray(start), np.asarray(stop), np.asarray(step))
    dtype = check_dtype(dtype, "arange")
    comp = np.dtype(np.float64) if dtype.kind == "f" else \
        (np.dtype(np.int64) if dtype.kind in "biu" else dtype)
    i = cast(comp, index_var(0))
    expr = call("add", comp.type(start), call("multiply", i, comp.type(step)))
    if comp != dtype:
        expr = cast(dtype, expr)
    return constant((n,), dtype, expr, f"arange({start}, {stop}, {step})")


def linspace(start, stop, num=50, endpoint=True, dtype=None) -> Array:
    num = int(num)
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative")
    div = (num - 1) if endpoint else num
    f64 = np.dtype(np.float64)
    step = (stop - start) / div if div > 0 else 0.0
    dtype = check_dtype(dtype if dtype is not None else
                        np.result_type(np.asarray(start), np.asarray(stop), 1.0), "linspace")
    i = cast(f64, index_var(0))
    expr = call("add", f64.type(start), call("multiply", i, f64.type(step)))
    if endpoint and num > 1:
        is_last = p.Comparison(index_var(0), "==", num - 1)
        expr = call("where", is_last, f64.type(stop), expr)
    if dtype != f64:
        if dtype.kind in "iu":
            expr = call("floor", expr)
        expr = cast(dtype, expr)
    return constant((num,), dtype, expr, f"linspace({start}, {stop}, {num})")


def eye(N_, M=None, k=0, dtype=np.float64) -> Array:
    M = N_ if M is None else M
    dtype = check_dtype(dtype, "eye")
    on_diag = p.Comparison(index_var(1) - index_var(0), "==", int(k))
    expr = call("where", on_diag, dtype.type(1), dtype.type(0))
    return constant(_normalize_shape((N_, M)), dtype, expr, f"eye(k={k})")


def index_constant(values) -> N.Node:
    """A DataWrapper of int64 indices (used by gathers)."""
    return _wrap_data(np.asarray(values, dtype=INDEX_DTYPE))
