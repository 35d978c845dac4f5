"""Elementwise nodes (ufuncs, ``where``, ``clip``, ``astype``).

Each call builds one IndexLambda whose operands are read with broadcast
indices and cast to the ufunc's loop dtype, which NumPy itself resolves.
Fusion of chains into one kernel happens later, in ``codegen``.
"""
from __future__ import annotations

import operator
import os
import sys
import warnings

import numpy as np

from ..ir import nodes as N
from ..ir.expr import binding_name, broadcast_indices, call, cast, read
from .creation import as_node, array
from .dtypes import check_dtype, resolve_ufunc, scalar_to_dtype, is_python_scalar
from .memo import memoized


def broadcast_shapes(*shapes, what="operands") -> tuple:
    """The shape that arrays of ``shapes`` broadcast to (``np.broadcast_shapes``);
    the ValueError names every shape."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for d in range(ndim):
        size = 1
        for s in shapes:
            k = d - (ndim - len(s))
            if k < 0:
                continue
            n = s[k]
            if n != 1:
                if size not in (1, n):
                    raise ValueError(
                        f"{what} could not be broadcast together with shapes "
                        + " and ".join(str(tuple(s)) for s in shapes))
                size = n
        out.append(size)
    return tuple(out)


def _operand(x):
    """An operand: a node, or a Python scalar (kept weak, NEP 50)."""
    if is_python_scalar(x):
        return x
    return as_node(x)


def build(op_label, fn, operands, loop_dtypes, out_dtype, shape=None):
    """IndexLambda computing ``fn(*operands)`` with operands cast to loop dtypes.

    ``operands`` are nodes or Python scalars; repeated nodes share a binding.
    """
    nodes = [o for o in operands if isinstance(o, N.Node)]
    if shape is None:
        shape = broadcast_shapes(*(n.shape for n in nodes), what=f"{op_label}: operands")
    names, bindings, args = {}, [], []
    for op, dt in zip(operands, loop_dtypes):
        if isinstance(op, N.Node):
            if id(op) not in names:
                names[id(op)] = binding_name(len(bindings))
                bindings.append((names[id(op)], op))
            e = read(names[id(op)], broadcast_indices(op.shape, shape))
            if op.dtype != dt:
                e = cast(dt, e)
        else:
            e = scalar_to_dtype(op, dt)
        args.append(e)
    return N.IndexLambda.make(shape, out_dtype, call(fn, *args), tuple(bindings), op_label)


@memoized
def apply_ufunc(name, *args) -> N.IndexLambda:
    """``np.<name>(*args)`` as a lazy IndexLambda."""
    ufunc = getattr(np, name)
    ops = [_operand(a) for a in args]
    if not any(isinstance(o, N.Node) for o in ops):
        ops[0] = array(ops[0])
    types = [o.dtype if isinstance(o, N.Node) else o for o in ops]
    try:
        ins, out = resolve_ufunc(ufunc, types)
    except OverflowError:
        if name not in _COMPARISONS:
            raise
        return _out_of_range_comparison(name, ops)
    if name == "power" and out.kind in "iu" and is_python_scalar(ops[1]) \
            and ops[1] < 0 and ops[0].size:    # NumPy checks the values: none, no error
        raise ValueError("Integers to negative integer powers are not allowed.")
    if name == "power" and out.kind == "f" and isinstance(ops[0], N.Node) \
            and _is_half(ops[1]):
        # NumPy computes ``x ** 0.5`` (an exponent of one value) as sqrt: NaN
        # at -inf and -0.0 at -0.0, where C's pow gives inf and 0 (fuzzer seed 106)
        shape = broadcast_shapes(*(o.shape for o in ops if isinstance(o, N.Node)),
                                 what="power: operands")
        return build("sqrt", "sqrt", ops[:1], ins[:1], out, shape)
    return build(name, ufunc.__name__, ops, ins, out)


def _is_half(exponent):
    """A known exponent of one value: 0.5."""
    if isinstance(exponent, N.DataWrapper):
        return exponent.size == 1 and exponent.data.flat[0] == 0.5
    return not isinstance(exponent, N.Node) and exponent == 0.5


_COMPARISONS = {"less": (True, False, False, True), "less_equal": (True, False, False, True),
                "greater": (False, True, True, False),
                "greater_equal": (False, True, True, False),
                "equal": (False,) * 4, "not_equal": (True,) * 4}


def _out_of_range_comparison(name, ops):
    """NumPy 2 compares an integer array with an out-of-range Python int
    exactly: the answer is the same for every element."""
    node_pos = 0 if isinstance(ops[0], N.Node) else 1
    node, value = ops[node_pos], ops[1 - node_pos]
    above = value > np.iinfo(node.dtype).max
    # table: (array first & scalar above, array first & below,
    #         scalar first & above, scalar first & below)
    answer = _COMPARISONS[name][(0 if above else 1) if node_pos == 0 else (2 if above else 3)]
    # keep the operand as a binding so its placeholder stays in the program
    return N.IndexLambda.make(node.shape, np.dtype(np.bool_), np.bool_(answer),
                              ((binding_name(0), node),), name)


UNARY = ("exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "square",
         "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh",
         "tanh", "arcsinh", "arccosh", "arctanh", "absolute", "sign", "floor",
         "ceil", "trunc", "rint", "isnan", "isinf", "isfinite", "logical_not",
         "negative", "positive", "invert")
BINARY = ("add", "subtract", "multiply", "divide", "floor_divide", "remainder",
          "power", "arctan2", "maximum", "minimum", "logical_and", "logical_or",
          "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "equal",
          "not_equal", "less", "less_equal", "greater", "greater_equal")


def astype(x, dtype) -> N.Node:
    """``x`` as ``dtype`` (NumPy's unsafe casting); complex to a real number
    keeps the real part, with NumPy's ComplexWarning at the user's line."""
    node = as_node(x)
    dtype = check_dtype(dtype, "astype")
    if node.dtype.kind == "c" and dtype.kind not in "cb":
        warn_discarded()
        node = complex_part("real", node)
    return _astype(node, dtype)


@memoized
def _astype(node, dtype) -> N.Node:
    if node.dtype == dtype:
        return node
    e = cast(dtype, read(binding_name(0), broadcast_indices(node.shape, node.shape)))
    return N.IndexLambda.make(node.shape, dtype, e, ((binding_name(0), node),),
                              f"astype({dtype.name})")


def real_dtype(dtype) -> np.dtype:
    """float32 for complex64, float64 for complex128 (NumPy's ``.real``)."""
    return np.empty(0, dtype).real.dtype


@memoized
def complex_part(name, node) -> N.IndexLambda:
    """The ``real`` or ``imag`` part of a complex node: a call of that name
    (the NumPy target calls ``np.real``; devices read the struct's field)."""
    e = call(name, read(binding_name(0), broadcast_indices(node.shape, node.shape)))
    return N.IndexLambda.make(node.shape, real_dtype(node.dtype), e,
                              ((binding_name(0), node),), name)


@memoized
def complex_join(re, im) -> N.IndexLambda:
    """The complex values of parts ``re`` and ``im`` (one real dtype, one
    shape), joined exactly: no arithmetic, so an infinite part stays."""
    idx = broadcast_indices(re.shape, re.shape)
    e = call("complex", read(binding_name(0), idx), read(binding_name(1), idx))
    dtype = np.result_type(re.dtype, np.complex64)
    return N.IndexLambda.make(re.shape, dtype, e, ((binding_name(0), re), (binding_name(1), im)),
                              "complex")


_POLYARRAY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def warn_discarded():
    """NumPy's ComplexWarning, pointing at the user's line (the first frame
    outside polyarray).  Given when the cast is built: it names the line
    that asked for it, where NumPy's names the line that computes it."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
            _POLYARRAY + os.sep):
        level, frame = level + 1, frame.f_back
    warnings.warn("Casting complex values to real discards the imaginary part",
                  np.exceptions.ComplexWarning, stacklevel=level)


@memoized
def where(condition, x, y) -> N.IndexLambda:
    """``np.where(condition, x, y)``: picks elementwise, dtype by NEP 50."""
    c, a, b = _operand(condition), _operand(x), _operand(y)
    if not isinstance(c, N.Node):
        c = array(c)
    if not any(isinstance(o, N.Node) for o in (a, b)):
        a = array(a)
    out = np.result_type(*(o.dtype if isinstance(o, N.Node) else o for o in (a, b)))
    out = check_dtype(out, "where")
    # a Python scalar becomes the result dtype as this NumPy's own where makes
    # it: NumPy 2.4 casts unsafely (where(c, -1, uint16_array) holds 65535),
    # older NumPy 2 raises OverflowError
    a, b = (o if isinstance(o, N.Node) else
            np.asarray(np.where(True, o, np.zeros((), out)), out)[()] for o in (a, b))
    return build("where", "where", [c, a, b], [np.dtype(bool), out, out], out)


def clip(a, a_min=None, a_max=None) -> N.Node:
    """``np.clip``: ``minimum(maximum(a, a_min), a_max)``; NaN propagates."""
    out = a if isinstance(a, N.Node) else array(a)
    if a_min is not None:
        out = apply_ufunc("maximum", out, a_min)
    if a_max is not None:
        out = apply_ufunc("minimum", out, a_max)
    return out


def round(x, decimals=0) -> N.Node:      # noqa: A001
    """``np.round``: half to even; ``decimals`` scales by powers of ten."""
    x = x if isinstance(x, N.Node) else array(x)
    decimals = operator.index(decimals)      # NumPy: a float is a TypeError
    if x.dtype.kind in "iu":
        if decimals < 0:
            raise NotImplementedError("round: negative decimals on integer "
                                      "arrays are not supported")
        return x
    if decimals == 0:
        return apply_ufunc("rint", x)
    factor = 10.0 ** decimals
    return apply_ufunc("divide", apply_ufunc("rint", apply_ufunc("multiply", x, factor)), factor)

