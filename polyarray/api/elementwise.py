"""``pa.*`` elementwise maths (:mod:`polyarray.ops.elementwise`,
:mod:`polyarray.ops.ufuncs`): NumPy's ufuncs (each a ``pa.ufunc`` with
``.outer``, ``.reduce``, ``.accumulate``, ``.at``), the composed ones
(``hypot``, ``logaddexp``, ``signbit``...), ``where``, ``clip``, ``round``,
``astype``, ``isclose``/``allclose``, ``array_equal``/``array_equiv``,
``nan_to_num``, ``sinc``, ``select``, ``piecewise`` and the complex parts of
real arrays (:mod:`polyarray.ops.number_theory`: ``gcd``, ``lcm``)."""
from __future__ import annotations

import numpy as np

from ..array import Array, _same_or_new, node_of, ufunc_into
from ..ufunc import ufunc
from ..ops import (complex as X, creation as C, eager as G, elementwise as E,
                   number_theory as NT, reductions as R, scatter as SC, ufuncs as F)
from ..ops.axes import no_out
from ..ops.reductions import NoValue
from ..ops.elementwise import BINARY, UNARY
from .creation import _made
from .indexing import _evaluate


# -- elementwise -------------------------------------------------------------

# the first line of each ufunc's docstring (the array API's other names for
# the same function object are listed with it)
_SUMMARY = {
    "exp": "e to the power ``x``, elementwise (``np.exp``).",
    "expm1": "``exp(x) - 1``, accurate for small ``x``, elementwise (``np.expm1``).",
    "log": "Natural logarithm, elementwise (``np.log``).",
    "log1p": "``log(1 + x)``, accurate for small ``x``, elementwise (``np.log1p``).",
    "log2": "Base-2 logarithm, elementwise (``np.log2``).",
    "log10": "Base-10 logarithm, elementwise (``np.log10``).",
    "sqrt": "Non-negative square root, elementwise (``np.sqrt``).",
    "square": "``x * x``, elementwise (``np.square``).",
    "sin": "Sine of ``x`` in radians, elementwise (``np.sin``).",
    "cos": "Cosine of ``x`` in radians, elementwise (``np.cos``).",
    "tan": "Tangent of ``x`` in radians, elementwise (``np.tan``).",
    "arcsin": "Inverse sine, elementwise (``np.arcsin``; ``pa.asin`` is the same function).",
    "arccos": "Inverse cosine, elementwise (``np.arccos``; ``pa.acos`` is the same function).",
    "arctan": "Inverse tangent, elementwise (``np.arctan``; ``pa.atan`` is the same function).",
    "sinh": "Hyperbolic sine, elementwise (``np.sinh``).",
    "cosh": "Hyperbolic cosine, elementwise (``np.cosh``).",
    "tanh": "Hyperbolic tangent, elementwise (``np.tanh``).",
    "arcsinh": "Inverse hyperbolic sine, elementwise (``np.arcsinh``; ``pa.asinh`` is the "
               "same function).",
    "arccosh": "Inverse hyperbolic cosine, elementwise (``np.arccosh``; ``pa.acosh`` is the "
               "same function).",
    "arctanh": "Inverse hyperbolic tangent, elementwise (``np.arctanh``; ``pa.atanh`` is the "
               "same function).",
    "absolute": "Absolute value, elementwise (``np.absolute``; ``pa.abs`` is the same "
                "function).",
    "sign": "-1, 0 or 1 by the sign of ``x`` (NaN for NaN), elementwise (``np.sign``).",
    "floor": "Largest integer not above ``x``, elementwise (``np.floor``).",
    "ceil": "Smallest integer not below ``x``, elementwise (``np.ceil``).",
    "trunc": "``x`` rounded toward zero, elementwise (``np.trunc``).",
    "rint": "``x`` rounded to the nearest integer, halves to even, elementwise "
            "(``np.rint``).",
    "isnan": "True where ``x`` is NaN, elementwise (``np.isnan``).",
    "isinf": "True where ``x`` is +inf or -inf, elementwise (``np.isinf``).",
    "isfinite": "True where ``x`` is neither infinite nor NaN, elementwise "
                "(``np.isfinite``).",
    "logical_not": "NOT of the truth value of ``x``, elementwise, as bool "
                   "(``np.logical_not``).",
    "negative": "``-x``, elementwise (``np.negative``).",
    "positive": "``+x`` (the values unchanged), elementwise (``np.positive``).",
    "invert": "Bitwise NOT (logical NOT for bool), elementwise (``np.invert``; "
              "``pa.bitwise_invert`` is the same function).",
    "add": "``x1 + x2``, elementwise (``np.add``).",
    "subtract": "``x1 - x2``, elementwise (``np.subtract``).",
    "multiply": "``x1 * x2``, elementwise (``np.multiply``).",
    "divide": "True division ``x1 / x2``, elementwise (``np.divide``; "
              "``pa.true_divide`` is the same function).",
    "floor_divide": "Floor division ``x1 // x2``, elementwise (``np.floor_divide``); "
                    "integer division by 0 gives 0, as NumPy's.",
    "remainder": "``x1 % x2`` with the sign of ``x2``, elementwise (``np.remainder``).",
    "power": "``x1 ** x2``, elementwise (``np.power``; ``pa.pow`` is the same function).",
    "arctan2": "Angle of the point ``(x2, x1)`` in radians, by quadrant, elementwise "
               "(``np.arctan2``; ``pa.atan2`` is the same function).",
    "maximum": "The larger of ``x1`` and ``x2``, NaN propagated, elementwise "
               "(``np.maximum``).",
    "minimum": "The smaller of ``x1`` and ``x2``, NaN propagated, elementwise "
               "(``np.minimum``).",
    "logical_and": "AND of the truth values, elementwise, as bool (``np.logical_and``).",
    "logical_or": "OR of the truth values, elementwise, as bool (``np.logical_or``).",
    "logical_xor": "XOR of the truth values, elementwise, as bool (``np.logical_xor``).",
    "bitwise_and": "Bitwise AND (logical for bool), elementwise (``np.bitwise_and``).",
    "bitwise_or": "Bitwise OR (logical for bool), elementwise (``np.bitwise_or``).",
    "bitwise_xor": "Bitwise XOR (logical for bool), elementwise (``np.bitwise_xor``).",
    "equal": "``x1 == x2``, elementwise, as bool (``np.equal``).",
    "not_equal": "``x1 != x2``, elementwise, as bool (``np.not_equal``).",
    "less": "``x1 < x2``, elementwise, as bool (``np.less``).",
    "less_equal": "``x1 <= x2``, elementwise, as bool (``np.less_equal``).",
    "greater": "``x1 > x2``, elementwise, as bool (``np.greater``).",
    "greater_equal": "``x1 >= x2``, elementwise, as bool (``np.greater_equal``).",
}


