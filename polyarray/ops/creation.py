"""Creation nodes: data leaves, placeholders and lazy constants.

Constants (``zeros``, ``full``, ``arange``, ``eye``...) are IndexLambdas with
no bindings, so a target computes them in registers inside whatever kernel
uses them instead of copying a buffer to the device.
"""
from __future__ import annotations

import hashlib
import itertools
from builtins import min as builtins_min
import math
import numbers
import operator
import weakref

import numpy as np
import pymbolic.primitives as p

from ..ir import nodes as N
from ..ir.expr import call, cast, index_var
from .dtypes import check_dtype, INDEX_DTYPE
from .inputs import native_array, plain_ndarray
from .memo import memoized

RESERVED_NAMES = frozenset({"out"})
# name -> live shared variable: polyarray.shared registers each one here, below
# it, so that placeholder() can refuse its name (an entry goes with its variable)
SHARED = weakref.WeakValueDictionary()


def shared_of(node):
    """The live shared variable whose node ``node`` is, or None."""
    if not isinstance(node, N.Placeholder) or not node.shared:
        return None
    var = SHARED.get(node.name)
    return var if var is not None and var._node is node else None


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
    data = native_array(data)           # the same values, native byte order
    check_dtype(data.dtype, "pa.array")
    data = np.array(data, copy=True, order="C")
    data.flags.writeable = False
    h = hashlib.sha256(data.dtype.str.encode() + repr(data.shape).encode())
    h.update(data.tobytes())
    return N.DataWrapper.make(data.shape, data.dtype, data, h.hexdigest())


_DEVICE_LEAVES = itertools.count()


def device_leaf(obj) -> N.DataWrapper:
    """A leaf that reads another library's CUDA array in place (a
    ``targets.foreign.CudaView``): the CUDA target binds its memory, the
    other targets copy it to the host.  It is a view: later in-place
    changes to ``obj`` are seen.  Its digest names this leaf, not values
    (reading them would cost the copy this avoids)."""
    from polyarray.targets.foreign import cuda_view
    view = cuda_view(obj)
    check_dtype(view.dtype, "pa.asarray")
    return N.DataWrapper.make(view.shape, view.dtype, view,
                              f"device:{view.library}:{next(_DEVICE_LEAVES)}:{view.ptr:x}")


def array(obj, dtype=None) -> N.DataWrapper:
    """A leaf holding a copy of ``obj``'s data (host data, not a node)."""
    if dtype is not None:
        dtype = check_dtype(dtype, "pa.array")
    obj = plain_ndarray(obj, "pa.array input")
    if any(c.__module__.startswith("pyopencl") for c in type(obj).__mro__):
        obj = obj.get()     # a device array (the OpenCL target's results too): its values
    data = np.asarray(obj, dtype=dtype)
    if data.dtype == object:
        raise TypeError("pa.array: the data has object dtype (elements that are not "
                        "numbers or booleans); polyarray holds numbers and booleans")
    return _wrap_data(data)