def _unary(name):
    def f(x, /, out=None, *, where=True, dtype=None):
        if out is not None:
            return ufunc_into(out, name, where, lambda w: F.ufunc_node(
                name, (node_of(x),), None, w, dtype), (x,))
        return Array(F.ufunc_node(name, (node_of(x),), out, where, dtype))
    f.__name__ = f.__qualname__ = name
    summary = _SUMMARY.get(name, f"Elementwise ``np.{name}``.")     # the test flags it
    f.__doc__ = f"{summary}\n\n{F.UFUNC_NOTE}"
    return f


def _binary(name):
    def f(x1, x2, /, out=None, *, where=True, dtype=None):
        if out is not None:
            return ufunc_into(out, name, where, lambda w: F.ufunc_node(
                name, (node_of(x1), node_of(x2)), None, w, dtype), (x1, x2))
        return Array(F.ufunc_node(name, (node_of(x1), node_of(x2)), out, where, dtype))
    f.__name__ = f.__qualname__ = name
    summary = _SUMMARY.get(name, f"Elementwise ``np.{name}``.")     # the test flags it
    f.__doc__ = f"{summary}\n\n{F.BINARY_NOTE}\n{F.UFUNC_NOTE}"
    return f


globals().update({n: ufunc(_unary(n), getattr(np, n)) for n in UNARY})
globals().update({n: ufunc(_binary(n), getattr(np, n)) for n in BINARY})
abs = absolute          # noqa: A001,F821  (NumPy's names)
true_divide = divide    # noqa: F821


def astype(x, dtype, /, *, copy=True, device=None) -> Array:
    """``x`` converted to ``dtype`` (``np.astype``, the array API's), lazily.

    Conversions are NumPy's (``casting="unsafe"``: float to int truncates).
    ``copy`` is accepted: a lazy array is never written in place, so a copy
    and a view mean the same."""
    return Array(E.astype(node_of(x), dtype))


def where(condition, x=NoValue, y=NoValue) -> Array:
    """``x`` where ``condition`` is true, else ``y``, elementwise (``np.where``).

    The three broadcast; the dtype is NumPy's promotion of ``x`` and ``y``
    (NEP 50: Python scalars are weak).  One-argument ``where(condition)`` is
    ``pa.nonzero(condition)``, which is eager: it evaluates ``condition``
    now (on the default target) and returns data arrays; it raises
    ``pa.LazyValueError`` if ``condition`` depends on placeholders."""
    if x is NoValue and y is NoValue:
        values = G.concrete(node_of(condition), "where(condition)", _evaluate)
        return tuple(Array(n) for n in G.nonzero(values))
    if x is NoValue or y is NoValue:
        raise ValueError("either both or neither of x and y should be given")
    return _made(Array(E.where(node_of(condition), node_of(x), node_of(y))))


def clip(a, a_min=NoValue, a_max=NoValue, out=None, *, min=NoValue,   # noqa: A002
         max=NoValue, **kwargs) -> Array:                              # noqa: A002
    """``a`` limited to ``[a_min, a_max]``, elementwise (``np.clip``).

    Computed as ``minimum(maximum(a, a_min), a_max)``, so NaN propagates;
    either bound may be None, and a lazy array.  ``min``/``max`` are NumPy
    2.1's (and the array API's) spellings; ``out=`` must be None."""
    no_out(out, "clip")
    if kwargs:
        raise TypeError(f"clip: unsupported keyword arguments {sorted(kwargs)}")
    if (a_min is not NoValue or a_max is not NoValue) and \
            (min is not NoValue or max is not NoValue):
        raise ValueError("Passing `min` or `max` keyword argument when `a_min` and "
                         "`a_max` are provided is forbidden.")
    lo = a_min if a_min is not NoValue else (None if min is NoValue else min)
    hi = a_max if a_max is not NoValue else (None if max is NoValue else max)
    return _same_or_new(a, E.clip(node_of(a), node_of(lo), node_of(hi)))


def round(a, decimals=0, out=None) -> Array:      # noqa: A001
    """``a`` rounded to ``decimals`` decimals, halves to even (``np.round``,
    also ``pa.around``).

    Floats are scaled by ``10 ** decimals``, rounded and scaled back, as
    NumPy does; integers are returned unchanged, and negative ``decimals``
    on integers raise NotImplementedError (NumPy rounds to tens, ...)."""
    no_out(out, "round")
    return _same_or_new(a, E.round(node_of(a), decimals))


around = round