def placeholder(name: str, shape, dtype=np.float64, shared=False) -> N.Placeholder:
    """A named input whose value is bound when the program is called
    (``shared``: a shared variable's, whose name no other placeholder takes)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"placeholder name must be a Python identifier, got {name!r}")
    if name in RESERVED_NAMES:
        raise ValueError(f"placeholder name {name!r} is reserved for an option")
    if name in SHARED and not shared:
        raise ValueError(f"placeholder name {name!r} is taken by a shared variable "
                         "(pa.shared); choose another name")
    shape = _normalize_shape(shape)
    return N.Placeholder.make(shape, check_dtype(dtype, f"placeholder {name!r}"), name,
                              bool(shared))


def as_node(x) -> N.Node:
    """A node, or any array-like (ndarray, NumPy/Python scalar, list) as one."""
    if isinstance(x, N.Node):
        return x
    if isinstance(x, (np.ndarray, np.generic, list, tuple, bool, int, float, complex)):
        return array(x)
    raise TypeError(f"cannot use an object of type {type(x).__name__} as a "
                    "polyarray array")


def constant(shape, dtype, expr, op) -> N.IndexLambda:
    """An IndexLambda with no inputs."""
    return N.IndexLambda.make(tuple(shape), dtype, expr, (), op)


@memoized
def full(shape, fill_value, dtype=None) -> N.Node:
    shape = _normalize_shape(shape)
    if isinstance(fill_value, N.Node):
        raise TypeError("full: fill_value must be a scalar, not a lazy array")

    if dtype is None:
        dtype = np.asarray(fill_value).dtype
    dtype = check_dtype(dtype, "full")
    with np.errstate(all="ignore"):
        value = np.asarray(fill_value).astype(dtype)[()]
    return constant(shape, dtype, value, f"full({value!s})")


def zeros(shape, dtype=np.float64) -> N.Node:
    # dtype=None is NumPy's float64, not the fill value's int
    return full(shape, 0, np.float64 if dtype is None else dtype)


def ones(shape, dtype=np.float64) -> N.Node:
    return full(shape, 1, np.float64 if dtype is None else dtype)


def empty(shape, dtype=np.float64) -> N.Node:
    """Lazy arrays are never uninitialized: ``empty`` is ``zeros``."""
    return zeros(shape, dtype)


def _like(a, dtype, shape):
    a = array(a) if not isinstance(a, N.Node) else a
    return (a.shape if shape is None else shape), (a.dtype if dtype is None else dtype)


def zeros_like(a, dtype=None, shape=None) -> N.Node:
    return zeros(*_like(a, dtype, shape))


def ones_like(a, dtype=None, shape=None) -> N.Node:
    return ones(*_like(a, dtype, shape))


def full_like(a, fill_value, dtype=None, shape=None) -> N.Node:
    shape, dtype = _like(a, dtype, shape)
    return full(shape, fill_value, dtype)


def empty_like(a, dtype=None, shape=None) -> N.Node:
    return zeros_like(a, dtype, shape)


def _arange_dtype(start, stop, step) -> np.dtype:
    """NumPy's default: the promotion of intp with each given bound's dtype
    (``arange(5.0)`` is float64, ``arange(np.uint64(5))`` float64)."""
    dtype = np.dtype(np.intp)
    for v in (start, stop, step):
        if v is not None:
            dtype = np.promote_types(dtype, np.asarray(v).dtype)
    return dtype


def _arange_length(start, stop, step, cmplx=False):
    """NumPy's ``ceil((stop - start) / step)`` and ``start + step``, computed
    on the same Python or NumPy scalar objects, with NumPy's errors (an
    OverflowError on the way is its "Maximum allowed size exceeded").  For a
    complex dtype and a complex quotient, the smaller of its parts' lengths."""
    if cmplx:
        with np.errstate(all="ignore"):
            val = (stop - start) / step
        if isinstance(val, (complex, np.complexfloating)):
            n = builtins_min(_arange_length(0.0, v, 1.0)[0] for v in (val.real, val.imag))
            return n, (start + step if n > 0 else None)
    try:
        with np.errstate(all="ignore"):
            diff = stop - start
            val = diff / step
            value = float(val)
            if val == 0 and diff != 0:          # underflow, or a step of +-inf
                n = 0 if math.copysign(1.0, value) < 0 else 1
            elif math.isnan(value):
                raise ValueError("arange: cannot compute length")
            elif math.isinf(value) or not -2.0**63 <= math.ceil(value) <= 2.0**63:
                raise OverflowError
            else:
                # NumPy compares in double, where intp's max rounds up to 2**63,
                # and its C cast of 2**63 to intp gives intp's min: no elements
                n = math.ceil(value)
                n = 0 if n > N.MAX_INTP else max(0, n)
            nxt = start + step if n > 0 else None
    except OverflowError:
        raise ValueError("Maximum allowed size exceeded") from None
    return n, nxt


def _setitem_value(v, dtype):
    """What NumPy's arange hands its dtype's setitem: a NumPy float scalar
    becomes an integer through Python (so -1.5 to uint8 is an OverflowError,
    not 255)."""
    if dtype.kind in "iub" and isinstance(v, (np.floating, np.ndarray)) \
            and np.asarray(v).dtype.kind == "f":
        return float(v)
    return v