# the first line of each composed ufunc's docstring
_COMPOSED_SUMMARY = {
    "signbit": "True where the sign bit of ``x`` is set (negative numbers, -0.0), "
               "elementwise (``np.signbit``).",
    "deg2rad": "Degrees to radians, elementwise (``np.deg2rad``).",
    "rad2deg": "Radians to degrees, elementwise (``np.rad2deg``).",
    "radians": "Degrees to radians, elementwise (``np.radians``, as ``np.deg2rad``).",
    "degrees": "Radians to degrees, elementwise (``np.degrees``, as ``np.rad2deg``).",
    "reciprocal": "``1 / x``, elementwise (``np.reciprocal``).",
    "cbrt": "Cube root, elementwise (``np.cbrt``).",
    "exp2": "``2 ** x``, elementwise (``np.exp2``).",
    "hypot": "``sqrt(x1**2 + x2**2)`` without intermediate overflow, elementwise "
             "(``np.hypot``).",
    "copysign": "``|x1|`` with the sign of ``x2``, elementwise (``np.copysign``).",
    "logaddexp": "``log(exp(x1) + exp(x2))`` without overflow, elementwise "
                 "(``np.logaddexp``).",
    "fmax": "The larger of ``x1`` and ``x2``, ignoring NaN, elementwise (``np.fmax``).",
    "fmin": "The smaller of ``x1`` and ``x2``, ignoring NaN, elementwise (``np.fmin``).",
    "heaviside": "Heaviside step: 0 where ``x1 < 0``, ``x2`` where ``x1 == 0``, 1 above, "
                 "elementwise (``np.heaviside``).",
    "float_power": "``x1 ** x2`` computed in float64 or wider, elementwise "
                   "(``np.float_power``).",
    "left_shift": "``x1 << x2`` (bits shifted left), elementwise (``np.left_shift``; "
                  "``pa.bitwise_left_shift`` is the same function).",
    "right_shift": "``x1 >> x2`` (arithmetic for signed types), elementwise "
                   "(``np.right_shift``; ``pa.bitwise_right_shift`` is the same function).",
    "fabs": "Absolute value as a float, elementwise (``np.fabs``).",
    "fmod": "C's remainder of ``x1 / x2``, with the sign of ``x1``, elementwise "
            "(``np.fmod``).",
    "logaddexp2": "``log2(2**x1 + 2**x2)`` without overflow, elementwise "
                  "(``np.logaddexp2``).",
    "ldexp": "``x1 * 2**x2`` for integer ``x2``, elementwise (``np.ldexp``).",
    "gcd": "Greatest common divisor of ``|x1|`` and ``|x2|``, elementwise (``np.gcd``).",
    "lcm": "Least common multiple of ``|x1|`` and ``|x2|``, elementwise (``np.lcm``).",
}

# where a composition differs from NumPy's loop
_DIFFERENCE = {
    "signbit": "C's ``signbit``: the sign bit of -0.0 and of a negative NaN too, as NumPy.",
    "copysign": "C's ``copysign``: the sign bit of ``x2``, of a NaN too, as NumPy.",
    "cbrt": "C's ``cbrt`` on the device; within a last-bit rounding of NumPy's.",
    "reciprocal": "Integers as NumPy's loop: 0 unless ``x`` is 1 or -1, and ``1 / 0`` what\n"
                  "NumPy gives on x86-64 (the type's minimum for 32- and 64-bit signed\n"
                  "integers, else 0).",
    "ldexp": "Exact as C's ``ldexp``: ``x1`` normalized by multiplications by powers of\n"
             "two, then one multiplication that alone rounds (no ``log2`` or ``pow``).",
    "gcd": "Euclid's loop as a small C function on the devices (NumPy's on the numpy\n"
           "target); magnitudes in the unsigned type of the width, as NumPy's.",
    "lcm": "Euclid's loop as a small C function on the devices (NumPy's on the numpy\n"
           "target); ``|x1| / gcd * |x2|`` wrapping, as NumPy's.",
}


def _ufunc(name, fn, nin):
    """A composed ufunc with NumPy's call signature (``out`` must be None)."""
    if nin == 1:
        def f(x, /, out=None, *, where=True, dtype=None):
            if out is not None:
                return ufunc_into(out, name, where, lambda w: F.ufunc_node(
                    name, (node_of(x),), None, w, dtype, fn), (x,))
            return Array(F.ufunc_node(name, (node_of(x),), out, where, dtype, fn))
    else:
        def f(x1, x2, /, out=None, *, where=True, dtype=None):
            if out is not None:
                return ufunc_into(out, name, where, lambda w: F.ufunc_node(
                    name, (node_of(x1), node_of(x2)), None, w, dtype, fn), (x1, x2))
            return Array(F.ufunc_node(name, (node_of(x1), node_of(x2)), out, where, dtype,
                                      fn))
    f.__name__ = f.__qualname__ = name
    summary = _COMPOSED_SUMMARY.get(name, f"Elementwise ``np.{name}``.")
    difference = f"{_DIFFERENCE[name]}\n" if name in _DIFFERENCE else ""
    shared = F.UFUNC_NOTE if nin == 1 else f"{F.BINARY_NOTE}\n{F.UFUNC_NOTE}"
    f.__doc__ = f"{summary}\n\n{difference}{shared}"
    return f


_UNARY = {"signbit": F.signbit, "deg2rad": F.deg2rad, "rad2deg": F.rad2deg,
          "radians": F.radians, "degrees": F.degrees, "reciprocal": F.reciprocal,
          "cbrt": F.cbrt, "exp2": F.exp2, "fabs": F.fabs}