def arange(start, stop=None, step=None, dtype=None) -> N.Node:
    """``np.arange``, element for element: NumPy stores ``start`` and
    ``start + step`` converted to ``dtype``, then fills element i >= 2 with
    ``first + i * (second - first)`` computed in ``dtype`` (float32 for
    float16); the lazy constant uses the same formula."""
    for v in (start, stop, step):
        if isinstance(v, N.Node):
            raise TypeError("arange: bounds must be scalars, not lazy arrays")
        if isinstance(v, (tuple, list)):
            raise TypeError("arange: scalar arguments expected instead of a tuple.")
    if dtype is None:
        dtype = _arange_dtype(start, stop, step)
    dtype = check_dtype(dtype, "arange")
    if step is None:
        step = 1
    if stop is None:
        start, stop = 0, start
    n, nxt = _arange_length(start, stop, step, dtype.kind == "c")
    label = f"arange({start}, {stop}, {step})"
    if n == 0:
        return constant((0,), dtype, dtype.type(0), label)
    if dtype == np.bool_ and n > 2:
        raise TypeError("arange() is only supported for booleans when the result has "
                        "at most length 2.")
    first = np.empty(2, dtype)                # NumPy's own conversions (setitem)
    first[0] = _setitem_value(start, dtype)
    if n > 1:
        first[1] = _setitem_value(nxt, dtype)
    i = index_var(0)
    if dtype.kind == "c" and n > 1:       # NumPy fills each part as a float
        part = first.real.dtype
        exprs = [_arange_fill(i, part, *first.real), _arange_fill(i, part, *first.imag)]
        return constant((n,), dtype, call("complex", *exprs), label)
    if n == 1 or dtype == np.bool_:
        if n == 1:
            return constant((1,), dtype, first[0], label)
        expr = call("where", p.Comparison(i, "==", 0), first[0], first[1])
        return constant((n,), dtype, expr, label)
    if dtype.kind == "f":
        expr = _arange_fill(i, dtype, first[0], first[1])
    else:       # integers: wraps modulo 2**bits exactly as NumPy's fill does
        i64 = np.dtype(np.int64)
        with np.errstate(all="ignore"):
            delta = (first[1:] - first[:1]).astype(i64)[0]
            a = first[:1].astype(i64)[0]
        expr = call("add", a, call("multiply", cast(i64, i), delta))
        if dtype != i64:
            expr = cast(dtype, expr)
    return constant((n,), dtype, expr, label)


def _arange_fill(i, dtype, first, second):
    """Element ``i`` of a float arange whose elements 0 and 1 are stored as
    ``first`` and ``second`` (converted, not recomputed): ``first + i *
    (second - first)`` in ``dtype`` (float32 for float16), NumPy's fill."""
    comp = np.dtype(np.float32) if dtype == np.float16 else dtype
    a, b = np.array([first, second], dtype).astype(comp)
    with np.errstate(all="ignore"):
        delta = b - a
    expr = call("add", a, call("multiply", cast(comp, i), delta))
    if comp != dtype:
        expr = cast(dtype, expr)
    return call("where", p.Comparison(i, "==", 0), dtype.type(first),
                call("where", p.Comparison(i, "==", 1), dtype.type(second), expr))


def linspace(start, stop, num=50, endpoint=True, dtype=None) -> N.Node:
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative")
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else 0.0
    dtype = check_dtype(dtype if dtype is not None else
                        np.result_type(np.asarray(start), np.asarray(stop), 1.0), "linspace")
    # NumPy computes in float64, or complex128 for complex bounds or dtype
    cmplx = dtype.kind == "c" or any(np.iscomplexobj(v) for v in (start, stop))
    f64 = np.dtype(np.complex128 if cmplx else np.float64)
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


def _diagonals(what, shape, k, relation, dtype) -> N.Node:
    """Ones where ``column - row`` stands in ``relation`` to ``k``, else zeros
    (dtype None: NumPy's float64)."""
    dtype = check_dtype(np.float64 if dtype is None else dtype, what)
    where = p.Comparison(index_var(1) - index_var(0), relation, operator.index(k))
    expr = call("where", where, dtype.type(1), dtype.type(0))
    return constant(_normalize_shape(shape), dtype, expr, f"{what}(k={k})")


def eye(N_, M=None, k=0, dtype=np.float64) -> N.Node:
    return _diagonals("eye", (N_, N_ if M is None else M), k, "==", dtype)


def identity(n, dtype=np.float64) -> N.Node:
    return _diagonals("identity", (n, n), 0, "==", dtype)


def tri(N_, M=None, k=0, dtype=np.float64) -> N.Node:
    """Ones at and below diagonal ``k``; a negative size is empty, as NumPy's."""
    M = N_ if M is None else M
    return _diagonals("tri", (max(operator.index(N_), 0), max(operator.index(M), 0)), k,
                      "<=", dtype)


def index_constant(values) -> N.Node:
    """A DataWrapper of int64 indices (used by gathers)."""
    return _wrap_data(np.asarray(values, dtype=INDEX_DTYPE))