_BINARY = {"hypot": F.hypot, "copysign": F.copysign, "logaddexp": F.logaddexp,
           "fmax": F.fmax, "fmin": F.fmin, "heaviside": F.heaviside,
           "float_power": F.float_power, "left_shift": F.left_shift,
           "right_shift": F.right_shift, "fmod": F.fmod, "logaddexp2": F.logaddexp2,
           "ldexp": F.ldexp, "gcd": NT.gcd, "lcm": NT.lcm}
globals().update({n: ufunc(_ufunc(n, fn, 1), getattr(np, n)) for n, fn in _UNARY.items()})
globals().update({n: ufunc(_ufunc(n, fn, 2), getattr(np, n)) for n, fn in _BINARY.items()})
bitwise_left_shift, bitwise_right_shift = left_shift, right_shift   # noqa: F821


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None) -> Array:
    """``x`` with NaN replaced by ``nan`` and +-inf by ``posinf``/``neginf``
    (default: the dtype's largest/smallest finite values) (``np.nan_to_num``).

    Lazy; ``copy`` is accepted and means nothing (nothing is written in
    place).  Integer and bool arrays are returned unchanged."""
    return Array(F.nan_to_num(node_of(x), copy, nan, posinf, neginf))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> Array:
    """Whether ``a`` and ``b`` are equal within ``atol + rtol * |b|``,
    elementwise (``np.isclose``, NumPy 2's formula), as a lazy bool array.
    ``rtol`` and ``atol`` must be scalars."""
    return Array(F.isclose(node_of(a), node_of(b), *_tolerances(rtol, atol), equal_nan))


def _tolerances(rtol, atol):
    for name, v in (("rtol", rtol), ("atol", atol)):
        if isinstance(v, Array) or np.ndim(v):
            raise TypeError(f"isclose/allclose: {name} must be a scalar in polyarray, "
                            f"got {type(v).__name__}")
    return rtol, atol


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> Array:
    """Whether all of ``a`` and ``b`` are close (``np.allclose``), as a lazy
    0-d bool array, where NumPy returns a Python bool: ``bool()`` of it (an
    ``if``) evaluates it on the default target, and raises
    ``pa.LazyValueError`` if it depends on placeholders."""
    return Array(R.all(F.isclose(node_of(a), node_of(b), *_tolerances(rtol, atol),
                                 equal_nan)))


def _two_outputs(name, fn, summary):
    """A ufunc of one input and two outputs (``modf``, ``frexp``): a tuple of
    lazy arrays; ``out`` must be None (or two Nones)."""
    def f(x, /, out=None, *, where=True, dtype=None):
        if out is not None and tuple(out) != (None, None):
            raise NotImplementedError(f"{name}: out= is not supported; assign the returned "
                                      "arrays instead")
        if where is not True:
            raise NotImplementedError(f"{name}: where= is not supported")
        node = node_of(x)
        if dtype is not None:
            node = E.astype(C.as_node(node), dtype)
        return tuple(Array(n) for n in fn(node))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{summary}\n\n{F.UFUNC_NOTE}"
    return f


modf = ufunc(_two_outputs("modf", F.modf, "The fractional and integral parts of ``x``, "
                          "both with its sign, elementwise (``np.modf``)."), np.modf)
frexp = ufunc(_two_outputs("frexp", F.frexp, "Mantissa in [0.5, 1) and int32 exponent "
                           "with ``x = m * 2**e``, elementwise (``np.frexp``); exact."),
              np.frexp)


def sinc(x) -> Array:
    """``sin(pi x) / (pi x)``, 1 at 0 (``np.sinc``), lazily."""
    return Array(F.sinc(node_of(x)))


def array_equal(a1, a2, equal_nan=False) -> Array:
    """Whether ``a1`` and ``a2`` have the same shape and elements
    (``np.array_equal``; ``equal_nan``: NaN equals NaN), as a lazy 0-d bool
    where NumPy returns a Python bool (``bool()`` of it evaluates it)."""
    return Array(R.array_equal(node_of(a1), node_of(a2), equal_nan))


def array_equiv(a1, a2) -> Array:
    """Whether ``a1`` and ``a2`` broadcast to one shape with equal elements
    (``np.array_equiv``), as a lazy 0-d bool."""
    return Array(R.array_equiv(node_of(a1), node_of(a2)))


def select(condlist, choicelist, default=0) -> Array:
    """Elementwise, the choice of the first condition that holds, else
    ``default`` (``np.select``), lazily."""
    return Array(F.select([node_of(c) for c in condlist], [node_of(c) for c in choicelist],
                          node_of(default)))


def piecewise(x, condlist, funclist, *args, **kw) -> Array:
    """``funclist[i]`` where ``condlist[i]`` holds (later conditions win; one
    function more is for where none holds), a value or a function of ``x``
    (``np.piecewise``), lazily.

    Each function is called once on the whole ``x`` (NumPy calls it on the
    selected elements), so it must be elementwise; the values are cast to
    ``x``'s dtype."""
    xa = x if isinstance(x, Array) else Array(C.as_node(node_of(x)))
    if isinstance(condlist, (Array, np.ndarray)):     # NumPy's condlist[0]: a row if 2-D
        one = condlist.ndim == 0 or (condlist.ndim == 1 and xa.ndim != 0)
    else:
        one = np.isscalar(condlist) or (not isinstance(condlist[0], (list, np.ndarray, Array))
                                        and xa.ndim != 0)
    if one:
        condlist = [condlist]
    conds = [E.astype(C.as_node(node_of(c)), np.bool_) for c in condlist]
    if len(conds) == len(funclist) - 1:
        anyc = conds[0]
        for c in conds[1:]:
            anyc = E.apply_ufunc("logical_or", anyc, c)
        conds.append(E.apply_ufunc("logical_not", anyc))
    elif len(conds) != len(funclist):
        raise ValueError(f"with {len(conds)} condition(s), either {len(conds)} or "
                         f"{len(conds) + 1} functions are expected")
    out = C.zeros_like(xa.node)
    for cond, func in zip(conds, funclist):
        value = func(xa, *args, **kw) if callable(func) else func
        out = E.where(cond, SC.value_node(node_of(value), xa.dtype), out)
    return Array(out)


# -- complex parts of real arrays, and DLPack (the array API) -----------------

def _real_only(x, what):
    x = x if isinstance(x, Array) else Array(C.as_node(x))
    if x.dtype.kind == "c":     # pragma: no cover  (no complex dtype is accepted)
        raise TypeError(f"{what}: polyarray has no complex dtypes")
    return x



# -- complex parts ---------------------------------------------------------------

def conj(x) -> Array:
    """The complex conjugate, elementwise (``np.conj``; ``pa.conjugate`` is the
    same function).  Real input is returned in NumPy's loop dtype (bool
    gives int8, as NumPy's ``conjugate``)."""
    return Array(X.conj(node_of(x)))


conjugate = conj


def real(val) -> Array:
    """The real part (``np.real``): float32 for complex64, float64 for
    complex128; a real array is returned as it is."""
    return _same_or_new(val, X.real(node_of(val)))


def imag(val) -> Array:
    """The imaginary part (``np.imag``); zeros of a real array's dtype."""
    return Array(X.imag(node_of(val)))


def angle(z, deg=False) -> Array:
    """The argument of each complex value in radians, ``arctan2(imag, real)``
    (``np.angle``), in degrees if ``deg``."""
    return Array(X.angle(node_of(z), deg))


def iscomplex(x) -> Array:
    """True where the imaginary part is nonzero, elementwise (``np.iscomplex``;
    all False for a real array)."""
    return Array(X.iscomplex(node_of(x)))


def isreal(x) -> Array:
    """True where the imaginary part is zero, elementwise (``np.isreal``; all
    True for a real array)."""
    return Array(X.isreal(node_of(x)))


def iscomplexobj(x) -> bool:
    """Whether ``x`` has a complex dtype (``np.iscomplexobj``): its dtype
    alone, nothing is evaluated."""
    dtype = getattr(x, "dtype", None)
    return np.iscomplexobj(x) if dtype is None else np.dtype(dtype).kind == "c"


def isrealobj(x) -> bool:
    """Whether ``x`` has no complex dtype (``np.isrealobj``); nothing is
    evaluated."""
    return not iscomplexobj(x)
